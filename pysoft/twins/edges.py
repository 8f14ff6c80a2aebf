"""Twin of csrc/src/edges.c: body outline edges against colliders (2D).

The cull at the pass's start is taken for every edge at once (NumPy,
elementwise: the C kernel's operations in its order). The sweeps then visit
the near edges one after another in Python floats, in the C kernel's order,
so the results are bitwise equal.
"""

from __future__ import annotations

import math

import numpy as np

from pysoft._constants import EDGE_LEVER, EDGE_SLACK
from pysoft.twins._common import CAPSULE, F64, I32, MIN_LENGTH, ranges

CLOSED = 1  # body flag: the outline encloses an area

Feature = tuple[float, float, float]  # world point and radius


def _feature_counts(kind: I32, face_count: I32, cap_a: F64, cap_b: F64, k: int) -> list[int]:
    out = []
    for j in range(k):
        if kind[j] == CAPSULE:
            a, b = cap_a[j].tolist(), cap_b[j].tolist()
            out.append(1 if a[0] == b[0] and a[1] == b[1] else 2)
        else:
            out.append(int(face_count[j]) if face_count[j] >= 3 else 0)
    return out


def _features(j: int, count: int, kind: I32, center: F64, rotation: F64, face_start: I32,
              face_normal: F64, face_offset: F64, cap_a: F64, cap_b: F64,
              cap_radius: F64) -> list[Feature]:
    """The features of collider ``j`` in index order (corners between parallel faces left out)."""
    c0, c1 = center[j].tolist()
    (r00, r01), (r10, r11) = rotation[j].tolist()
    out = []
    for f in range(count):
        if kind[j] == CAPSULE:
            y0, y1 = (cap_b if f else cap_a)[j].tolist()
            R = float(cap_radius[j])
        else:
            s = int(face_start[j])
            f2 = f + 1 if f + 1 < count else 0
            n1, n2 = face_normal[s + f].tolist(), face_normal[s + f2].tolist()
            o1, o2 = float(face_offset[s + f]), float(face_offset[s + f2])
            det = n1[0] * n2[1] - n1[1] * n2[0]
            if not det > 0.0:
                continue
            y0 = (o1 * n2[1] - o2 * n1[1]) / det
            y1 = (n1[0] * o2 - n2[0] * o1) / det
            R = 0.0
        out.append((c0 + (r00 * y0 + r01 * y1), c1 + (r10 * y0 + r11 * y1), R))
    return out


