"""Twin of csrc/src/contacts.c: bodies against bodies (2D).

The candidates are computed from their definitions (particle ``i`` inside
body ``B``'s grown box; particle pairs within twice their radii, both at the
pass's start), without the C kernel's spatial hashes, which change only its
speed. The contacts are then resolved one after another, in the C kernel's
order, in Python floats: every operation is the C kernel's, in its order,
so the results are bitwise equal.
"""

from __future__ import annotations

import math

import numpy as np

from pysoft.twins._common import CLOSED, F64, I32, MIN_LENGTH, SELF, SHARED, in_grid
from pysoft.twins._common import cell_of as _cell
from pysoft.twins.contacts3d import body_contacts_3d

ENTRY_SLACK = 0.01  # PS_ENTRY_SLACK: a crossing this far past an edge's end still counts
MAX_PUSHOUT = 1.0  # PS_MAX_PUSHOUT (m/s): the speed at which an overlap met at rest is undone


class _Scene:
    """The kernel's arrays as Python lists (positions and velocities written back at the end)."""

    def __init__(self, pos: F64, vel: F64, prev_pos: F64, support: F64, radius: F64, inv_mass: F64,
                 owner: I32, category: I32, mask: I32, friction: F64, restitution: F64,
                 rest_pos: F64, outline: I32, outline_start: I32, outline_count: I32, member: I32,
                 member_start: I32, member_count: I32, flags: I32, body_category: I32,
                 body_mask: I32, body_friction: F64, body_restitution: F64, n: int, nb: int,
                 rest_speed: float) -> None:
        self.pos = pos[:n].tolist()
        self.vel = vel[:n].tolist()
        self.prev = prev_pos[:n].tolist()
        self.support = support[:n].tolist()
        self.radius, self.inv_mass = radius[:n].tolist(), inv_mass[:n].tolist()
        self.owner = owner[:n].tolist()
        self.category = [c & 0xFFFFFFFF for c in category[:n].tolist()]
        self.mask = [m & 0xFFFFFFFF for m in mask[:n].tolist()]
        self.friction, self.restitution = friction[:n].tolist(), restitution[:n].tolist()
        self.rest_pos = rest_pos[:n].tolist()
        self.outlines = [outline[s : s + c].tolist() for s, c in
                         zip(outline_start[:nb].tolist(), outline_count[:nb].tolist(), strict=True)]
        self.members = [member[s : s + c].tolist() for s, c in
                        zip(member_start[:nb].tolist(), member_count[:nb].tolist(), strict=True)]
        self.flags = flags[:nb].tolist()
        self.body_category = [c & 0xFFFFFFFF for c in body_category[:nb].tolist()]
        self.body_mask = [m & 0xFFFFFFFF for m in body_mask[:nb].tolist()]
        self.body_friction = body_friction[:nb].tolist()
        self.body_restitution = body_restitution[:nb].tolist()
        self.rest_speed = rest_speed
        self.h = 0.0
        self.report: dict[int, tuple[int, float, float, float, float]] = {}
        self.impulse: list[float] = []

    def cat(self, i: int) -> int:
        o = self.owner[i]
        return int(self.body_category[o] if o >= 0 else self.category[i])

    def msk(self, i: int) -> int:
        o = self.owner[i]
        return int(self.body_mask[o] if o >= 0 else self.mask[i])

    def mu(self, i: int) -> float:
        o = self.owner[i]
        return float(self.body_friction[o] if o >= 0 else self.friction[i])

    def e(self, i: int) -> float:
        o = self.owner[i]
        return float(self.body_restitution[o] if o >= 0 else self.restitution[i])


