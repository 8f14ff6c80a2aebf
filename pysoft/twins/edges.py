"""Twin of csrc/src/edges.c: body outline edges (2D) and surface triangles (3D) against
colliders.

The cull at the pass's start is taken for every edge at once (NumPy,
elementwise: the C kernel's operations in its order). The sweeps then visit
the near edges one after another in Python floats, in the C kernel's order,
so the results are bitwise equal.
"""

from __future__ import annotations

import math
from typing import Any

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
    """Colliders' corners and capsule ends kept out of closed bodies' outline edges (2D) or
    surface triangles (3D): the cull at the pass's start, then ``iterations`` sweeps over the
    edges or triangles, backward if ``reverse``."""
    if dim == 3:
        return _edge_collide_3d(pos, vel, contact_collider, contact_normal, contact_impulse, support, stuck,
                                edge_near, prev_pos, radius, mass, inv_mass, outline, outline_start,
                                outline_count, body_flags, kind, center, rotation, velocity,
                                angular_velocity, restitution, friction, keep, face_start, face_count,
                                face_normal, face_offset, cap_a, cap_b, cap_radius, bound, n, nb, k,
                                iterations, reverse, h, rest_speed)
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


# -- 3D: closed surfaces' triangles against colliders' features ------------------------------

CORNER_DET = 1e-9  # edges.c's PS_CORNER_DET, PS_CORNER_TOL and PS_CORNER_FACES
CORNER_TOL = 1e-9
CORNER_FACES = 64
_REACH3 = 1.0 + 2.0 * EDGE_SLACK


def _cross(a: list[float], b: list[float]) -> list[float]:
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def _dot(a: list[float], b: list[float]) -> float:
    return (a[0] * b[0] + a[1] * b[1]) + a[2] * b[2]


