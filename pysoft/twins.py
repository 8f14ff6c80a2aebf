"""The NumPy twins of the C kernels: same names (without ``ps_``), same arguments.

Each twin is the readable definition of its kernel; ``csrc/`` is the fast
one. Arrays are the Store's: positions, velocities and forces ``(n, dim)``
float64, per-particle scalars ``(n,)``, spring pairs ``(m, 2)`` int32 rows.
Written arrays are modified in place, as in C. Each twin evaluates the same
expressions in the same order as its kernel (see the essays at the top of
the C files), so the parity tests can ask for identical bits.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]
I32 = NDArray[np.int32]

MIN_LENGTH = 1e-12  # PS_MIN_LENGTH in forces.c: below it a spring has no axis


def _dot(a: F64, b: F64, dim: int) -> F64:
    """Row-wise dot product, summed left to right like the C loops."""
    out = np.zeros(len(a))
    for c in range(dim):
        out = out + a[:, c] * b[:, c]
    return out


# forces.c -------------------------------------------------------------------


def gravity_drag(
    force: F64, vel: F64, mass: F64, inv_mass: F64, gravity: F64, n: int, dim: int,
    drag: float,
) -> None:
    """Set ``force = m (g - drag v)`` for movable particles, 0 for immovable."""
    movable = inv_mass[:n] != 0.0
    force[:n] = 0.0
    force[:n][movable] = mass[:n, None][movable] * (gravity[None, :dim] - drag * vel[:n][movable])


def springs(
    force: F64, pos: F64, vel: F64, pairs: I32, rest_length: F64,
    stiffness: F64, damping: F64, m: int, dim: int,
) -> None:
    """Add damped spring forces; spring j adds ``+f`` to ``a`` then ``-f`` to ``b``."""
    a, b = pairs[:m, 0], pairs[:m, 1]
    d = pos[b] - pos[a]
    length = np.sqrt(_dot(d, d, dim))
    live = length > MIN_LENGTH
    with np.errstate(divide="ignore", invalid="ignore"):
        u = d * (1.0 / length)[:, None]
    vrel = _dot(vel[b] - vel[a], u, dim)
    s = stiffness[:m] * (length - rest_length[:m]) + damping[:m] * vrel
    f = (s[:, None] * u)[live]
    # Interleave (a0, b0, a1, b1, ...) so np.add.at accumulates in the C order.
    rows = np.stack([a[live], b[live]], axis=1).reshape(-1)
    vals = np.stack([f, -f], axis=1).reshape(-1, dim)
    np.add.at(force, rows, vals)


@np.errstate(divide="ignore", invalid="ignore")  # masked-out rows may divide by zero
def radial_gravity(
    force: F64, pos: F64, mass: F64, inv_mass: F64, well_center: F64, well_strength: F64,
    well_falloff: I32, well_min_distance: F64, n: int, w: int, dim: int,
) -> None:
    """Add ``m * strength / max(d, d_min)^falloff`` toward each well, wells in index order."""
    mv = np.flatnonzero(inv_mass[:n] != 0.0)
    x = pos[mv]
    f = force[mv]
    for j in range(w):
        d = well_center[j] - x
        dist = np.sqrt(_dot(d, d, dim))
        live = dist > MIN_LENGTH
        eff = np.where(dist > well_min_distance[j], dist, well_min_distance[j])
        denom = np.ones(len(x))
        for _ in range(int(well_falloff[j])):
            denom = denom * eff
        with np.errstate(divide="ignore", invalid="ignore"):
            s = mass[mv] * (well_strength[j] / denom) / dist
        f = np.where(live[:, None], f + s[:, None] * d, f)
    force[mv] = f


# bodies.c -------------------------------------------------------------------


def _body_of(body_start: I32, body_count: I32, nb: int) -> NDArray[np.intp]:
    """For each entry of a concatenated index array, the body it belongs to."""
    return np.repeat(np.arange(nb), body_count[:nb])


@np.errstate(divide="ignore", invalid="ignore")  # bodies without the model: 0/0, unused
def pressure(
    force: F64, pos: F64, outline: I32, body_start: I32, body_count: I32, amount: F64,
    min_area: F64, nb: int, dim: int,
) -> None:
    """Ideal-gas pressure amount / area on each outline edge, half to each endpoint."""
    body = _body_of(body_start, body_count, nb)
    if not len(body):
        return
    j = np.arange(len(body))
    local = j - body_start[body]
    nxt = body_start[body] + (local + 1) % body_count[body]
    p, q = pos[outline[j]], pos[outline[nxt]]
    twice = np.zeros(nb)
    np.add.at(twice, body, p[:, 0] * q[:, 1] - q[:, 0] * p[:, 1])
    area = 0.5 * twice
    half = 0.5 * (amount[:nb] / np.where(area > min_area[:nb], area, min_area[:nb]))
    f = np.stack([half[body] * (q[:, 1] - p[:, 1]), half[body] * -(q[:, 0] - p[:, 0])], axis=1)
    rows = np.stack([outline[j], outline[nxt]], axis=1).reshape(-1)
    np.add.at(force, rows, np.repeat(f, 2, axis=0))


@np.errstate(divide="ignore", invalid="ignore")  # bodies without the model: 0/0, unused
def shape_match(
    force: F64, pos: F64, vel: F64, mass: F64, inv_mass: F64, members: I32, rest: F64,
    body_start: I32, body_count: I32, stiffness: F64, damping: F64, nb: int, dim: int,
) -> None:
    """Pull members toward the best-fit rotated rest shape; damp toward the rigid motion."""
    body = _body_of(body_start, body_count, nb)
    if not len(body):
        return
    idx = members[: len(body)]
    x, v, q = pos[idx], vel[idx], rest[: len(body)]
    sums = np.zeros((nb, 4))
    np.add.at(sums, body, np.concatenate([x[:, :2], v[:, :2]], axis=1))
    count = body_count[:nb].astype(np.float64)
    cx, cy, ux, uy = (sums[:, i] / count for i in range(4))
    rx, ry = x[:, 0] - cx[body], x[:, 1] - cy[body]
    terms = np.stack([q[:, 0] * rx + q[:, 1] * ry, q[:, 0] * ry - q[:, 1] * rx,
                      rx * (v[:, 1] - uy[body]) - ry * (v[:, 0] - ux[body]), rx * rx + ry * ry], axis=1)
    acc = np.zeros((nb, 4))
    np.add.at(acc, body, terms)
    D, S, L, rr = acc.T
    length = np.sqrt(D * D + S * S)
    with np.errstate(divide="ignore", invalid="ignore"):
        co = np.where(length > 0.0, D / length, 1.0)
        si = np.where(length > 0.0, S / length, 0.0)
        w = np.where(rr > 0.0, L / rr, 0.0)
    tx = cx[body] + (co[body] * q[:, 0] - si[body] * q[:, 1])
    ty = cy[body] + (si[body] * q[:, 0] + co[body] * q[:, 1])
    gx, gy = ux[body] + -w[body] * ry, uy[body] + w[body] * rx
    mk, md = mass[idx] * stiffness[body], mass[idx] * damping[body]
    f = np.stack([mk * (tx - x[:, 0]) + md * (gx - v[:, 0]),
                  mk * (ty - x[:, 1]) + md * (gy - v[:, 1])], axis=1)
    live = inv_mass[idx] != 0.0
    np.add.at(force, idx[live], f[live])


# integrate.c ----------------------------------------------------------------


def symplectic_euler(
    pos: F64, vel: F64, prev_pos: F64, force: F64, inv_mass: F64, n: int, dim: int, h: float
) -> None:
    """``p = x`` (all rows); ``v += h a; x += h v`` for movable particles."""
    prev_pos[:n] = pos[:n]
    mv = inv_mass[:n] != 0.0
    im = inv_mass[:n, None][mv]
    vel[:n][mv] = vel[:n][mv] + h * (force[:n][mv] * im)
    pos[:n][mv] = pos[:n][mv] + h * vel[:n][mv]


def explicit_euler(
    pos: F64, vel: F64, prev_pos: F64, force: F64, inv_mass: F64, n: int, dim: int, h: float
) -> None:
    """``p = x`` (all rows); ``x += h v; v += h a`` for movable particles."""
    prev_pos[:n] = pos[:n]
    mv = inv_mass[:n] != 0.0
    im = inv_mass[:n, None][mv]
    pos[:n][mv] = pos[:n][mv] + h * vel[:n][mv]
    vel[:n][mv] = vel[:n][mv] + h * (force[:n][mv] * im)


def verlet_drift(
    pos: F64, vel_pred: F64, prev_pos: F64, vel: F64, force: F64, inv_mass: F64, n: int, dim: int,
    h: float,
) -> None:
    """``p = x``; ``x += h v + h^2/2 a``; ``v_pred = v + h a`` (velocity Verlet, first half)."""
    prev_pos[:n] = pos[:n]
    mv = inv_mass[:n] != 0.0
    a = force[:n][mv] * inv_mass[:n, None][mv]
    hh = 0.5 * h * h
    pos[:n][mv] = pos[:n][mv] + h * vel[:n][mv] + hh * a
    vel_pred[:n][mv] = vel[:n][mv] + h * a


def verlet_kick(
    vel: F64, force0: F64, force1: F64, inv_mass: F64, n: int, dim: int, h: float
) -> None:
    """``v += h/2 (a0 + a1)`` (velocity Verlet, second half)."""
    mv = inv_mass[:n] != 0.0
    im = inv_mass[:n, None][mv]
    vel[:n][mv] = vel[:n][mv] + (0.5 * h) * (force0[:n][mv] * im + force1[:n][mv] * im)


def rk4_stage(
    pos_out: F64, vel_out: F64, pos: F64, vel: F64, dpos: F64, force: F64,
    inv_mass: F64, n: int, dim: int, c: float,
) -> None:
    """One RK4 stage state ``x + c dx, v + c a``; immovable rows are copied."""
    mv = inv_mass[:n] != 0.0
    pos_out[:n] = pos[:n]
    vel_out[:n] = vel[:n]
    pos_out[:n][mv] = pos[:n][mv] + c * dpos[:n][mv]
    vel_out[:n][mv] = vel[:n][mv] + c * (force[:n][mv] * inv_mass[:n, None][mv])


def rk4_combine(
    pos: F64, vel: F64, prev_pos: F64, v1: F64, v2: F64, v3: F64, v4: F64,
    f1: F64, f2: F64, f3: F64, f4: F64, inv_mass: F64, n: int, dim: int, h: float,
) -> None:
    """``p = x``; ``x += h/6 (v1 + 2v2 + 2v3 + v4)``, ``v += h/6 (a1 + 2a2 + 2a3 + a4)``."""
    prev_pos[:n] = pos[:n]
    mv = inv_mass[:n] != 0.0
    h6 = h / 6.0
    vs = v1[:n][mv] + 2.0 * v2[:n][mv] + 2.0 * v3[:n][mv] + v4[:n][mv]
    pos[:n][mv] = pos[:n][mv] + h6 * vs
    fsum = f1[:n][mv] + 2.0 * f2[:n][mv] + 2.0 * f3[:n][mv] + f4[:n][mv]
    vel[:n][mv] = vel[:n][mv] + h6 * (fsum * inv_mass[:n, None][mv])


def xpbd_predict(
    pos: F64, prev_pos: F64, vel: F64, force: F64, inv_mass: F64, n: int, dim: int, h: float
) -> None:
    """``p = x; v += h a; x += h v`` (immovable rows: only ``p = x``)."""
    symplectic_euler(pos, vel, prev_pos, force, inv_mass, n, dim, h)


def xpbd_velocity(
    vel: F64, pos: F64, prev_pos: F64, inv_mass: F64, n: int, dim: int, h: float
) -> None:
    """``v = (x - p) / h`` for movable particles."""
    mv = inv_mass[:n] != 0.0
    vel[:n][mv] = (pos[:n][mv] - prev_pos[:n][mv]) * (1.0 / h)


# constraints.c --------------------------------------------------------------


def xpbd_distance(
    pos: F64, vel: F64, lam: F64, inv_mass: F64, pairs: I32, rest_length: F64, compliance: F64,
    order: I32, batch_start: I32, m: int, nbatch: int, dim: int, h: float,
) -> None:
    """XPBD distance constraints, one batch of independent constraints at a time."""
    inv_h, hh = 1.0 / h, h * h
    for bt in range(nbatch):
        j = order[batch_start[bt] : batch_start[bt + 1]]
        a, b = pairs[j, 0], pairs[j, 1]
        wa, wb = inv_mass[a], inv_mass[b]
        d = pos[b] - pos[a]
        length = np.sqrt(_dot(d, d, dim))
        ok = ((wa + wb) != 0.0) & (length > MIN_LENGTH)
        j, a, b, wa, wb, d, length = j[ok], a[ok], b[ok], wa[ok], wb[ok], d[ok], length[ok]
        at = compliance[j] / hh
        s = (-(length - rest_length[j]) - at * lam[j]) / ((wa + wb) + at)
        lam[j] = lam[j] + s
        g = d / length[:, None]
        da, db = (wa * s)[:, None] * g, (wb * s)[:, None] * g
        pos[a], pos[b] = pos[a] - da, pos[b] + db
        vel[a], vel[b] = vel[a] - da * inv_h, vel[b] + db * inv_h


_TET_FACES = ((1, 3, 2), (0, 2, 3), (0, 3, 1), (0, 1, 2))


def _simplex(pos: F64, s: I32, dim: int) -> tuple[F64, F64]:
    """Signed measures (m,) and gradients (m, dim+1, dim) of simplices, as in C."""
    p = [pos[s[:, i]] for i in range(dim + 1)]
    g = np.empty((len(s), dim + 1, dim))
    if dim == 2:
        A = 0.5 * ((p[1][:, 0] - p[0][:, 0]) * (p[2][:, 1] - p[0][:, 1])
                   - (p[1][:, 1] - p[0][:, 1]) * (p[2][:, 0] - p[0][:, 0]))
        for i in range(3):
            q, r = p[(i + 1) % 3], p[(i + 2) % 3]
            g[:, i, 0] = 0.5 * (q[:, 1] - r[:, 1])
            g[:, i, 1] = 0.5 * (r[:, 0] - q[:, 0])
        return A, g
    for i, (ia, ib, ic) in enumerate(_TET_FACES):
        u, v = p[ib] - p[ia], p[ic] - p[ia]
        g[:, i, 0] = (u[:, 1] * v[:, 2] - u[:, 2] * v[:, 1]) / 6.0
        g[:, i, 1] = (u[:, 2] * v[:, 0] - u[:, 0] * v[:, 2]) / 6.0
        g[:, i, 2] = (u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0]) / 6.0
    e1, e2, e3 = p[1] - p[0], p[2] - p[0], p[3] - p[0]
    cx = e2[:, 1] * e3[:, 2] - e2[:, 2] * e3[:, 1]
    cy = e2[:, 2] * e3[:, 0] - e2[:, 0] * e3[:, 2]
    cz = e2[:, 0] * e3[:, 1] - e2[:, 1] * e3[:, 0]
    return (e1[:, 0] * cx + e1[:, 1] * cy + e1[:, 2] * cz) / 6.0, g


def xpbd_volume(
    pos: F64, vel: F64, lam: F64, inv_mass: F64, simplices: I32, rest_volume: F64, compliance: F64,
    order: I32, batch_start: I32, m: int, nbatch: int, dim: int, h: float,
) -> None:
    """XPBD area (2D) / volume (3D) constraints, one batch at a time."""
    inv_h, hh = 1.0 / h, h * h
    for bt in range(nbatch):
        j = order[batch_start[bt] : batch_start[bt + 1]]
        s = simplices[j]
        measure, g = _simplex(pos, s, dim)
        C = measure - rest_volume[j]
        w = inv_mass[s]
        denom = np.zeros(len(j))
        for i in range(dim + 1):
            g2 = np.zeros(len(j))
            for c in range(dim):
                g2 = g2 + g[:, i, c] * g[:, i, c]
            denom = denom + w[:, i] * g2
        ok = denom > 0.0
        at = compliance[j] / hh
        with np.errstate(divide="ignore", invalid="ignore"):
            d_lam = (-C - at * lam[j]) / (denom + at)
        lam[j[ok]] = lam[j[ok]] + d_lam[ok]
        for i in range(dim + 1):
            dx = (w[ok, i] * d_lam[ok])[:, None] * g[ok, i]
            rows = s[ok, i]
            pos[rows] = pos[rows] + dx
            vel[rows] = vel[rows] + dx * inv_h


# collide.c ------------------------------------------------------------------

POLYTOPE, CAPSULE = 0, 1


def _vdot(v: F64, a: F64, dim: int) -> F64:
    """Dot of one vector ``v`` (dim,) with every row of ``a``, summed like C's ``dot(v, a)``."""
    out = np.zeros(len(a))
    for c in range(dim):
        out = out + v[c] * a[:, c]
    return out