def _resolve(s: _Scene, i: int, a: int, b: int, t: float, nx: float, ny: float, sep: float,
             mu: float, e: float, report: int, qx: float, qy: float) -> int:
    x, xa, xb = s.pos[i], s.pos[a], s.pos[b]
    ta = 1.0 - t
    C = ((x[0] - (ta * xa[0] + t * xb[0])) * nx + (x[1] - (ta * xa[1] + t * xb[1])) * ny) - sep
    if not C < 0.0:
        return 0
    wi, wa, wb = s.inv_mass[i], s.inv_mass[a], s.inv_mass[b]
    si, sa, sb = s.support[i], s.support[a], s.support[b]  # not pushed into a collider
    if si[0] * nx + si[1] * ny < 0.0:
        wi = 0.0
    if sa[0] * nx + sa[1] * ny > 0.0:
        wa = 0.0
    if sb[0] * nx + sb[1] * ny > 0.0:
        wb = 0.0
    W = (wi + ta * ta * wa) + t * t * wb
    if not W > 0.0:
        return 0
    inv_w = 1.0 / W
    lam = -C * inv_w
    x[0] = x[0] + wi * lam * nx
    x[1] = x[1] + wi * lam * ny
    xa[0] = xa[0] - ta * wa * lam * nx
    xa[1] = xa[1] - ta * wa * lam * ny
    xb[0] = xb[0] - t * wb * lam * nx
    xb[1] = xb[1] - t * wb * lam * ny
    v, va, vb = s.vel[i], s.vel[a], s.vel[b]
    vrx, vry = v[0] - (ta * va[0] + t * vb[0]), v[1] - (ta * va[1] + t * vb[1])
    vn = vrx * nx + vry * ny
    follow, cap = -C * (1.0 / s.h), (-vn if vn < 0.0 else 0.0) + MAX_PUSHOUT  # velocities follow the push
    if follow > cap:
        follow = cap
    target = (-e * vn if -vn > s.rest_speed else 0.0) if vn < 0.0 else vn
    dvn = (target if target > vn + follow else vn + follow) - vn
    P, limit = dvn * inv_w, mu * dvn
    vtx, vty = vrx - vn * nx, vry - vn * ny
    p, pa, pb = s.prev[i], s.prev[a], s.prev[b]  # the substep's relative tangential displacement
    sx = (x[0] - p[0]) - (ta * (xa[0] - pa[0]) + t * (xb[0] - pb[0]))
    sy = (x[1] - p[1]) - (ta * (xa[1] - pa[1]) + t * (xb[1] - pb[1]))
    sn = sx * nx + sy * ny
    stx, sty = sx - sn * nx, sy - sn * ny
    slip = limit * s.h  # the most static friction holds this substep
    if stx * stx + sty * sty <= slip * slip:  # static: undo it, stop the sliding
        stx, sty = stx * inv_w, sty * inv_w
        x[0] = x[0] - wi * stx
        x[1] = x[1] - wi * sty
        xa[0] = xa[0] + ta * wa * stx
        xa[1] = xa[1] + ta * wa * sty
        xb[0] = xb[0] + t * wb * stx
        xb[1] = xb[1] + t * wb * sty
        ptx, pty = -vtx * inv_w, -vty * inv_w
    elif (vt_len := math.sqrt(vtx * vtx + vty * vty)) > limit:
        k = limit / (vt_len * W)
        ptx, pty = -vtx * k, -vty * k
    else:
        ptx, pty = -vtx * inv_w, -vty * inv_w
    jx, jy = P * nx + ptx, P * ny + pty
    v[0] = v[0] + wi * jx
    v[1] = v[1] + wi * jy
    va[0] = va[0] - ta * wa * jx
    va[1] = va[1] - ta * wa * jy
    vb[0] = vb[0] - t * wb * jx
    vb[1] = vb[1] - t * wb * jy
    s.report[i] = (report, qx, qy, nx, ny)
    s.impulse[i] = s.impulse[i] + P
    return 1


def _sqrt(x: float) -> float:
    """C's sqrt: NaN for a negative argument (math.sqrt raises)."""
    return math.sqrt(x) if x >= 0.0 else math.nan


def _cross(ax: float, ay: float, bx: float, by: float) -> float:
    return ax * by - ay * bx


def _near_at_rest(s: _Scene, i: int, a: int, b: int) -> bool:
    """Edge (a, b) of i's own body is near i in the rest shape: self-collision skips it."""
    if a == i or b == i:
        return True
    q, ra, rb = s.rest_pos[i], s.rest_pos[a], s.rest_pos[b]
    ex, ey = rb[0] - ra[0], rb[1] - ra[1]
    l2, t = ex * ex + ey * ey, 0.0
    if l2 > 0.0:
        t = ((q[0] - ra[0]) * ex + (q[1] - ra[1]) * ey) / l2
        t = 0.0 if t < 0.0 else (1.0 if t > 1.0 else t)
    dx, dy = q[0] - (ra[0] + t * ex), q[1] - (ra[1] + t * ey)
    return bool(dx * dx + dy * dy < l2)


