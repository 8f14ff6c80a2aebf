"""Twin of csrc/src/contacts3d.c: bodies against bodies in 3D.

As the 2D twin (pysoft/twins/contacts.py): the candidates come from their
definitions (particle ``i`` inside body ``B``'s box; particle pairs within
twice their radii, both at the pass's start), without the C kernel's hashes,
and the contacts are resolved one after another in the C kernel's order, in
Python floats, every operation the C kernel's, so the results are bitwise
equal.
"""

from __future__ import annotations

import math

import numpy as np

from pysoft.twins._common import CLOSED, F64, I32, MIN_LENGTH, SELF, SHARED, cell_of, in_grid

MAX_PUSHOUT = 1.0  # PS_MAX_PUSHOUT (m/s)
SURFACE_SKIN = 0.02  # PS_SURFACE_SKIN: a surface's contact skin, a fraction of its triangle's size
Vec = list[float]


def _div(a: float, b: float) -> float:
    """C's a / b: infinite or NaN for b == 0 (Python raises)."""
    try:
        return a / b
    except ZeroDivisionError:
        if a != a or a == 0.0:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _sqrt(x: float) -> float:
    return math.sqrt(x) if x >= 0.0 else math.nan


def _dot(u: Vec, v: Vec) -> float:
    return (u[0] * v[0] + u[1] * v[1]) + u[2] * v[2]


def _cross(u: Vec, v: Vec) -> Vec:
    return [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]]


def _sub(u: Vec, v: Vec) -> Vec:
    return [u[0] - v[0], u[1] - v[1], u[2] - v[2]]


class _Scene:
    def __init__(self, pos: F64, vel: F64, prev_pos: F64, left_pos: F64, support: F64, radius: F64,
                 inv_mass: F64,
                 owner: I32, category: I32, mask: I32, friction: F64, restitution: F64, rest_pos: F64,
                 outline: I32, outline_start: I32, outline_count: I32, member: I32, member_start: I32,
                 member_count: I32, flags: I32, body_category: I32, body_mask: I32,
                 body_friction: F64, body_restitution: F64, n: int, nb: int, h: float,
                 rest_speed: float) -> None:
        self.pos: list[Vec] = pos[:n].tolist()
        self.vel: list[Vec] = vel[:n].tolist()
        self.prev: list[Vec] = prev_pos[:n].tolist()
        self.left: list[Vec] = left_pos[:n].tolist()  # where the frame's last pass left them
        self.reacted: list[Vec] = [[0.0, 0.0, 0.0] for _ in range(n)]  # moves as a corner
        self.support: list[Vec] = support[:n].tolist()
        self.radius, self.inv_mass = radius[:n].tolist(), inv_mass[:n].tolist()
        self.owner = owner[:n].tolist()
        self.category = [c & 0xFFFFFFFF for c in category[:n].tolist()]
        self.mask = [m & 0xFFFFFFFF for m in mask[:n].tolist()]
        self.friction, self.restitution = friction[:n].tolist(), restitution[:n].tolist()
        self.rest_pos = rest_pos[:n].tolist()
        self.surfaces = [outline[s : s + c].tolist() for s, c in
                         zip(outline_start[:nb].tolist(), outline_count[:nb].tolist(), strict=True)]
        self.members = [member[s : s + c].tolist() for s, c in
                        zip(member_start[:nb].tolist(), member_count[:nb].tolist(), strict=True)]
        self.flags = flags[:nb].tolist()
        self.body_category = [c & 0xFFFFFFFF for c in body_category[:nb].tolist()]
        self.body_mask = [m & 0xFFFFFFFF for m in body_mask[:nb].tolist()]
        self.body_friction = body_friction[:nb].tolist()
        self.body_restitution = body_restitution[:nb].tolist()
        self.h, self.inv_h, self.rest_speed = h, 1.0 / h, rest_speed
        self.snap: list[Vec] = pos[:n].tolist()  # the pass's start
        self.boxes: dict[int, list[Vec]] = {}  # each target body's triangles' grown boxes
        self.report: dict[int, tuple[int, Vec, Vec]] = {}
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