class _Pass3(_Pass):
    """The 3D kernel's state as Python floats (see edges.c's essay, its 3D part)."""

    def __init__(self, *args: Any, kind: I32, rotation: F64, angular_velocity: F64, face_start: I32,
                 face_count: I32, face_normal: F64, face_offset: F64, cap_a: F64, cap_b: F64,
                 cap_radius: F64, k: int) -> None:
        super().__init__(*args)
        self.kind, self.rotation = kind[:k].tolist(), rotation[:k].reshape(k, 9).tolist()
        self.w3 = angular_velocity[:k].tolist()
        self.face_start, self.face_count = face_start[:k].tolist(), face_count[:k].tolist()
        self.face_normal, self.face_offset = face_normal, face_offset
        self.cap_a, self.cap_b = cap_a[:k].tolist(), cap_b[:k].tolist()
        self.cap_radius = cap_radius[:k].tolist()

    def motion(self, j: int) -> float:
        """Twice collider j's motion in the substep (L1 speeds)."""
        v, w, b = self.velocity[j], self.w3[j], self.bound[j]
        speed = ((abs(v[0]) + abs(v[1])) + abs(v[2])) + ((abs(w[0]) + abs(w[1])) + abs(w[2])) * b
        return float(2.0 * (self.h * speed))

    def featured(self, j: int) -> bool:
        if self.kind[j] == CAPSULE:
            return True
        return bool(self.face_count[j] >= 4 and self.bound[j] < math.inf)

    def tri_reach(self, ia: int, ib: int, ic: int) -> tuple[list[float], float]:
        """Triangle (ia, ib, ic)'s centroid and its reach about it."""
        xs = (self.pos[ia], self.pos[ib], self.pos[ic])
        ps = (self.prev[ia], self.prev[ib], self.prev[ic])
        m = [((xs[0][c] + xs[1][c]) + xs[2][c]) / 3.0 for c in range(3)]
        dmax = moved = rmax = 0.0
        for x, p, i in zip(xs, ps, (ia, ib, ic), strict=True):
            d = (abs(x[0] - m[0]) + abs(x[1] - m[1])) + abs(x[2] - m[2])
            mv = (abs(x[0] - p[0]) + abs(x[1] - p[1])) + abs(x[2] - p[2])
            r = self.radius[i]
            if d > dmax:
                dmax = d
            if mv > moved:
                moved = mv
            if r > rmax:
                rmax = r
        return m, float((_REACH3 * dmax + rmax) + 2.0 * moved)

    def near3(self, m: list[float], er: float, j: int, cr: float) -> bool:
        c = self.center[j]
        dx, dy, dz = m[0] - c[0], m[1] - c[1], m[2] - c[2]
        lim = cr + er
        return not (dx * dx + dy * dy) + dz * dz > lim * lim

    def world_point(self, j: int, y: list[float]) -> list[float]:
        c, R = self.center[j], self.rotation[j]
        return [c[a] + ((R[3 * a] * y[0] + R[3 * a + 1] * y[1]) + R[3 * a + 2] * y[2]) for a in range(3)]

    def tri_collider(self, ia: int, ib: int, ic: int, m: list[float], er: float, j: int) -> int:
        """Collider j's features against the triangle, in the kernel's order."""
        if self.kind[j] == CAPSULE:
            a, b, R = self.cap_a[j], self.cap_b[j], self.cap_radius[j]
            found = self.contact3(ia, ib, ic, j, self.world_point(j, a), R)
            if not (a[0] == b[0] and a[1] == b[1] and a[2] == b[2]):
                found += self.contact3(ia, ib, ic, j, self.world_point(j, b), R)
            return found
        nf, s0 = self.face_count[j], self.face_start[j]
        fn = self.face_normal[s0:s0 + nf].tolist()
        fo = self.face_offset[s0:s0 + nf].tolist()
        c, R = self.center[j], self.rotation[j]
        dm = [m[0] - c[0], m[1] - c[1], m[2] - c[2]]
        ml = [(R[a] * dm[0] + R[3 + a] * dm[1]) + R[6 + a] * dm[2] for a in range(3)]
        lim, tol = er + self.motion(j), CORNER_TOL * self.bound[j]
        near = [f >= CORNER_FACES or not abs(_dot(fn[f], ml) - fo[f]) > lim for f in range(nf)]
        found = 0
        for f in range(nf):
            if not near[f]:
                continue
            for g in range(f + 1, nf):
                if not near[g]:
                    continue
                for hh in range(g + 1, nf):
                    if not near[hh]:
                        continue
                    n1, n2, n3 = fn[f], fn[g], fn[hh]
                    c23, c31, c12 = _cross(n2, n3), _cross(n3, n1), _cross(n1, n2)
                    det = _dot(n1, c23)
                    if not abs(det) > CORNER_DET:
                        continue
                    y = [((fo[f] * c23[a] + fo[g] * c31[a]) + fo[hh] * c12[a]) / det for a in range(3)]
                    corner = True
                    for e in range(nf):
                        if e in (f, g, hh):
                            continue
                        out = _dot(fn[e], y) - fo[e]
                        if not out <= tol or (e < hh and out >= -tol):
                            corner = False
                            break
                    if corner:
                        found += self.contact3(ia, ib, ic, j, self.world_point(j, y), 0.0)
        return found

    def contact3(self, ia: int, ib: int, ic: int, j: int, q: list[float], R: float) -> int:
        """Feature q of radius R of collider j against triangle (ia, ib, ic): 1 on contact."""
        idx = (ia, ib, ic)
        x = [self.pos[i] for i in idx]
        v = [self.vel[i] for i in idx]
        p = [self.prev[i] for i in idx]
        e1 = [x[1][c] - x[0][c] for c in range(3)]
        e2 = [x[2][c] - x[0][c] for c in range(3)]
        d = [q[c] - x[0][c] for c in range(3)]
        cr = _cross(e1, e2)
        length = math.sqrt(_dot(cr, cr))
        if not length > MIN_LENGTH * MIN_LENGTH:
            return 0
        n = [cr[c] / length for c in range(3)]
        t1 = _dot(_cross(d, e2), n) / length
        t2 = _dot(_cross(e1, d), n) / length
        t0 = (1.0 - t1) - t2
        if not (t0 > 0.0 and t1 > 0.0 and t2 > 0.0):
            return 0
        t = (t0, t1, t2)
        sd = _dot(d, n)
        reach = R + ((t0 * self.radius[ia] + t1 * self.radius[ib]) + t2 * self.radius[ic])
        if not sd < reach:
            return 0
        cc, vc = self.center[j], self.velocity[j]
        wu = _cross(self.w3[j], [q[0] - cc[0], q[1] - cc[1], q[2] - cc[2]])
        u = [vc[c] + wu[c] for c in range(3)]
        h = self.h
        if sd < 0.0:  # inside: only if it came through this triangle in this substep
            f1 = [p[1][c] - p[0][c] for c in range(3)]
            f2 = [p[2][c] - p[0][c] for c in range(3)]
            r0 = [(q[c] - h * u[c]) - p[0][c] for c in range(3)]
            c0 = _cross(f1, f2)
            a0 = math.sqrt(_dot(c0, c0))
            if not a0 > MIN_LENGTH * MIN_LENGTH:
                return 0
            if not _dot(r0, c0) / a0 >= -EDGE_SLACK * math.sqrt(a0):
                return 0
        N = [-n[0], -n[1], -n[2]]
        wk = [t[k] * self.inv_mass[i] for k, i in enumerate(idx)]
        for k, i in enumerate(idx):
            if _dot(self.support[i], N) < 0.0:  # resting on a collider
                wk[k] = 0.0
        D = (t0 * wk[0] + t1 * wk[1]) + t2 * wk[2]
        if not D > 0.0:
            return 0
        depth = reach - sd
        kk = [min_cap(wk[k] / D) for k in range(3)]
        for k in range(3):
            for c in range(3):
                x[k][c] = x[k][c] + N[c] * (depth * kk[k])
        self.touched.update(idx)
        for k, i in enumerate(idx):
            if kk[k] > 0.0:
                self.collider[i] = j
                self.normal[i] = list(N)
                self.support[i] = list(N)
        vr = [((t0 * v[0][c] + t1 * v[1][c]) + t2 * v[2][c]) - u[c] for c in range(3)]
        vn = _dot(vr, N)
        if not vn < 0.0:
            return 1
        vn_new = -self.restitution[j] * vn if -vn > self.rest_speed else 0.0
        dvn = vn_new - vn
        vt = [vr[c] - vn * N[c] for c in range(3)]
        vt_len, limit = math.sqrt(_dot(vt, vt)), self.friction[j] * dvn
        if vt_len <= limit:  # static: undo the substep's slip of the triangle's point
            sl = [(((t0 * x[0][c] + t1 * x[1][c]) + t2 * x[2][c])
                   - ((t0 * p[0][c] + t1 * p[1][c]) + t2 * p[2][c])) - h * u[c] for c in range(3)]
            sn = _dot(sl, N)
            for c in range(3):
                st = sl[c] - sn * N[c]
                for k in range(3):
                    x[k][c] = x[k][c] - st * kk[k]
            if self.friction[j] > 0.0:
                for k, i in enumerate(idx):
                    if kk[k] > 0.0:
                        self.stuck[i] = 1
            scale = 0.0
        else:
            ratio = limit / vt_len if vt_len != 0.0 else float(np.divide(limit, vt_len))  # C's IEEE
            scale = (1.0 - ratio) * self.keep[j]
        for c in range(3):
            dv = (scale - 1.0) * vt[c] + dvn * N[c]
            for k in range(3):
                v[k][c] = v[k][c] + dv * kk[k]
        for k, i in enumerate(idx):
            if kk[k] > 0.0:
                self.impulse[i] = self.impulse[i] + self.mass[i] * (dvn * kk[k])
        return 1