def _edge_contact(s: _Scene, i: int, B: int, rB: float) -> int:
    o_i = s.owner[i]
    own = o_i == B or (o_i == SHARED and i in s.members[B])
    flags, o = s.flags[B], s.outlines[B]
    m = len(o)
    if own:
        if flags & (SELF | CLOSED) != SELF | CLOSED or o_i != B or i not in o:
            return 0  # an open body (a rope) self-collides by its particles alone
    else:
        if not flags & CLOSED:
            return 0
        if not (s.cat(i) & s.body_mask[B]) or not (s.body_category[B] & s.msk(i)):
            return 0
    pos, prev = s.pos, s.prev
    x, y = pos[i]
    px, py = prev[i]
    inside = False
    if not own:
        a = pos[o[m - 1]]
        for j in range(m):
            b = pos[o[j]]
            dy = b[1] - a[1]
            c = (x - a[0]) * dy - (y - a[1]) * (b[0] - a[0])
            if (a[1] > y) != (b[1] > y) and ((c < 0.0) if dy > 0.0 else (c > 0.0)):
                inside = not inside
            a = b
    if not inside and not own and not s.radius[i] + rB > 0.0:
        return 0  # outside, and no radius to keep a distance with
    entry, head_on = -1, 0.0
    if inside or own:
        for j in range(m):
            ia, ib = o[j], o[(j + 1) % m]
            if own and _near_at_rest(s, i, ia, ib):
                continue
            a0, b0, a1, b1 = prev[ia], prev[ib], pos[ia], pos[ib]
            s0 = _cross(b0[0] - a0[0], b0[1] - a0[1], px - a0[0], py - a0[1])
            s1 = _cross(b1[0] - a1[0], b1[1] - a1[1], x - a1[0], y - a1[1])
            if not (s0 <= 0.0 and s1 > 0.0):
                continue
            tc = s0 / (s0 - s1)
            cx, cy = px + tc * (x - px), py + tc * (y - py)
            ax, ay = a0[0] + tc * (a1[0] - a0[0]), a0[1] + tc * (a1[1] - a0[1])
            ex, ey = (b0[0] + tc * (b1[0] - b0[0])) - ax, (b0[1] + tc * (b1[1] - b0[1])) - ay
            l2 = ex * ex + ey * ey
            if not l2 > 0.0:
                continue
            u = (cx - ax) * ex + (cy - ay) * ey  # the crossing along the edge, times l2
            if not (-ENTRY_SLACK * l2 <= u <= (1.0 + ENTRY_SLACK) * l2):
                continue
            fx, fy = b1[0] - a1[0], b1[1] - a1[1]
            length = math.sqrt(fx * fx + fy * fy)
            if not length > MIN_LENGTH:
                continue
            rx = (x - px) - 0.5 * ((a1[0] - a0[0]) + (b1[0] - b0[0]))
            ry = (y - py) - 0.5 * ((a1[1] - a0[1]) + (b1[1] - b0[1]))
            score = (rx * fy + ry * -fx) / length
            if entry < 0 or score < head_on:
                head_on, entry = score, j
    near, best, t_near = -1, 0.0, 0.0
    if entry < 0:
        for j in range(m):
            ia, ib = o[j], o[(j + 1) % m]
            if own and _near_at_rest(s, i, ia, ib):
                continue
            a, b = pos[ia], pos[ib]
            ex, ey = b[0] - a[0], b[1] - a[1]
            l2, t = ex * ex + ey * ey, 0.0
            if l2 > 0.0:
                t = ((x - a[0]) * ex + (y - a[1]) * ey) / l2
                t = 0.0 if t < 0.0 else (1.0 if t > 1.0 else t)
            dx, dy = x - (a[0] + t * ex), y - (a[1] + t * ey)
            d2 = dx * dx + dy * dy
            if near < 0 or d2 < best:
                best, near, t_near = d2, j, t
        if near < 0:
            return 0
    j = entry if entry >= 0 else near
    ia, ib = o[j], o[(j + 1) % m]
    a, b = pos[ia], pos[ib]
    ex, ey = b[0] - a[0], b[1] - a[1]
    l2, t = ex * ex + ey * ey, t_near
    if entry >= 0 and l2 > 0.0:
        t = ((x - a[0]) * ex + (y - a[1]) * ey) / l2
        t = 0.0 if t < 0.0 else (1.0 if t > 1.0 else t)
    qx, qy = a[0] + t * ex, a[1] + t * ey
    dx, dy = x - qx, y - qy
    dist = math.sqrt(dx * dx + dy * dy) if not inside and entry < 0 else 0.0
    if inside or entry >= 0 or not dist > MIN_LENGTH:
        length = math.sqrt(l2)
        if not length > MIN_LENGTH:
            return 0
        nx, ny = ey / length, -ex / length
    else:
        nx, ny = dx / dist, dy / dist
    sep = s.radius[i] + ((1.0 - t) * s.radius[ia] + t * s.radius[ib])
    mu = s.mu(i) if own else _sqrt(s.mu(i) * s.body_friction[B])
    e_i, e_b = s.e(i), s.body_restitution[B]
    e = e_i if own else (e_i if e_i > e_b else e_b)
    return _resolve(s, i, ia, ib, t, nx, ny, sep, mu, e, B, qx, qy)