class _Pass:
    """The kernel's state as Python floats; the rows it touched are written back at the end."""

    def __init__(self, pos: F64, vel: F64, contact_collider: I32, contact_normal: F64,
                 contact_impulse: F64, support: F64, stuck: I32, prev_pos: F64, radius: F64,
                 mass: F64, inv_mass: F64, center: F64, velocity: F64, angular_velocity: F64,
                 restitution: F64, friction: F64, keep: F64, bound: F64, n: int, k: int, h: float,
                 rest_speed: float) -> None:
        self.arrays = (pos, vel, contact_collider, contact_normal, contact_impulse, support)
        self.stuck = stuck  # written in place: only ever set to 1
        self.pos, self.vel = pos[:n].tolist(), vel[:n].tolist()
        self.collider = contact_collider[:n].tolist()
        self.normal, self.impulse = contact_normal[:n].tolist(), contact_impulse[:n].tolist()
        self.support, self.prev = support[:n].tolist(), prev_pos[:n].tolist()
        self.radius, self.mass, self.inv_mass = radius[:n].tolist(), mass[:n].tolist(), inv_mass[:n].tolist()
        self.center, self.velocity = center[:k].tolist(), velocity[:k].tolist()
        self.w = angular_velocity[:k, 2].tolist()
        self.restitution, self.friction = restitution[:k].tolist(), friction[:k].tolist()
        self.keep, self.bound = keep[:k].tolist(), bound[:k].tolist()
        self.h, self.rest_speed = h, rest_speed
        self.touched: set[int] = set()

    def write_back(self) -> None:
        pos, vel, collider, normal, impulse, support = self.arrays
        for i in sorted(self.touched):
            pos[i], vel[i] = self.pos[i], self.vel[i]
            collider[i], normal[i], impulse[i] = self.collider[i], self.normal[i], self.impulse[i]
            support[i] = self.support[i]

    def collider_reach(self, j: int) -> float:
        """Collider j's bound grown by twice its motion in the substep."""
        v, b = self.velocity[j], self.bound[j]
        return float(b + 2.0 * (self.h * ((abs(v[0]) + abs(v[1])) + abs(self.w[j]) * b)))

    def edge_reach(self, ia: int, ib: int) -> float:
        """Edge (ia, ib)'s reach about its midpoint (L1 lengths, as in C)."""
        xa, xb, pa, pb = self.pos[ia], self.pos[ib], self.prev[ia], self.prev[ib]
        length = abs(xb[0] - xa[0]) + abs(xb[1] - xa[1])
        moved = abs(xa[0] - pa[0]) + abs(xa[1] - pa[1])
        moved_b = abs(xb[0] - pb[0]) + abs(xb[1] - pb[1])
        if moved_b > moved:
            moved = moved_b
        ra, rb = self.radius[ia], self.radius[ib]
        return float(((0.5 + EDGE_SLACK) * length + (rb if rb > ra else ra)) + 2.0 * moved)

    def near(self, ia: int, ib: int, er: float, j: int) -> bool:
        """Do edge (ia, ib) (reach ``er``) and collider j come near?"""
        xa, xb, c = self.pos[ia], self.pos[ib], self.center[j]
        mx, my = 0.5 * (xa[0] + xb[0]) - c[0], 0.5 * (xa[1] + xb[1]) - c[1]
        lim = self.collider_reach(j) + er
        return not mx * mx + my * my > lim * lim

    def contact(self, ia: int, ib: int, j: int, qx: float, qy: float, R: float) -> int:
        """Feature (qx, qy) of radius R of collider j against edge (ia, ib): 1 on contact."""
        xa, xb = self.pos[ia], self.pos[ib]
        ex, ey = xb[0] - xa[0], xb[1] - xa[1]
        l2 = ex * ex + ey * ey
        length = math.sqrt(l2)
        if not length > MIN_LENGTH:
            return 0
        dx, dy = qx - xa[0], qy - xa[1]
        t = (dx * ex + dy * ey) / l2
        if not (t > 0.0 and t < 1.0):
            return 0
        nx, ny, ta = ey / length, -ex / length, 1.0 - t
        sd = dx * nx + dy * ny
        reach = R + (ta * self.radius[ia] + t * self.radius[ib])
        if not sd < reach:
            return 0
        c, vc, w = self.center[j], self.velocity[j], self.w[j]
        ux, uy = vc[0] - w * (qy - c[1]), vc[1] + w * (qx - c[0])
        pa, pb = self.prev[ia], self.prev[ib]
        h = self.h
        if sd < 0.0:  # inside: only if it came through this edge in this substep
            fx, fy = pb[0] - pa[0], pb[1] - pa[1]
            l0 = math.sqrt(fx * fx + fy * fy)
            if not l0 > MIN_LENGTH:
                return 0
            qx0, qy0 = qx - h * ux, qy - h * uy
            s0 = ((qx0 - pa[0]) * fy - (qy0 - pa[1]) * fx) / l0
            if not s0 >= -EDGE_SLACK * l0:
                return 0
        Nx, Ny = -nx, -ny
        wa, wb = ta * self.inv_mass[ia], t * self.inv_mass[ib]
        sa, sb = self.support[ia], self.support[ib]
        if sa[0] * Nx + sa[1] * Ny < 0.0:
            wa = 0.0
        if sb[0] * Nx + sb[1] * Ny < 0.0:
            wb = 0.0
        D = ta * wa + t * wb
        if not D > 0.0:
            return 0
        ka, kb, depth = wa / D, wb / D, reach - sd  # each end's move per the point's
        if ka > EDGE_LEVER:
            ka = EDGE_LEVER
        if kb > EDGE_LEVER:
            kb = EDGE_LEVER
        xa[0], xa[1] = xa[0] + Nx * (depth * ka), xa[1] + Ny * (depth * ka)
        xb[0], xb[1] = xb[0] + Nx * (depth * kb), xb[1] + Ny * (depth * kb)
        self.touched.update((ia, ib))
        for i, share in ((ia, ka), (ib, kb)):
            if share > 0.0:
                self.collider[i] = j
                self.normal[i] = [Nx, Ny]
                self.support[i] = [Nx, Ny]
        va, vb = self.vel[ia], self.vel[ib]
        vrx, vry = (ta * va[0] + t * vb[0]) - ux, (ta * va[1] + t * vb[1]) - uy
        vn = vrx * Nx + vry * Ny
        if not vn < 0.0:
            return 1
        vn_new = -self.restitution[j] * vn if -vn > self.rest_speed else 0.0
        dvn = vn_new - vn
        vtx, vty = vrx - vn * Nx, vry - vn * Ny
        vt_len, limit = math.sqrt(vtx * vtx + vty * vty), self.friction[j] * dvn
        if vt_len <= limit:  # static: undo the substep's slip of the edge point
            slx = ((ta * xa[0] + t * xb[0]) - (ta * pa[0] + t * pb[0])) - h * ux
            sly = ((ta * xa[1] + t * xb[1]) - (ta * pa[1] + t * pb[1])) - h * uy
            sn = slx * Nx + sly * Ny
            stx, sty = slx - sn * Nx, sly - sn * Ny
            xa[0], xa[1] = xa[0] - stx * ka, xa[1] - sty * ka
            xb[0], xb[1] = xb[0] - stx * kb, xb[1] - sty * kb
            if self.friction[j] > 0.0:  # static friction holds the ends along the surface
                for i, share in ((ia, ka), (ib, kb)):
                    if share > 0.0:
                        self.stuck[i] = 1
            scale = 0.0
        else:
            ratio = limit / vt_len if vt_len != 0.0 else float(np.divide(limit, vt_len))  # C's IEEE
            scale = (1.0 - ratio) * self.keep[j]
        dvx, dvy = (scale - 1.0) * vtx + dvn * Nx, (scale - 1.0) * vty + dvn * Ny
        va[0], va[1] = va[0] + dvx * ka, va[1] + dvy * ka
        vb[0], vb[1] = vb[0] + dvx * kb, vb[1] + dvy * kb
        if ka > 0.0:
            self.impulse[ia] = self.impulse[ia] + self.mass[ia] * (dvn * ka)
        if kb > 0.0:
            self.impulse[ib] = self.impulse[ib] + self.mass[ib] * (dvn * kb)
        return 1