def min_cap(share: float) -> float:
    """A corner's move per its point's, capped at EDGE_LEVER (``if (k > cap) k = cap``)."""
    return EDGE_LEVER if share > EDGE_LEVER else share


def _triangles(outline: I32, outline_start: I32, outline_count: I32, body_flags: I32,
               nb: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every triangle of the closed surfaces in the kernel's order: its first outline entry,
    its body and its corners (T, 3)."""
    count = outline_count[:nb] // 3
    count = np.where((body_flags[:nb] & CLOSED) != 0, count, 0).astype(np.int32)
    owner, local = ranges(np.zeros(nb, dtype=np.int32), count, nb)
    first = outline_start[:nb].astype(np.intp)[owner] + 3 * local
    corners = np.stack([outline[first], outline[first + 1], outline[first + 2]], axis=1).astype(np.intp)
    return first, owner, corners


def _corner_faces(j: int, m: F64, lim: F64, center: F64, rotation: F64, face_start: I32,
                  face_count: I32, face_normal: F64, face_offset: F64) -> np.ndarray:
    """How many of polytope j's faces have their plane within ``lim`` of each point ``m``
    (rows; a NaN counts as near), as edges.c's corner_faces."""
    c, R = center[j].tolist(), rotation[j].reshape(9).tolist()
    dm = [m[:, 0] - c[0], m[:, 1] - c[1], m[:, 2] - c[2]]
    ml = [(R[a] * dm[0] + R[3 + a] * dm[1]) + R[6 + a] * dm[2] for a in range(3)]
    count = np.zeros(len(m), dtype=np.intp)
    s0 = int(face_start[j])
    for f in range(int(face_count[j])):
        n, o = face_normal[s0 + f].tolist(), float(face_offset[s0 + f])
        d = ((n[0] * ml[0] + n[1] * ml[1]) + n[2] * ml[2]) - o
        count += ~(np.abs(d) > lim)
    return count


def _near_at_start3(pos: F64, prev_pos: F64, radius: F64, owner: np.ndarray, corners: np.ndarray,
                    entries: np.ndarray, entry_owner: np.ndarray, featured: list[bool], kind: I32,
                    center: F64, rotation: F64, velocity: F64, angular_velocity: F64, face_start: I32,
                    face_count: I32, face_normal: F64, face_offset: F64, bound: F64,
                    h: float) -> np.ndarray:
    """The 3D cull for every triangle at once (the kernel's operations, elementwise)."""
    near = np.zeros(len(corners), dtype=bool)
    if not len(corners):
        return near
    x = [pos[corners[:, k]] for k in range(3)]
    p = [prev_pos[corners[:, k]] for k in range(3)]
    m = ((x[0] + x[1]) + x[2]) / 3.0
    dmax = moved = rmax = np.zeros(len(corners))
    for k in range(3):
        d = (np.abs(x[k][:, 0] - m[:, 0]) + np.abs(x[k][:, 1] - m[:, 1])) + np.abs(x[k][:, 2] - m[:, 2])
        step = np.abs(x[k] - p[k])
        mv = (step[:, 0] + step[:, 1]) + step[:, 2]
        dmax = np.where(d > dmax, d, dmax)
        moved = np.where(mv > moved, mv, moved)
        r = radius[corners[:, k]]
        rmax = np.where(r > rmax, r, rmax)
    reach = (_REACH3 * dmax + rmax) + 2.0 * moved
    first = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    group = np.repeat(np.arange(len(first)), np.diff(np.r_[first, len(corners)]))
    # each body's box of its surface particles (its outline entries), largest move and radius
    every, before = pos[entries], prev_pos[entries]
    starts = np.flatnonzero(np.r_[True, entry_owner[1:] != entry_owner[:-1]])
    lo = [np.fmin.reduceat(every[:, c], starts) for c in range(3)]
    hi = [np.fmax.reduceat(every[:, c], starts) for c in range(3)]
    lo = [np.where(np.isnan(a), np.inf, a) for a in lo]
    hi = [np.where(np.isnan(a), -np.inf, a) for a in hi]
    step = np.abs(every - before)
    body_moved = np.fmax.reduceat(np.fmax((step[:, 0] + step[:, 1]) + step[:, 2], 0.0), starts)
    body_r = np.fmax.reduceat(np.fmax(radius[entries], 0.0), starts)
    ext = ((hi[0] - lo[0]) + (hi[1] - lo[1])) + (hi[2] - lo[2])
    emax = (_REACH3 * ext + body_r) + 2.0 * body_moved
    box_centre = np.stack([0.5 * (lo[c] + hi[c]) for c in range(3)], axis=1)
    for j, has in enumerate(featured):
        if not has:
            continue
        v, w, b = velocity[j].tolist(), angular_velocity[j].tolist(), float(bound[j])
        speed = ((abs(v[0]) + abs(v[1])) + abs(v[2])) + ((abs(w[0]) + abs(w[1])) + abs(w[2])) * b
        motion = 2.0 * (h * speed)
        cr = b + motion
        c = center[j].tolist()
        gaps = [np.where(c[a] < lo[a], lo[a] - c[a], np.where(c[a] > hi[a], c[a] - hi[a], 0.0))
                for a in range(3)]
        lim = cr + emax
        body_near = ~((gaps[0] * gaps[0] + gaps[1] * gaps[1]) + gaps[2] * gaps[2] > lim * lim)
        polytope = kind[j] != CAPSULE
        faces = (face_start, face_count, face_normal, face_offset)
        if polytope:
            body_near &= _corner_faces(j, box_centre, (0.5 * ext + emax) + motion, center, rotation,
                                       *faces) >= 3
        dx, dy, dz = m[:, 0] - c[0], m[:, 1] - c[1], m[:, 2] - c[2]
        lim_t = cr + reach
        here = body_near[group] & ~((dx * dx + dy * dy) + dz * dz > lim_t * lim_t)
        if polytope and here.any():
            which = np.flatnonzero(here)
            here[which] = _corner_faces(j, m[which], reach[which] + motion, center, rotation, *faces) >= 3
        near |= here
    return near


def _edge_collide_3d(pos: F64, vel: F64, contact_collider: I32, contact_normal: F64,
                     contact_impulse: F64, support: F64, stuck: I32, edge_near: I32, prev_pos: F64,
                     radius: F64, mass: F64, inv_mass: F64, outline: I32, outline_start: I32,
                     outline_count: I32, body_flags: I32, kind: I32, center: F64, rotation: F64,
                     velocity: F64, angular_velocity: F64, restitution: F64, friction: F64, keep: F64,
                     face_start: I32, face_count: I32, face_normal: F64, face_offset: F64, cap_a: F64,
                     cap_b: F64, cap_radius: F64, bound: F64, n: int, nb: int, k: int,
                     iterations: int, reverse: int, h: float, rest_speed: float) -> int:
    featured = [bool(kind[j] == CAPSULE or (face_count[j] >= 4 and bound[j] < math.inf)) for j in range(k)]
    first, owner, corners = _triangles(outline, outline_start, outline_count, body_flags, nb)
    count = np.where((body_flags[:nb] & CLOSED) != 0, outline_count[:nb] // 3, 0)
    entry_owner, whole = ranges(outline_start, 3 * count.astype(np.int32), nb)
    edge_near[whole] = 0
    near = _near_at_start3(pos, prev_pos, radius, owner, corners, outline[whole].astype(np.intp),
                           entry_owner, featured, kind, center, rotation, velocity, angular_velocity,
                           face_start, face_count, face_normal, face_offset, bound, h)
    for off in range(3):
        edge_near[first + off] = near
    todo = [tuple(c) for c in corners[near].tolist()]
    if reverse:
        todo.reverse()
    if not todo:
        return 0
    s = _Pass3(pos, vel, contact_collider, contact_normal, contact_impulse, support, stuck, prev_pos,
               radius, mass, inv_mass, center, velocity, angular_velocity, restitution, friction, keep,
               bound, n, k, h, rest_speed, kind=kind, rotation=rotation,
               angular_velocity=angular_velocity, face_start=face_start, face_count=face_count,
               face_normal=face_normal, face_offset=face_offset, cap_a=cap_a, cap_b=cap_b,
               cap_radius=cap_radius, k=k)
    contacts = 0
    for _ in range(iterations):
        found = 0
        for a, b, c in todo:
            m, er = s.tri_reach(a, b, c)
            for j in range(k):
                if not featured[j] or not s.near3(m, er, j, s.bound[j] + s.motion(j)):
                    continue
                found += s.tri_collider(a, b, c, m, er, j)
        contacts += found
        if not found:
            break
    s.write_back()
    return contacts