def _share(s: _Scene, i: int, k: list[int], t: Vec, wi: float, w: Vec, lam: float, n: Vec,
           reach: float) -> float:
    """The share (0 to 1) of a contact's push that keeps each particle it moves within
    ``reach`` of where it began the pass, or no farther if it is farther already, its moves
    counted by role: a corner's, what reactions moved it; ``i``'s, the rest."""
    most = 1.0
    for c in range(-1, 3):
        r = i if c < 0 else k[c]
        f = wi * lam if c < 0 else -(t[c] * w[c] * lam)
        if f == 0.0:
            continue
        a = _sub(_sub(s.pos[r], s.snap[r]), s.reacted[r]) if c < 0 else list(s.reacted[r])
        d = [f * n[e] for e in range(3)]
        aa, ad, dd, r2 = _dot(a, a), _dot(a, d), _dot(d, d), reach * reach
        if aa > r2:
            r2 = aa
        if (aa + 2.0 * ad) + dd <= r2:
            continue
        root = _sqrt(ad * ad - dd * (aa - r2))
        sh = _div(root - ad, dd)
        if not sh < most:
            continue
        most = sh if sh > 0.0 else 0.0
    return most


def _resolve(s: _Scene, i: int, k: list[int], t: Vec, n: Vec, sep: float, mu: float, e: float,
             report: int, q: Vec) -> int:
    x = s.pos[i]
    xk = [s.pos[c] for c in k]
    vk = [s.vel[c] for c in k]
    pk = [s.prev[c] for c in k]
    C = 0.0
    for d in range(3):
        C = C + (x[d] - ((t[0] * xk[0][d] + t[1] * xk[1][d]) + t[2] * xk[2][d])) * n[d]
    C = C - sep
    if not C < 0.0:
        return 0
    wi = s.inv_mass[i]
    if _dot(s.support[i], n) < 0.0:
        wi = 0.0
    w = [0.0 if _dot(s.support[c], n) > 0.0 else s.inv_mass[c] for c in k]
    W = ((wi + t[0] * t[0] * w[0]) + t[1] * t[1] * w[1]) + t[2] * t[2] * w[2]
    if not W > 0.0:
        return 0
    v = s.vel[i]
    vr = [0.0, 0.0, 0.0]
    vn = 0.0
    for d in range(3):
        vr[d] = v[d] - ((t[0] * vk[0][d] + t[1] * vk[1][d]) + t[2] * vk[2][d])
        vn = vn + vr[d] * n[d]
    # a substep's push: at most the substep's approach (speed times h, or the relative
    # displacement along n since its start) plus MAX_PUSHOUT h
    cap = MAX_PUSHOUT - vn  # the push's velocity: to at most MAX_PUSHOUT apart
    if not cap > 0.0:
        cap = 0.0
    pi, si0, li = s.prev[i], s.snap[i], s.left[i]
    sk = [s.snap[c] for c in k]
    lk = [s.left[c] for c in k]
    sn0 = sl0 = 0.0
    for d in range(3):
        sn0 = sn0 + ((si0[d] - pi[d]) - ((t[0] * (sk[0][d] - pk[0][d]) + t[1] * (sk[1][d] - pk[1][d]))
                                         + t[2] * (sk[2][d] - pk[2][d]))) * n[d]
        sl0 = sl0 + ((si0[d] - li[d]) - ((t[0] * (sk[0][d] - lk[0][d]) + t[1] * (sk[1][d] - lk[1][d]))
                                         + t[2] * (sk[2][d] - lk[2][d]))) * n[d]
    came = (-vn if vn < 0.0 else 0.0) * s.h
    if -sn0 > came:
        came = -sn0
    if -sl0 > came:  # NaN (no pass before in this frame): not taken
        came = -sl0
    reach = came + MAX_PUSHOUT * s.h
    if reach < -C:
        C = -reach
    inv_w = 1.0 / W
    C = C * _share(s, i, k, t, wi, w, -C * inv_w, n, reach)
    lam = -C * inv_w
    for d in range(3):
        x[d] = x[d] + wi * lam * n[d]
    for c in range(3):
        for d in range(3):
            m = t[c] * w[c] * lam * n[d]
            xk[c][d] = xk[c][d] - m
            s.reacted[k[c]][d] = s.reacted[k[c]][d] - m
    follow = -C * s.inv_h
    if follow > cap:
        follow = cap
    target = (-e * vn if -vn > s.rest_speed else 0.0) if vn < 0.0 else vn
    dvn = (target if target > vn + follow else vn + follow) - vn
    P, limit = dvn * inv_w, mu * dvn
    p = pi
    sd, vt = [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]
    sn = st2 = vt2 = 0.0
    for d in range(3):
        sd[d] = (x[d] - p[d]) - ((t[0] * (xk[0][d] - pk[0][d]) + t[1] * (xk[1][d] - pk[1][d]))
                                 + t[2] * (xk[2][d] - pk[2][d]))
        sn = sn + sd[d] * n[d]
        vt[d] = vr[d] - vn * n[d]
    for d in range(3):
        sd[d] = sd[d] - sn * n[d]
        st2 = st2 + sd[d] * sd[d]
        vt2 = vt2 + vt[d] * vt[d]
    slip = limit * s.h
    if st2 <= slip * slip:  # static: undo it, stop the sliding
        sd = [sd[d] * inv_w for d in range(3)]
        for d in range(3):
            x[d] = x[d] - wi * sd[d]
        for c in range(3):
            for d in range(3):
                m = t[c] * w[c] * sd[d]
                xk[c][d] = xk[c][d] + m
                s.reacted[k[c]][d] = s.reacted[k[c]][d] + m
        pt = [-vt[d] * inv_w for d in range(3)]
    elif (vt_len := _sqrt(vt2)) > limit:
        kk = _div(limit, vt_len * W)
        pt = [-vt[d] * kk for d in range(3)]
    else:
        pt = [-vt[d] * inv_w for d in range(3)]
    j = [P * n[d] + pt[d] for d in range(3)]
    for d in range(3):
        v[d] = v[d] + wi * j[d]
    for c in range(3):
        for d in range(3):
            vk[c][d] = vk[c][d] - t[c] * w[c] * j[d]
    s.report[i] = (report, list(q), list(n))
    s.impulse[i] = s.impulse[i] + P
    return 1