def _pair_allowed(s: _Scene, i: int, j: int) -> bool:
    oi, oj = s.owner[i], s.owner[j]
    if oi == oj and oi >= 0:
        if not s.flags[oi] & SELF:
            return False
        ri, rj = s.rest_pos[i], s.rest_pos[j]
        dx, dy, r = rj[0] - ri[0], rj[1] - ri[1], s.radius[i] + s.radius[j]
        return bool(dx * dx + dy * dy >= r * r)
    if (oi >= 0 and s.flags[oi] & CLOSED) or (oj >= 0 and s.flags[oj] & CLOSED):
        return False
    return bool((s.cat(i) & s.msk(j)) and (s.cat(j) & s.msk(i)))


def _pair_contact(s: _Scene, i: int, j: int) -> int:
    xi, xj = s.pos[i], s.pos[j]
    dx, dy = xi[0] - xj[0], xi[1] - xj[1]
    d, nx, ny = math.sqrt(dx * dx + dy * dy), 0.0, 1.0
    if d > MIN_LENGTH:
        nx, ny = dx / d, dy / d
    rj, ei, ej = s.radius[j], s.e(i), s.e(j)
    oj = s.owner[j]
    return _resolve(s, i, j, j, 0.0, nx, ny, s.radius[i] + rj, _sqrt(s.mu(i) * s.mu(j)),
                    ei if ei > ej else ej, oj if oj >= 0 else SHARED, xj[0] + rj * nx, xj[1] + rj * ny)


def _edge_candidates(s: _Scene, snap: F64, n: int, nb: int,
                     particle_collisions: int) -> list[tuple[int, int, float]]:
    """(i, B, largest radius on B's outline): particle i (a probe) inside body B's grown box
    at the pass's start, sorted. Found through a grid of the probes (cells of the mean box),
    so no body is checked against every particle."""
    margin = 2.0 * max([0.0, *s.radius])
    probes = np.array([i for i, o in enumerate(s.owner) if o != -1 or particle_collisions], dtype=np.intp)
    boxes: list[tuple[int, F64, F64, float]] = []
    for b in range(nb):
        o = s.outlines[b]
        if not s.flags[b] & (CLOSED | SELF) or len(o) < 2:
            continue
        pts = snap[o]
        lo, hi = pts.min(axis=0) - margin, pts.max(axis=0) + margin
        if np.isfinite(lo).all() and np.isfinite(hi).all():  # (else a body that blew up)
            boxes.append((b, lo, hi, max(s.radius[k] for k in o)))
    if not boxes or not len(probes):
        return []
    cell = max(float(np.mean([(hi - lo).max() for _, lo, hi, _ in boxes])), 1e-9)
    keys = np.floor(snap[probes] / cell).astype(np.int64)
    grid: dict[tuple[int, int], list[int]] = {}
    for i, (kx, ky) in zip(probes.tolist(), keys.tolist(), strict=True):
        grid.setdefault((kx, ky), []).append(i)
    pairs: list[tuple[int, int, float]] = []
    for b, lo, hi, r_b in boxes:
        (x0, y0), (x1, y1) = np.floor(lo / cell).astype(np.int64), np.floor(hi / cell).astype(np.int64)
        if (x1 - x0 + 1) * (y1 - y0 + 1) > len(grid):  # a box bigger than the occupied cells
            near = probes
        else:
            near = np.array([i for kx in range(x0, x1 + 1) for ky in range(y0, y1 + 1)
                             for i in grid.get((kx, ky), ())], dtype=np.intp)
        if not len(near):
            continue
        x, y = snap[near, 0], snap[near, 1]
        hit = near[~((x < lo[0]) | (x > hi[0]) | (y < lo[1]) | (y > hi[1]))]
        pairs.extend((int(i), b, r_b) for i in hit)
    return sorted(pairs)