def _edges(outline: I32, outline_start: I32, outline_count: I32, body_flags: I32,
           nb: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every edge of the closed bodies in the kernel's order: its outline entry, body and ends."""
    count = outline_count[:nb]
    count = np.where(((body_flags[:nb] & CLOSED) != 0) & (count >= 3), count, 0).astype(np.int32)
    owner, flat = ranges(outline_start, count, nb)
    first = outline_start[:nb].astype(np.intp)[owner]
    nxt = np.where(flat == first + count[owner] - 1, first, flat + 1)
    return flat, owner, outline[flat].astype(np.intp), outline[nxt].astype(np.intp)


def _near_at_start(pos: F64, prev_pos: F64, radius: F64, owner: np.ndarray, ia: np.ndarray,
                   ib: np.ndarray, counts: list[int], center: F64, velocity: F64,
                   angular_velocity: F64, bound: F64, h: float) -> np.ndarray:
    """The cull for every edge at once (``owner``: each edge's body, edges grouped by body):
    each body's box of its outline particles grown by its edges' largest reach against each
    collider's reach, then the edges of a near body against that collider."""
    xa, xb, pa, pb = pos[ia], pos[ib], prev_pos[ia], prev_pos[ib]
    length = np.abs(xb[:, 0] - xa[:, 0]) + np.abs(xb[:, 1] - xa[:, 1])
    moved = np.abs(xa[:, 0] - pa[:, 0]) + np.abs(xa[:, 1] - pa[:, 1])
    moved_b = np.abs(xb[:, 0] - pb[:, 0]) + np.abs(xb[:, 1] - pb[:, 1])
    moved = np.where(moved_b > moved, moved_b, moved)
    ra, rb = radius[ia], radius[ib]
    reach = ((0.5 + EDGE_SLACK) * length + np.where(rb > ra, rb, ra)) + 2.0 * moved
    mid_x, mid_y = 0.5 * (xa[:, 0] + xb[:, 0]), 0.5 * (xa[:, 1] + xb[:, 1])
    near = np.zeros(len(ia), dtype=bool)
    if not len(ia):
        return near
    # each body's box and largest reach, NaN left out (C's "if (x < lo) lo = x" from infinity)
    first = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    box = [np.fmin.reduceat(xa[:, 0], first), np.fmin.reduceat(xa[:, 1], first),
           np.fmax.reduceat(xa[:, 0], first), np.fmax.reduceat(xa[:, 1], first)]
    for i, empty in enumerate((np.inf, np.inf, -np.inf, -np.inf)):
        box[i] = np.where(np.isnan(box[i]), empty, box[i])
    lx, ly, hx, hy = box
    emax = np.fmax.reduceat(np.fmax(reach, 0.0), first)
    group = np.repeat(np.arange(len(first)), np.diff(np.r_[first, len(ia)]))
    for j, count in enumerate(counts):
        if not count:
            continue
        v0, v1 = velocity[j].tolist()
        c0, c1 = center[j].tolist()
        b = float(bound[j])
        cr = b + 2.0 * (h * ((abs(v0) + abs(v1)) + abs(float(angular_velocity[j, 2])) * b))
        dx = np.where(c0 < lx, lx - c0, np.where(c0 > hx, c0 - hx, 0.0))
        dy = np.where(c1 < ly, ly - c1, np.where(c1 > hy, c1 - hy, 0.0))
        lim = cr + emax
        body_near = ~(dx * dx + dy * dy > lim * lim)
        mx, my = mid_x - c0, mid_y - c1
        lim_e = cr + reach
        near |= body_near[group] & ~(mx * mx + my * my > lim_e * lim_e)
    return near


@np.errstate(invalid="ignore", over="ignore", divide="ignore")  # a blown-up body: NaN and inf as in C
def edge_collide(
    pos: F64, vel: F64, contact_collider: I32, contact_normal: F64, contact_impulse: F64,
    support: F64, stuck: I32, edge_near: I32, prev_pos: F64, radius: F64, mass: F64,
    inv_mass: F64, outline: I32, outline_start: I32, outline_count: I32, body_flags: I32, kind: I32,
    center: F64, rotation: F64, velocity: F64, angular_velocity: F64, restitution: F64,
    friction: F64, keep: F64, face_start: I32, face_count: I32, face_normal: F64,
    face_offset: F64, cap_a: F64, cap_b: F64, cap_radius: F64, bound: F64, n: int, nb: int,
    k: int, nfaces: int, dim: int, iterations: int, reverse: int, h: float, rest_speed: float,
) -> int:
    """Colliders' corners and capsule ends kept out of closed bodies' outline edges (2D;
    nothing in 3D): the cull at the pass's start, then ``iterations`` sweeps over the edges,
    backward if ``reverse``."""
    if dim != 2:
        return 0
    counts = _feature_counts(kind, face_count, cap_a, cap_b, k)
    flat, owner, ia, ib = _edges(outline, outline_start, outline_count, body_flags, nb)
    near = _near_at_start(pos, prev_pos, radius, owner, ia, ib, counts, center, velocity,
                          angular_velocity, bound, h)
    edge_near[flat] = near
    todo = list(zip(ia[near].tolist(), ib[near].tolist(), strict=True))
    if reverse:
        todo.reverse()
    if not todo:
        return 0
    features = [_features(j, counts[j], kind, center, rotation, face_start, face_normal, face_offset,
                          cap_a, cap_b, cap_radius) for j in range(k)]
    s = _Pass(pos, vel, contact_collider, contact_normal, contact_impulse, support, stuck, prev_pos,
              radius, mass, inv_mass, center, velocity, angular_velocity, restitution, friction, keep, bound,
              n, k, h, rest_speed)
    contacts = 0
    for _ in range(iterations):
        found = 0
        for a, b in todo:
            er = s.edge_reach(a, b)
            for j in range(k):
                if not counts[j] or not s.near(a, b, er, j):
                    continue
                for qx, qy, R in features[j]:
                    found += s.contact(a, b, j, qx, qy, R)
        contacts += found
        if not found:
            break
    s.write_back()
    return contacts