def _claims(pos: list[Vec], iu: int, iv: int, sigma: float, px: float, py: float) -> bool:
    lo, hi = (iu, iv) if iu < iv else (iv, iu)
    a, b = pos[lo], pos[hi]
    E = (b[0] - a[0]) * (py - a[1]) - (b[1] - a[1]) * (px - a[0])
    if lo != iu:
        E = -E
    E = sigma * E
    if E > 0.0:
        return True
    if E < 0.0 or E != E:
        return False
    u, v = pos[iu], pos[iv]
    dx, dy = sigma * (v[0] - u[0]), sigma * (v[1] - u[1])
    return dy > 0.0 or (dy == 0.0 and dx < 0.0)


def _inside(pos: list[Vec], tri: list[int], p: Vec) -> bool:
    """The parity of the surface's triangles a ray from p toward +z crosses."""
    odd = False
    px, py, pz = p
    for f in range(len(tri) // 3):
        ia, ib, ic = tri[3 * f], tri[3 * f + 1], tri[3 * f + 2]
        a, b, c = pos[ia], pos[ib], pos[ic]
        if a[2] <= pz and b[2] <= pz and c[2] <= pz:
            continue
        if (a[0] < px and b[0] < px and c[0] < px) or (a[0] > px and b[0] > px and c[0] > px):
            continue
        if (a[1] < py and b[1] < py and c[1] < py) or (a[1] > py and b[1] > py and c[1] > py):
            continue
        ux, uy, uz = b[0] - a[0], b[1] - a[1], b[2] - a[2]
        vx, vy, vz = c[0] - a[0], c[1] - a[1], c[2] - a[2]
        nx, ny, nz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
        if nz == 0.0:
            continue
        sigma = 1.0 if nz > 0.0 else -1.0
        if not (_claims(pos, ia, ib, sigma, px, py) and _claims(pos, ib, ic, sigma, px, py)
                and _claims(pos, ic, ia, sigma, px, py)):
            continue
        side = ((px - a[0]) * nx + (py - a[1]) * ny) + (pz - a[2]) * nz
        if sigma * side < 0.0:
            odd = not odd
    return odd


def _nearest(a: Vec, b: Vec, c: Vec, p: Vec) -> tuple[float, Vec]:
    """The squared distance from p to triangle (a, b, c) and its nearest point's weights."""
    ab, ac, ap, bp, cp = _sub(b, a), _sub(c, a), _sub(p, a), _sub(p, b), _sub(p, c)
    d1, d2, d3 = _dot(ab, ap), _dot(ac, ap), _dot(ab, bp)
    d4, d5, d6 = _dot(ac, bp), _dot(ab, cp), _dot(ac, cp)
    vc, vb, va = d1 * d4 - d3 * d2, d5 * d2 - d1 * d6, d3 * d6 - d5 * d4
    if d1 <= 0.0 and d2 <= 0.0:
        t = [1.0, 0.0, 0.0]
    elif d3 >= 0.0 and d4 <= d3:
        t = [0.0, 1.0, 0.0]
    elif vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = _div(d1, d1 - d3)
        t = [1.0 - v, v, 0.0]
    elif d6 >= 0.0 and d5 <= d6:
        t = [0.0, 0.0, 1.0]
    elif vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = _div(d2, d2 - d6)
        t = [1.0 - w, 0.0, w]
    elif va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = _div(d4 - d3, (d4 - d3) + (d5 - d6))
        t = [0.0, 1.0 - w, w]
    else:
        den = (va + vb) + vc
        v, w = _div(vb, den), _div(vc, den)
        t = [(1.0 - v) - w, v, w]
    r = 0.0
    for d in range(3):
        e = p[d] - ((t[0] * a[d] + t[1] * b[d]) + t[2] * c[d])
        r = r + e * e
    return r, t


def _normal(x: list[Vec], ia: int, ib: int, ic: int) -> Vec:
    return _cross(_sub(x[ib], x[ia]), _sub(x[ic], x[ia]))


def _feature_normal(pos: list[Vec], tri: list[int], k: list[int], t: Vec) -> Vec | None:
    """The outward normal at the point of triangle k with weights t (its own inside it; on an
    edge or a corner, the mean of the unit normals of the triangles holding it)."""
    if t[0] != 0.0 and t[1] != 0.0 and t[2] != 0.0:
        nt = _normal(pos, k[0], k[1], k[2])
        length = math.sqrt(_dot(nt, nt))
        if not length > MIN_LENGTH:
            return None
        return [nt[d] / length for d in range(3)]
    total = [0.0, 0.0, 0.0]
    for g in range(len(tri) // 3):
        r = tri[3 * g : 3 * g + 3]
        if not all(t[c] == 0.0 or k[c] in r for c in range(3)):
            continue
        nt = _normal(pos, r[0], r[1], r[2])
        length = math.sqrt(_dot(nt, nt))
        if not length > MIN_LENGTH:
            continue
        total = [total[d] + nt[d] / length for d in range(3)]
    length = math.sqrt(_dot(total, total))
    if not length > MIN_LENGTH:
        return None
    return [total[d] / length for d in range(3)]


def _face_contact(s: _Scene, i: int, B: int) -> int:
    o_i = s.owner[i]
    if o_i == B or (o_i == SHARED and i in s.members[B]):
        return 0
    if not s.flags[B] & CLOSED:
        return 0
    if not (s.cat(i) & s.body_mask[B]) or not (s.body_category[B] & s.msk(i)):
        return 0
    tri = s.surfaces[B]
    m = len(tri) // 3
    pos, prev = s.pos, s.prev
    x, p = pos[i], prev[i]
    inside = _inside(pos, tri, x)
    entry = -1
    if inside:  # the triangle nearest the start, of those whose plane i is behind now
        best = 0.0
        for f in range(m):
            ia, ib, ic = tri[3 * f], tri[3 * f + 1], tri[3 * f + 2]
            if not _dot(_normal(pos, ia, ib, ic), _sub(x, pos[ia])) < 0.0:
                continue
            d2, _ = _nearest(prev[ia], prev[ib], prev[ic], p)
            if entry < 0 or d2 < best:
                best, entry = d2, f
    f = entry
    t = [0.0, 0.0, 0.0]
    if f >= 0:
        _, t = _nearest(pos[tri[3 * f]], pos[tri[3 * f + 1]], pos[tri[3 * f + 2]], x)
    else:  # the nearest triangle, of those whose grown box held i at the pass's start
        best = 0.0
        xs, boxes = s.snap[i], s.boxes[B]
        for g in range(m):
            b = boxes[g]
            if (xs[0] < b[0] or xs[0] > b[3] or xs[1] < b[1] or xs[1] > b[4] or xs[2] < b[2]
                    or xs[2] > b[5]):
                continue
            d2, tf = _nearest(pos[tri[3 * g]], pos[tri[3 * g + 1]], pos[tri[3 * g + 2]], x)
            if f < 0 or d2 < best:
                best, f, t = d2, g, tf
        if f < 0:
            return 0
    k = [tri[3 * f], tri[3 * f + 1], tri[3 * f + 2]]
    q = [(t[0] * pos[k[0]][d] + t[1] * pos[k[1]][d]) + t[2] * pos[k[2]][d] for d in range(3)]
    dv = _sub(x, q)
    dist = math.sqrt(_dot(dv, dv)) if not inside and entry < 0 else 0.0
    if inside or entry >= 0 or not dist > MIN_LENGTH:
        found = _feature_normal(pos, tri, k, t)
        if found is None:
            return 0
        n = found
    else:
        n = [dv[d] / dist for d in range(3)]
    nt = _normal(pos, k[0], k[1], k[2])
    skin = SURFACE_SKIN * math.sqrt(math.sqrt(_dot(nt, nt)))
    r = s.radius
    sep = r[i] + ((t[0] * r[k[0]] + t[1] * r[k[1]]) + t[2] * r[k[2]])
    sep = sep + skin
    mu = _sqrt(s.mu(i) * s.body_friction[B])
    e_i, e_b = s.e(i), s.body_restitution[B]
    return _resolve(s, i, k, t, n, sep, mu, e_i if e_i > e_b else e_b, B, q)


def _pair_allowed(s: _Scene, i: int, j: int) -> bool:
    oi, oj = s.owner[i], s.owner[j]
    if oi == oj and oi >= 0:
        if not s.flags[oi] & SELF:
            return False
        ri, rj = s.rest_pos[i], s.rest_pos[j]
        dx, dy, dz, r = rj[0] - ri[0], rj[1] - ri[1], rj[2] - ri[2], s.radius[i] + s.radius[j]
        return bool((dx * dx + dy * dy) + dz * dz >= r * r)
    if (oi >= 0 and s.flags[oi] & CLOSED) or (oj >= 0 and s.flags[oj] & CLOSED):
        return False
    return bool((s.cat(i) & s.msk(j)) and (s.cat(j) & s.msk(i)))


def _pair_contact(s: _Scene, i: int, j: int) -> int:
    xi, xj = s.pos[i], s.pos[j]
    dv = _sub(xi, xj)
    d, n = math.sqrt(_dot(dv, dv)), [0.0, 1.0, 0.0]
    if d > MIN_LENGTH:
        n = [dv[c] / d for c in range(3)]
    rj, ei, ej = s.radius[j], s.e(i), s.e(j)
    q = [xj[c] + rj * n[c] for c in range(3)]
    oj = s.owner[j]
    return _resolve(s, i, [j, j, j], [1.0, 0.0, 0.0], n, s.radius[i] + rj, _sqrt(s.mu(i) * s.mu(j)),
                    ei if ei > ej else ej, oj if oj >= 0 else SHARED, q)


def _triangle_boxes(snap: F64, tri: list[int], grown: float) -> list[Vec]:
    """Each triangle's box at the pass's start (lo x, y, z, hi x, y, z), grown by ``grown``."""
    out = []
    for f in range(len(tri) // 3):
        box = [0.0] * 6
        for d in range(3):
            a, b, c = (float(snap[tri[3 * f + k], d]) for k in range(3))
            lo, hi = (a if a < b else b), (a if a > b else b)
            lo = c if c < lo else lo
            hi = c if c > hi else hi
            box[d], box[3 + d] = lo - grown, hi + grown
        out.append(box)
    return out


def _face_candidates(s: _Scene, snap: F64, nb: int, particle_collisions: int) -> list[tuple[int, int]]:
    """(i, B): probe i inside body B's box (grown by twice the largest radius and twice the
    skin of a triangle as large as the box) at the pass's start
    (a NaN coordinate is inside every box, as in C: no comparison with it holds), sorted."""
    margin = 2.0 * max([0.0, *s.radius])
    probes = np.array([i for i, o in enumerate(s.owner) if o != -1 or particle_collisions], dtype=np.intp)
    pairs: list[tuple[int, int]] = []
    if not len(probes):
        return pairs
    owners = np.asarray(s.owner, dtype=np.int64)[probes]
    for b in range(nb):
        o = s.surfaces[b]
        if not s.flags[b] & CLOSED or len(o) < 3:
            continue
        pts = snap[o]
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        side = 0.0
        for d in range(3):
            if hi[d] - lo[d] > side:
                side = float(hi[d] - lo[d])
        grown = margin + 2.0 * SURFACE_SKIN * side  # radii, and the skin
        if not (np.isfinite(lo - grown).all() and np.isfinite(hi + grown).all()):
            continue
        lo, hi = lo - grown, hi + grown
        s.boxes[b] = _triangle_boxes(snap, o, grown)
        x = snap[probes]
        out = ((x < lo) | (x > hi)).any(axis=1)
        hit = probes[~out & (owners != b)]
        pairs.extend((int(i), b) for i in hit)
    return sorted(pairs)


def _pair_candidates(s: _Scene, snap: list[Vec], n: int, particle_collisions: int) -> list[list[int]]:
    """For each particle i, the particles j > i within 2 (r_i + r_j) at the pass's start."""
    grid = [i for i in range(n) if in_grid(s, i, particle_collisions)]
    out: list[list[int]] = [[] for _ in range(n)]
    if len(grid) < 2:
        return out
    cell = 4.0 * max(s.radius[i] for i in grid)
    keys = {i: (cell_of(snap[i][0], cell), cell_of(snap[i][1], cell), cell_of(snap[i][2], cell))
            for i in grid}
    cells: dict[tuple[int, int, int], list[int]] = {}
    for i in grid:
        cells.setdefault(keys[i], []).append(i)
    for i in grid:
        cx, cy, cz = keys[i]
        x, y, z = snap[i]
        found = set()
        for gx in (cx - 1, cx, cx + 1):
            for gy in (cy - 1, cy, cy + 1):
                for gz in (cz - 1, cz, cz + 1):
                    for j in cells.get((gx, gy, gz), ()):
                        if j <= i:
                            continue
                        dx, dy, dz = snap[j][0] - x, snap[j][1] - y, snap[j][2] - z
                        r = 2.0 * (s.radius[i] + s.radius[j])
                        if not (dx * dx + dy * dy) + dz * dz > r * r and _pair_allowed(s, i, j):
                            found.add(j)
        out[i] = sorted(found)
    return out


def body_contacts_3d(
    pos: F64, vel: F64, contact_body: I32, contact_point: F64, contact_normal: F64,
    contact_impulse: F64, prev_pos: F64, left_pos: F64, support: F64, radius: F64, inv_mass: F64,
    owner: I32,
    category: I32, mask: I32, friction: F64, restitution: F64, rest_pos: F64, outline: I32,
    outline_start: I32, outline_count: I32, member: I32, member_start: I32, member_count: I32,
    body_flags: I32, body_category: I32, body_mask: I32, body_friction: F64, body_restitution: F64,
    n: int, nb: int, iterations: int, particle_collisions: int, h: float, rest_speed: float,
) -> int:
    """Particles against other bodies' surfaces, then particle pairs; ``iterations`` times,
    each contact resolved at once (Gauss-Seidel)."""
    s = _Scene(pos, vel, prev_pos, left_pos, support, radius, inv_mass, owner, category, mask, friction,
               restitution, rest_pos, outline, outline_start, outline_count, member, member_start,
               member_count, body_flags, body_category, body_mask, body_friction, body_restitution,
               n, nb, h, rest_speed)
    s.impulse = contact_impulse[:n].tolist()
    start = pos[:n].copy()
    faces = _face_candidates(s, start, nb, particle_collisions)
    pairs = _pair_candidates(s, start.tolist(), n, particle_collisions)
    contacts = 0
    for _ in range(iterations):
        for i, b in faces:
            contacts += _face_contact(s, i, b)
        for i in range(n):
            for j in pairs[i]:
                contacts += _pair_contact(s, i, j)
    if n:
        pos[:n] = s.pos
        vel[:n] = s.vel
        left_pos[:n] = s.pos  # for the next pass's ``came``
    for i, (body, q, nrm) in s.report.items():
        contact_body[i] = body
        contact_point[i] = q
        contact_normal[i] = nrm
        contact_impulse[i] = s.impulse[i]
    return contacts