def _to_local(x: F64, c: F64, R: F64, dim: int) -> F64:
    """``R^T (x - c)`` row by row, summed in C's order."""
    d = x - c
    out = np.empty_like(d)
    for a in range(dim):
        s = np.zeros(len(d))
        for b in range(dim):
            s = s + R[b, a] * d[:, b]
        out[:, a] = s
    return out


def _to_world(v: F64, R: F64, dim: int) -> F64:
    out = np.empty_like(v)
    for a in range(dim):
        s = np.zeros(len(v))
        for b in range(dim):
            s = s + R[a, b] * v[:, b]
        out[:, a] = s
    return out


def _polytope_contact(p: F64, x: F64, r: F64, fn: F64, fo: F64, dim: int) -> tuple[F64, F64]:
    """Depth (0: none) and local normal of each particle against a grown polytope."""
    m = len(x)
    t_in, t_out = np.zeros(m), np.ones(m)
    f_in, near = np.full(m, -1), np.full(m, -1)
    outside, missed = np.zeros(m, bool), np.zeros(m, bool)
    best = np.zeros(m)
    for f in range(len(fo)):
        d0 = _vdot(fn[f], p, dim) - fo[f]  # against the core: the centre's path
        s1 = _vdot(fn[f], x, dim) - fo[f]
        d1 = s1
        out = d0 >= 0.0
        outside |= out
        missed |= out & (d1 >= 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = d0 / (d0 - d1)
        enter = out & (d1 < 0.0) & ((f_in < 0) | (t > t_in))
        t_in, f_in = np.where(enter, t, t_in), np.where(enter, f, f_in)
        leave = ~out & (d1 >= 0.0) & (t < t_out)
        t_out = np.where(leave, t, t_out)
        closer = (near < 0) | (s1 > best)
        best, near = np.where(closer, s1, best), np.where(closer, f, near)
    swept = outside & ~missed & (f_in >= 0) & ~(t_in > t_out)
    hit = swept | (best < r)
    face = np.where(swept, f_in, near)
    depth, nrm = np.zeros(m), np.zeros((m, dim))
    if hit.any():
        nf = fn[face[hit]]
        depth[hit] = r[hit] - (_dot(nf, x[hit], dim) - fo[face[hit]])
        nrm[hit] = nf
    return depth, nrm


def _closest_on_segment(y: F64, a: F64, b: F64, dim: int) -> F64:
    ab = b - a
    l2 = float(np.zeros(1)[0])
    for c in range(dim):
        l2 = l2 + ab[c] * ab[c]
    t = np.zeros(len(y))
    if l2 > 0.0:
        t = np.clip(_vdot(ab, y - a, dim) / l2, 0.0, 1.0)
    return a + t[:, None] * ab


def _first_root(A: F64, B: F64, C: F64) -> F64:
    """Smallest root in [0, 1] of A t^2 + B t + C (A > 0), else -1."""
    disc = B * B - 4.0 * A * C
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (-B - np.sqrt(disc)) / (2.0 * A)
    ok = (A > 0.0) & ~(disc < 0.0) & (t >= 0.0) & (t <= 1.0)
    return np.where(ok, t, -1.0)


def _capsule_contact(p: F64, x: F64, r: F64, a: F64, b: F64, R: float, dim: int) -> tuple[F64, F64]:
    """Depth (0: none) and local normal of each particle against a grown capsule."""
    rr = R + r
    q = _closest_on_segment(p, a, b, dim)
    mp = p - q
    outside = _dot(mp, mp, dim) >= R * R
    # swept against the core, for particles whose centre started outside it
    d = x - p
    ab = b - a
    l2 = 0.0
    for c in range(dim):
        l2 = l2 + ab[c] * ab[c]
    dd = _dot(d, d, dim)
    t_hit = np.full(len(x), 2.0)
    if l2 > 0.0:
        m = p - a
        md, ddab = _vdot(ab, m, dim), _vdot(ab, d, dim)
        A = dd - ddab * ddab / l2
        B = 2.0 * (_dot(m, d, dim) - md * ddab / l2)
        C = _dot(m, m, dim) - md * md / l2 - R * R
        t = _first_root(A, B, C)
        s = (md + t * ddab) / l2
        t_hit = np.where(outside & (t >= 0.0) & (s >= 0.0) & (s <= 1.0), t, t_hit)
    for end in (a, b):
        m = p - end
        t = _first_root(dd, 2.0 * _dot(m, d, dim), _dot(m, m, dim) - R * R)
        t_hit = np.where(outside & (t >= 0.0) & (t < t_hit), t, t_hit)
    y = p + t_hit[:, None] * d
    q_swept = _closest_on_segment(y, a, b, dim)
    q_static = _closest_on_segment(x, a, b, dim)
    mx = x - q_static
    swept = ~(t_hit > 1.0)
    hit = swept | (_dot(mx, mx, dim) < rr * rr)
    q = np.where(swept[:, None], q_swept, q_static)
    m = np.where(swept[:, None], y - q_swept, mx)
    length = np.sqrt(_dot(m, m, dim))
    axis = np.zeros(dim)
    axis[1] = 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        nrm = np.where((length > MIN_LENGTH)[:, None], m / length[:, None], axis)
    depth = rr - _dot(nrm, x - q, dim)
    depth = np.where(hit & (depth > 0.0), depth, 0.0)
    return depth, nrm


@np.errstate(divide="ignore", invalid="ignore")  # masked-out rows may divide by zero
def collide(
    pos: F64, vel: F64, contact_collider: I32, contact_normal: F64, contact_impulse: F64,
    prev_pos: F64, radius: F64, mass: F64, inv_mass: F64, kind: I32, center: F64,
    rotation: F64, velocity: F64, angular_velocity: F64, restitution: F64, friction: F64,
    keep: F64, face_start: I32, face_count: I32, face_normal: F64, face_offset: F64,
    cap_a: F64, cap_b: F64, cap_radius: F64, bound: F64, grow: F64, n: int, k: int, nfaces: int,
    dim: int,
    iterations: int, h: float, rest_speed: float,
) -> int:
    """Particles against colliders: swept entry or nearest surface, deepest wins; response."""
    contacts = 0
    active = np.flatnonzero(inv_mass[:n] != 0.0)
    for _ in range(iterations):
        if not len(active) or not k:
            break
        x, p0, r = pos[active], prev_pos[active], radius[active]
        best = np.zeros(len(active))
        best_j = np.full(len(active), -1)
        best_n = np.zeros((len(active), dim))
        path = x - p0
        path_len = np.sqrt(_dot(path, path, dim))
        for j in range(k):
            off = x - center[j]
            lim = bound[j] + grow[j] * r + path_len
            near = np.flatnonzero(~(_dot(off, off, dim) > lim * lim))  # the bounding-sphere cull
            R = rotation[j]
            xl, pl = _to_local(x[near], center[j], R, dim), _to_local(p0[near], center[j], R, dim)
            if kind[j] == POLYTOPE:
                lo, hi = face_start[j], face_start[j] + face_count[j]
                depth, nl = _polytope_contact(pl, xl, r[near], face_normal[lo:hi], face_offset[lo:hi], dim)
            else:
                depth, nl = _capsule_contact(pl, xl, r[near], cap_a[j], cap_b[j], cap_radius[j], dim)
            deeper = depth > best[near]
            rows = near[deeper]
            best[rows] = depth[deeper]
            best_j[rows] = j
            best_n[rows] = _to_world(nl[deeper], R, dim)
        found = best_j >= 0
        active, best, j_, nrm = active[found], best[found], best_j[found], best_n[found]
        contacts += len(active)
        x = pos[active] + best[:, None] * nrm
        rel = x - center[j_]
        w = angular_velocity[j_]
        u = np.empty_like(x)
        if dim == 2:
            u[:, 0] = velocity[j_, 0] + -w[:, 2] * rel[:, 1]
            u[:, 1] = velocity[j_, 1] + w[:, 2] * rel[:, 0]
        else:
            u[:, 0] = velocity[j_, 0] + (w[:, 1] * rel[:, 2] - w[:, 2] * rel[:, 1])
            u[:, 1] = velocity[j_, 1] + (w[:, 2] * rel[:, 0] - w[:, 0] * rel[:, 2])
            u[:, 2] = velocity[j_, 2] + (w[:, 0] * rel[:, 1] - w[:, 1] * rel[:, 0])
        contact_collider[active] = j_
        contact_normal[active] = nrm
        vr = vel[active] - u
        vn = _dot(vr, nrm, dim)
        app = vn < 0.0
        vn_new = np.where(-vn > rest_speed, -restitution[j_] * vn, 0.0)
        dvn = vn_new - vn
        vt = vr - vn[:, None] * nrm
        vt_len = np.sqrt(_dot(vt, vt, dim))
        limit = friction[j_] * dvn
        static = vt_len <= limit
        slip = (x - prev_pos[active]) - h * u
        sn = _dot(slip, nrm, dim)
        x = np.where((app & static)[:, None], x - (slip - sn[:, None] * nrm), x)
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(static, 0.0, (1.0 - limit / vt_len) * keep[j_])
        v_new = u + vt * scale[:, None] + vn_new[:, None] * nrm
        pos[active] = x
        vel[active] = np.where(app[:, None], v_new, vel[active])
        contact_impulse[active] = np.where(app, contact_impulse[active] + mass[active] * dvn,
                                           contact_impulse[active])
    return contacts


# finish.c -------------------------------------------------------------------


def find_unstable(pos: F64, vel: F64, n: int, dim: int, max_speed: float) -> int:
    """First row with a non-finite position/velocity or speed above max_speed, else -1."""
    x, v = pos[:n], vel[:n]
    finite = np.isfinite(x).all(axis=1) & np.isfinite(v).all(axis=1)
    with np.errstate(invalid="ignore", over="ignore"):
        bad = ~finite | (_dot(v, v, dim) > max_speed * max_speed)
    rows = np.flatnonzero(bad)
    return int(rows[0]) if len(rows) else -1