def _pair_candidates(s: _Scene, snap: list[list[float]], n: int,
                     particle_collisions: int) -> list[list[int]]:
    """For each particle i, the particles j > i within 2 (r_i + r_j) at the pass's start."""
    grid = [i for i in range(n) if in_grid(s, i, particle_collisions)]
    out: list[list[int]] = [[] for _ in range(n)]
    if len(grid) < 2:
        return out
    pc = 4.0 * max(s.radius[i] for i in grid)
    cells: dict[tuple[int, int], list[int]] = {}
    for i in grid:
        cells.setdefault((_cell(snap[i][0], pc), _cell(snap[i][1], pc)), []).append(i)
    for i in grid:
        x, y = snap[i]
        cx, cy = _cell(x, pc), _cell(y, pc)
        found = set()
        for gx in (cx - 1, cx, cx + 1):
            for gy in (cy - 1, cy, cy + 1):
                for j in cells.get((gx, gy), ()):
                    if j <= i:
                        continue
                    dx, dy = snap[j][0] - x, snap[j][1] - y
                    r = 2.0 * (s.radius[i] + s.radius[j])
                    if not dx * dx + dy * dy > r * r and _pair_allowed(s, i, j):
                        found.add(j)
        out[i] = sorted(found)
    return out


def body_contacts(
    pos: F64, vel: F64, contact_body: I32, contact_point: F64, contact_normal: F64,
    contact_impulse: F64, snap: F64, aabb: F64, bucket_start: I32, bucket_body: I32,
    cell_start: I32, cell_particle: I32, near: I32, edge: F64, fat_pos: F64, fat_first: I32,
    fat_count: I32, fat_body: I32, fat_state: F64, fat_clear: F64, fat_kept: F64, fat_drift: F64,
    reacted: F64, left_pos: F64, prev_pos: F64,
    support: F64, radius: F64, inv_mass: F64, owner: I32, category: I32, mask: I32, friction: F64,
    restitution: F64, rest_pos: F64, outline: I32, outline_start: I32, outline_count: I32, member: I32,
    member_start: I32, member_count: I32, body_flags: I32, body_category: I32, body_mask: I32,
    body_friction: F64, body_restitution: F64, n: int, nb: int, nbuckets: int, nentries: int,
    npairs: int, dim: int, iterations: int, particle_collisions: int, h: float, rest_speed: float,
) -> int:
    """Particles against other bodies' outlines (and their own, with self-collision), then
    particle pairs; ``iterations`` times, each contact resolved at once (Gauss-Seidel). A 3D
    world's surfaces: ``pysoft.twins.contacts3d``."""
    if dim == 3:
        return body_contacts_3d(
            pos, vel, contact_body, contact_point, contact_normal, contact_impulse, prev_pos,
            left_pos, support, radius, inv_mass, owner, category, mask, friction, restitution, rest_pos,
            outline, outline_start, outline_count, member, member_start, member_count, body_flags,
            body_category, body_mask, body_friction, body_restitution, n, nb, iterations,
            particle_collisions, h, rest_speed)
    s = _Scene(pos, vel, prev_pos, support, radius, inv_mass, owner, category, mask, friction, restitution,
               rest_pos, outline, outline_start, outline_count, member, member_start, member_count,
               body_flags, body_category, body_mask, body_friction, body_restitution, n, nb,
               rest_speed)
    s.impulse = contact_impulse[:n].tolist()
    s.h = h
    start = pos[:n].copy()
    edges = _edge_candidates(s, start, n, nb, particle_collisions)
    pairs = _pair_candidates(s, start.tolist(), n, particle_collisions)
    contacts = 0
    for _ in range(iterations):
        for i, b, r_b in edges:
            contacts += _edge_contact(s, i, b, r_b)
        for i in range(n):
            for j in pairs[i]:
                contacts += _pair_contact(s, i, j)
    if n:
        pos[:n] = s.pos
        vel[:n] = s.vel
    for i, (body, qx, qy, nx, ny) in s.report.items():
        contact_body[i] = body
        contact_point[i] = (qx, qy)
        contact_normal[i] = (nx, ny)
        contact_impulse[i] = s.impulse[i]
    return contacts
