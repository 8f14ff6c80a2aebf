"""Twin of csrc/src/constraints.c: XPBD distance and area/volume constraints."""

from __future__ import annotations

import numpy as np

from pysoft._constants import MAX_CORRECTION_SPEED
from pysoft.twins._common import F64, I32, MIN_LENGTH, dot, ranges
from pysoft.twins.bodies import cross, inertia_solve, rigid_fit, rigid_fit3, rotated


def _follow(u: F64, du: F64) -> F64:
    """The share f of a distance correction's change du of the ends' relative velocity u that
    velocities follow: all of it up to MAX_CORRECTION_SPEED; when it opposes u, up to |u| more."""
    most = np.where(du * u < 0.0, np.abs(u) + MAX_CORRECTION_SPEED, MAX_CORRECTION_SPEED)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.abs(du) <= most, 1.0, most / np.abs(du))


def _withhold(withheld: F64, rows: I32, dx: F64, inv_h: float, f: F64, capped: np.ndarray) -> None:
    """``withheld[rows] += dx / h (1 - f)`` where a cap acted (``capped``: f < 1), as C adds it."""
    r = rows[capped]
    withheld[r] = withheld[r] + dx[capped] * inv_h * (1.0 - f[capped])


def xpbd_distance(
    pos: F64, vel: F64, withheld: F64, lam: F64, inv_mass: F64, prev_pos: F64, pairs: I32,
    rest_length: F64, compliance: F64, order: I32, batch_start: I32, m: int, nbatch: int,
    dim: int, follow: int, h: float,
) -> None:
    """XPBD distance constraints, one batch of independent constraints at a time; the share
    of a capped correction that velocities do not follow goes to ``withheld``. ``follow`` 0:
    velocities are left alone (the positions-only solve) and the ends' relative velocity is
    the one the "xpbd" velocity update would give them now, needed only past the cap."""
    inv_h, hh = 1.0 / h, h * h
    for bt in range(nbatch):
        j = order[batch_start[bt] : batch_start[bt + 1]]
        a, b = pairs[j, 0], pairs[j, 1]
        wa, wb = inv_mass[a], inv_mass[b]
        d = pos[b] - pos[a]
        length = np.sqrt(dot(d, d, dim))
        ok = ((wa + wb) != 0.0) & (length > MIN_LENGTH)
        j, a, b, wa, wb, d, length = j[ok], a[ok], b[ok], wa[ok], wb[ok], d[ok], length[ok]
        at = compliance[j] / hh
        s = (-(length - rest_length[j]) - at * lam[j]) / ((wa + wb) + at)
        lam[j] = lam[j] + s
        # 3D: d (1 / |d|), one division (constraints.c's distance_3d); 2D: d / |d|
        g = d * (1.0 / length)[:, None] if dim == 3 else d / length[:, None]
        du = (wa + wb) * s * inv_h
        if follow:
            f = _follow(dot(vel[b] - vel[a], g, dim), du)[:, None]
        else:  # within the cap whatever u is
            r = ((pos[b] - prev_pos[b]) - (pos[a] - prev_pos[a])) * inv_h - (withheld[b] - withheld[a])
            f = np.where(np.abs(du) <= MAX_CORRECTION_SPEED, 1.0, _follow(dot(r, g, dim), du))[:, None]
        da, db = (wa * s)[:, None] * g, (wb * s)[:, None] * g
        pos[a], pos[b] = pos[a] - da, pos[b] + db
        if follow:
            vel[a], vel[b] = vel[a] - da * inv_h * f, vel[b] + db * inv_h * f
        capped = f[:, 0] < 1.0
        if capped.any():
            _withhold(withheld, a, -da, inv_h, f, capped)
            _withhold(withheld, b, db, inv_h, f, capped)


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
    pos: F64, vel: F64, withheld: F64, lam: F64, inv_mass: F64, simplices: I32,
    rest_volume: F64, compliance: F64, order: I32, batch_start: I32, m: int, nbatch: int,
    dim: int, follow: int, h: float,
) -> None:
    """XPBD area (2D) / volume (3D) constraints, one batch at a time; ``follow`` 0: velocities
    are left alone (the positions-only solve)."""
    inv_h, hh = 1.0 / h, h * h
    if dim == 3:
        for bt in range(nbatch):
            _tet_batch(pos, vel, withheld, lam, inv_mass, simplices, rest_volume, compliance,
                       order[batch_start[bt] : batch_start[bt + 1]], follow, inv_h, hh)
        return
    for bt in range(nbatch):
        j = order[batch_start[bt] : batch_start[bt + 1]]
        s = simplices[j]
        measure, g = _simplex(pos, s, dim)
        C = measure - rest_volume[j]
        w = inv_mass[s]
        denom = np.zeros(len(j))
        g2s = []
        for i in range(dim + 1):
            g2 = np.zeros(len(j))
            for c in range(dim):
                g2 = g2 + g[:, i, c] * g[:, i, c]
            denom = denom + w[:, i] * g2
            g2s.append(g2)
        ok = denom > 0.0
        at = compliance[j] / hh
        with np.errstate(divide="ignore", invalid="ignore"):
            d_lam = (-C - at * lam[j]) / (denom + at)
        lam[j[ok]] = lam[j[ok]] + d_lam[ok]
        top = np.zeros(int(ok.sum()))
        for i in range(dim + 1):
            v = w[ok, i] * w[ok, i] * g2s[i][ok]
            top = np.where(v > top, v, top)  # C's `if (v > top)`: a NaN (inf * 0) is skipped
        speed2 = d_lam[ok] * d_lam[ok] * (inv_h * inv_h) * top
        with np.errstate(divide="ignore"):
            f = np.where(speed2 > MAX_CORRECTION_SPEED * MAX_CORRECTION_SPEED,
                         MAX_CORRECTION_SPEED / np.sqrt(speed2), 1.0)[:, None]
        capped = f[:, 0] < 1.0
        any_capped = bool(capped.any())
        for i in range(dim + 1):
            dx = (w[ok, i] * d_lam[ok])[:, None] * g[ok, i]
            rows = s[ok, i]
            pos[rows] = pos[rows] + dx
            if follow:
                vel[rows] = vel[rows] + dx * inv_h * f
            if any_capped:
                _withhold(withheld, rows, dx, inv_h, f, capped)


def _tet_batch(pos: F64, vel: F64, withheld: F64, lam: F64, inv_mass: F64, simplices: I32,
               rest_volume: F64, compliance: F64, j: I32, follow: int, inv_h: float,
               hh: float) -> None:
    """One batch of tetrahedra (constraints.c's volume_tet): six times the gradients."""
    s = simplices[j]
    p0 = pos[s[:, 0]]
    e1, e2, e3 = pos[s[:, 1]] - p0, pos[s[:, 2]] - p0, pos[s[:, 3]] - p0
    G = np.empty((len(j), 4, 3))
    for i, (u, v) in ((1, (e2, e3)), (2, (e3, e1)), (3, (e1, e2))):
        G[:, i, 0] = u[:, 1] * v[:, 2] - u[:, 2] * v[:, 1]
        G[:, i, 1] = u[:, 2] * v[:, 0] - u[:, 0] * v[:, 2]
        G[:, i, 2] = u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0]
    G[:, 0] = -((G[:, 1] + G[:, 2]) + G[:, 3])
    C = (e1[:, 0] * G[:, 1, 0] + e1[:, 1] * G[:, 1, 1] + e1[:, 2] * G[:, 1, 2]) / 6.0 - rest_volume[j]
    w = inv_mass[s]
    g2 = (G[:, :, 0] * G[:, :, 0] + G[:, :, 1] * G[:, :, 1]) + G[:, :, 2] * G[:, :, 2]
    D, top = np.zeros(len(j)), np.zeros(len(j))
    for i in range(4):
        D = D + w[:, i] * g2[:, i]
        v = w[:, i] * w[:, i] * g2[:, i]
        top = np.where(v > top, v, top)  # C's `if (v > top)`: a NaN (inf * 0) is skipped
    ok = D > 0.0
    s, j, w, G, C, D, top = s[ok], j[ok], w[ok], G[ok], C[ok], D[ok], top[ok]
    at = compliance[j] / hh
    k = (6.0 * (-C - at * lam[j])) / (D + 36.0 * at)
    lam[j] = lam[j] + 6.0 * k
    speed2 = k * k * (inv_h * inv_h) * top
    with np.errstate(divide="ignore"):
        f = np.where(speed2 > MAX_CORRECTION_SPEED * MAX_CORRECTION_SPEED,
                     MAX_CORRECTION_SPEED / np.sqrt(speed2), 1.0)[:, None]
    capped = f[:, 0] < 1.0
    any_capped = bool(capped.any())
    for i in range(4):
        dx = (w[:, i] * k)[:, None] * G[:, i]
        rows = s[:, i]
        pos[rows] = pos[rows] + dx
        if follow:
            vel[rows] = vel[rows] + dx * inv_h * f
        if any_capped:
            _withhold(withheld, rows, dx, inv_h, f, capped)


def _opposed(support: F64, members: I32, body_start: I32, body_count: I32, n: int, b: int,
             dim: int) -> F64:
    """The bodies (indices, increasing) held from opposite sides: two of their held members'
    supports more than 120 degrees apart (constraints.c's test)."""
    held = dot(support[:n], support[:n], dim) > 0.0
    body, flat = ranges(body_start, body_count, b)  # each member entry's body, in member order
    rows = members[flat]
    keep = held[rows]
    body, rows = body[keep], rows[keep]
    if not len(rows):
        return np.zeros(0, np.int64)
    s = support[rows]
    start = np.flatnonzero(np.r_[True, body[1:] != body[:-1]])  # each body's first held member
    group = np.cumsum(np.r_[0, body[1:] != body[:-1]])
    align = dot(s, s[start][group], dim)
    w = s[np.lexsort((align, group))[start]]  # the least aligned with the first (first of equals)
    return np.unique(body[dot(s, w[group], dim) < -0.5])


def settle_mass(
    settle_inv_mass: F64, support: F64, stuck: I32, inv_mass: F64, members: I32,
    body_start: I32, body_count: I32, n: int, b: int, dim: int,
) -> int:
    """The settle solve's inverse masses: 0 where static friction holds the particle (stuck),
    for every member of a body with no stuck member (but rows it shares with one that has) and
    of a body held from opposite sides, inv_mass elsewhere; 1, or 0 with nothing written when
    no particle is stuck (constraints.c)."""
    if not stuck[:n].any():
        return 0
    settle_inv_mass[:n] = np.where(stuck[:n] != 0, 0.0, inv_mass[:n])
    # a body with no stuck member sits it out; a row it shares with one that has is movable
    bodies = [members[body_start[j] : body_start[j] + body_count[j]] for j in range(b)]
    holds = [bool((stuck[rows] != 0).any()) for rows in bodies]
    for rows, held in zip(bodies, holds, strict=True):
        if not held:
            settle_inv_mass[rows] = 0.0
    for rows, held in zip(bodies, holds, strict=True):
        if held:
            settle_inv_mass[rows] = np.where(stuck[rows] != 0, 0.0, inv_mass[rows])
    for j in _opposed(support, members, body_start, body_count, n, b, dim).tolist():
        settle_inv_mass[members[body_start[j] : body_start[j] + body_count[j]]] = 0.0
    return 1


def settle_plan(
    settle_order: I32, settle_start: I32, order: I32, batch_start: I32, rows: I32,
    settle_inv_mass: F64, m: int, nbatch: int, k: int,
) -> None:
    """The settle solve's plan: the solve plan (``order``, ``batch_start``) less the constraints
    all of whose particles (``rows``, ``k`` a constraint) have a settle inverse mass of 0, each
    batch's rest in its order (constraints.c)."""
    start = batch_start[: nbatch + 1].astype(np.int64)
    j = order[start[0] : start[-1]]
    moves = (settle_inv_mass[rows[j, :k]] != 0.0).any(axis=1)
    kept = np.concatenate([[0], np.cumsum(moves)])
    settle_order[: kept[-1]] = j[moves]
    settle_start[: nbatch + 1] = kept[start - start[0]]


def zero(values: F64, m: int) -> None:
    """values[:m] = 0 (constraints.c)."""
    values[:m] = 0.0


def untangle(
    pos: F64, vel: F64, withheld: F64, tangled: I32, inv_mass: F64, support: F64, owner: I32,
    simplices: I32, rest_volume: F64, members: I32, rest: F64, body_start: I32, body_count: I32,
    n: int, m: int, b: int, dim: int, h: float,
) -> None:
    """Each body with an inverted area constraint of its own members (all three owned by it),
    unless held from opposite sides: its movable members put at its rest shape, best-fit
    rotated about their mean, moving with the members' mean velocity and best-fit spin; the
    move less the velocity change, over h, added to ``withheld`` (constraints.c)."""
    if dim not in (2, 3):
        return
    inv_h = 1.0 / h
    tangled[:b] = 0
    t = simplices[:m]
    o = owner[t[:, 0]]
    own = (o >= 0) & (o < b) & (owner[t[:, 1]] == o) & (owner[t[:, 2]] == o)
    if dim == 3:
        own &= owner[t[:, 3]] == o
        a, p, c, d = pos[t[:, 0]], pos[t[:, 1]], pos[t[:, 2]], pos[t[:, 3]]
        e1, e2, e3 = p - a, c - a, d - a
        twice = ((e1[:, 0] * (e2[:, 1] * e3[:, 2] - e2[:, 2] * e3[:, 1])
                  + e1[:, 1] * (e2[:, 2] * e3[:, 0] - e2[:, 0] * e3[:, 2]))
                 + e1[:, 2] * (e2[:, 0] * e3[:, 1] - e2[:, 1] * e3[:, 0]))
    else:
        a, p, c = pos[t[:, 0]], pos[t[:, 1]], pos[t[:, 2]]
        twice = (p[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (p[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])
    r = rest_volume[:m]
    tangled[np.unique(o[own & np.where(r > 0.0, twice < 0.0, (r < 0.0) & (twice > 0.0))])] = 1
    if not tangled[:b].any():
        return
    tangled[_opposed(support, members, body_start, body_count, n, b, dim)] = 0
    tangled[:b] = tangled[:b] * (body_count[:b] > 0)
    for j in np.flatnonzero(tangled[:b]).tolist():  # in order: bodies may share members
        if dim == 3:
            f3 = rigid_fit3(pos, vel, members, rest, body_start[j : j + 1], body_count[j : j + 1], 1)
            g = rotated(np.broadcast_to(f3.R[0], (len(f3.q), 3, 3)), f3.q)
            free = inv_mass[f3.idx] != 0.0
            _put_back(pos, vel, withheld, f3.idx[free], (f3.c[0] + g)[free],
                      (f3.u[0] + cross(np.broadcast_to(f3.w[0], g.shape), g))[free], inv_h)
            continue
        f = rigid_fit(pos, vel, members, rest, body_start[j : j + 1], body_count[j : j + 1], 1)
        idx, q = f.idx, f.q
        gx, gy = f.co[0] * q[:, 0] - f.si[0] * q[:, 1], f.si[0] * q[:, 0] + f.co[0] * q[:, 1]
        free = inv_mass[idx] != 0.0
        _put_back(pos, vel, withheld, idx[free], np.stack([f.cx[0] + gx, f.cy[0] + gy], axis=1)[free],
                  np.stack([f.ux[0] + -f.w[0] * gy, f.uy[0] + f.w[0] * gx], axis=1)[free], inv_h)


def _put_back(pos: F64, vel: F64, withheld: F64, rows: I32, x: F64, v: F64, inv_h: float) -> None:
    """Rows ``rows`` to positions x and velocities v, in order; the move over h less the
    velocity change added to withheld (what integrator "xpbd"'s velocity update leaves out)."""
    if len(np.unique(rows)) == len(rows):
        moved = (x - pos[rows]) * inv_h - (v - vel[rows])
        pos[rows], vel[rows] = x, v
        withheld[rows] = withheld[rows] + moved
        return
    for k, i in enumerate(rows.tolist()):  # a row listed twice moves again from where it went
        moved = (x[k] - pos[i]) * inv_h - (v[k] - vel[i])
        pos[i], vel[i] = x[k], v[k]
        withheld[i] = withheld[i] + moved


def xpbd_material(
    pos: F64, vel: F64, withheld: F64, lam: F64, inv_mass: F64, tets: I32, dm_inv: F64,
    compliance: F64, order: I32, batch_start: I32, m: int, nbatch: int, dim: int, h: float,
) -> None:
    """XPBD material tets (3D): each tet's deviatoric (|dev E|) and volume (det F - 1)
    constraints solved together (a 2 x 2 system), one batch at a time; nothing for dim != 3."""
    if dim != 3:
        return
    inv_h, hh = 1.0 / h, h * h
    for bt in range(nbatch):
        j = order[batch_start[bt] : batch_start[bt + 1]]
        _material_batch(pos, vel, withheld, lam, inv_mass, tets[j], dm_inv[j], compliance[j], j,
                        inv_h, hh)


def _material_batch(pos: F64, vel: F64, withheld: F64, lam: F64, inv_mass: F64, s: I32, B: F64,
                    comp: F64, j: I32, inv_h: float, hh: float) -> None:
    """One batch of material tets (``s`` their rows, ``B`` their Dm^-1, ``j`` their indices)."""
    w = inv_mass[s]
    ok = (comp[:, 0] > 0.0) & (comp[:, 1] > 0.0) & ~(
        (w[:, 0] == 0.0) & (w[:, 1] == 0.0) & (w[:, 2] == 0.0) & (w[:, 3] == 0.0))
    s, B, w, j, cd, ch = s[ok], B[ok], w[ok], j[ok], comp[ok, 0], comp[ok, 1]
    n = len(s)
    x0 = pos[s[:, 0]]
    e = [pos[s[:, k + 1]] - x0 for k in range(3)]
    f = np.empty((n, 3, 3))  # f[:, b]: column b of F
    for b in range(3):
        for a in range(3):
            f[:, b, a] = e[0][:, a] * B[:, b] + e[1][:, a] * B[:, 3 + b] + e[2][:, a] * B[:, 6 + b]
    D = np.empty((n, 3, 3))  # dev E
    for b in range(3):
        for d in range(3):
            D[:, b, d] = 0.5 * ((f[:, b, 0] * f[:, d, 0] + f[:, b, 1] * f[:, d, 1]
                                 + f[:, b, 2] * f[:, d, 2]) - (1.0 if b == d else 0.0))
    third = (D[:, 0, 0] + D[:, 1, 1] + D[:, 2, 2]) / 3.0
    r2 = np.zeros(n)
    for b in range(3):
        D[:, b, b] = D[:, b, b] - third
        for d in range(3):
            r2 = r2 + D[:, b, d] * D[:, b, d]
    CD = np.sqrt(r2)
    c = np.empty_like(f)
    for b in range(3):
        u, v = f[:, (b + 1) % 3], f[:, (b + 2) % 3]
        c[:, b, 0] = u[:, 1] * v[:, 2] - u[:, 2] * v[:, 1]
        c[:, b, 1] = u[:, 2] * v[:, 0] - u[:, 0] * v[:, 2]
        c[:, b, 2] = u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0]
    CH = (f[:, 0, 0] * c[:, 0, 0] + f[:, 0, 1] * c[:, 0, 1] + f[:, 0, 2] * c[:, 0, 2]) - 1.0
    P = np.empty((n, 3, 3))
    live = CD > 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        for a in range(3):
            for d in range(3):
                P[:, a, d] = np.where(live, (f[:, 0, a] * D[:, 0, d] + f[:, 1, a] * D[:, 1, d]
                                             + f[:, 2, a] * D[:, 2, d]) / CD, 0.0)
    gD, gH = np.empty((n, 4, 3)), np.empty((n, 4, 3))
    for k in range(3):
        for a in range(3):
            gD[:, k + 1, a] = (P[:, a, 0] * B[:, 3 * k] + P[:, a, 1] * B[:, 3 * k + 1]
                               + P[:, a, 2] * B[:, 3 * k + 2])
            gH[:, k + 1, a] = (c[:, 0, a] * B[:, 3 * k] + c[:, 1, a] * B[:, 3 * k + 1]
                               + c[:, 2, a] * B[:, 3 * k + 2])
    gD[:, 0] = -(gD[:, 1] + gD[:, 2] + gD[:, 3])
    gH[:, 0] = -(gH[:, 1] + gH[:, 2] + gH[:, 3])
    sDD, sDH, sHH = np.zeros(n), np.zeros(n), np.zeros(n)
    for i in range(4):
        dd, dh, h2 = np.zeros(n), np.zeros(n), np.zeros(n)
        for a in range(3):
            dd = dd + gD[:, i, a] * gD[:, i, a]
            dh = dh + gD[:, i, a] * gH[:, i, a]
            h2 = h2 + gH[:, i, a] * gH[:, i, a]
        sDD, sDH, sHH = sDD + w[:, i] * dd, sDH + w[:, i] * dh, sHH + w[:, i] * h2
    aD, aH = cd / hh, ch / hh
    gram = sDD * sHH - sDH * sDH
    gram = np.where(gram > 0.0, gram, 0.0)  # C's `if (!(gram > 0.0)) gram = 0.0`
    det = gram + aD * sHH + aH * sDD + aD * aH
    ok = (sDD + sHH > 0.0) & (det > 0.0)
    s, w, gD, gH, CD, CH, j = s[ok], w[ok], gD[ok], gH[ok], CD[ok], CH[ok], j[ok]
    sDD, sDH, sHH, aD, aH, det = sDD[ok], sDH[ok], sHH[ok], aD[ok], aH[ok], det[ok]
    rD, rH = -CD - aD * lam[j, 0], -CH - aH * lam[j, 1]
    dD = (rD * (sHH + aH) - sDH * rH) / det
    dH = ((sDD + aD) * rH - sDH * rD) / det
    lam[j, 0] = lam[j, 0] + dD
    lam[j, 1] = lam[j, 1] + dH
    dx = w[:, :, None] * (dD[:, None, None] * gD + dH[:, None, None] * gH)
    top = np.zeros(len(s))
    for i in range(4):
        d2 = np.zeros(len(s))
        for a in range(3):
            d2 = d2 + dx[:, i, a] * dx[:, i, a]
        top = np.where(d2 > top, d2, top)  # C's `if (d2 > top)`
    speed2 = top * (inv_h * inv_h)
    with np.errstate(divide="ignore"):
        share = np.where(speed2 > MAX_CORRECTION_SPEED * MAX_CORRECTION_SPEED,
                         MAX_CORRECTION_SPEED / np.sqrt(speed2), 1.0)[:, None]
    capped = share[:, 0] < 1.0
    any_capped = bool(capped.any())
    for i in range(4):
        rows = s[:, i]
        pos[rows] = pos[rows] + dx[:, i]
        vel[rows] = vel[rows] + dx[:, i] * inv_h * share
        if any_capped:
            _withhold(withheld, rows, dx[:, i], inv_h, share, capped)


def _spinning(owner: I32, inv_mass: F64, support: F64, linked: I32, members: I32, body_start: I32,
              body_count: I32, b: int, dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The bodies whose spin is kept (constraints.c's spins_alone), as a mask over the b
    bodies, and their member entries: each one's body and row, in member order."""
    body, flat = ranges(body_start, body_count, b)
    rows = members[flat]
    ok = (body_count[:b] > 0) & (linked[:b] == 0)
    held = dot(support[rows], support[rows], dim) > 0.0
    ok[np.unique(body[(owner[rows] != body) | (inv_mass[rows] == 0.0) | held])] = False
    keep = ok[body]
    return ok, body[keep], rows[keep]


@np.errstate(divide="ignore", invalid="ignore")  # bodies left out: 0/0, unused
def _body_moments(pos: F64, v: F64, mass: F64, body: np.ndarray, rows: np.ndarray, first: np.ndarray,
                  b: int, dim: int, inertia: bool,
                  start: tuple[F64, F64] | None = None) -> tuple[F64, F64, F64, F64, F64, F64]:
    """constraints.c's body_moments and body_spin for every body at once (sums in member
    order, as np.add.at adds; ``first``: each body's first member row): each body's origin o,
    centre c (offset from o), angular momentum L (3 columns; 2D: the last), mass M, and the
    columns J, K of the inertia (6); with ``start`` (3D: the positions and velocities the
    solve began from, per member), the angular momentum of those about their centre (else 0)."""
    o = np.zeros((b, 3))
    o[:, :dim] = pos[first]
    m = mass[rows]
    x = np.zeros((len(rows), 3))
    x[:, :dim] = pos[rows] - o[body, :dim]
    w = np.zeros((len(rows), 3))
    w[:, :dim] = v
    terms = [m, *(m * x[:, a] for a in range(dim)), *(m * w[:, a] for a in range(dim))]
    if dim == 2:
        terms += [m * (x[:, 0] * w[:, 1] - x[:, 1] * w[:, 0])]
        if inertia:
            terms += [m * (x[:, 0] * x[:, 0] + x[:, 1] * x[:, 1])]
    else:
        terms += [m * (x[:, 1] * w[:, 2] - x[:, 2] * w[:, 1]), m * (x[:, 2] * w[:, 0] - x[:, 0] * w[:, 2]),
                  m * (x[:, 0] * w[:, 1] - x[:, 1] * w[:, 0])]
        if inertia:
            xx, yy, zz = x[:, 0] * x[:, 0], x[:, 1] * x[:, 1], x[:, 2] * x[:, 2]
            terms += [m * (yy + zz), m * (xx + zz), m * (xx + yy), m * (x[:, 0] * x[:, 1]),
                      m * (x[:, 0] * x[:, 2]), m * (x[:, 1] * x[:, 2])]
        if start is not None:
            y, u = start[0] - o[body], start[1]
            terms += [*(m * y[:, a] for a in range(3)), *(m * u[:, a] for a in range(3)),
                      m * (y[:, 1] * u[:, 2] - y[:, 2] * u[:, 1]),
                      m * (y[:, 2] * u[:, 0] - y[:, 0] * u[:, 2]),
                      m * (y[:, 0] * u[:, 1] - y[:, 1] * u[:, 0])]
    acc = np.zeros((b, len(terms)))
    np.add.at(acc, body, np.stack(terms, axis=1))
    M = acc[:, 0]
    S, P = np.zeros((b, 3)), np.zeros((b, 3))
    S[:, :dim], P[:, :dim] = acc[:, 1 : 1 + dim], acc[:, 1 + dim : 1 + 2 * dim]
    c = np.zeros((b, 3))
    c[:, :dim] = S[:, :dim] / M[:, None]
    L = np.zeros((b, 3))
    rest = acc[:, 1 + 2 * dim :]
    if dim == 2:  # (L about the centre: A - c x P, constraints.c's spin_of)
        L[:, 2] = rest[:, 0] - cross(c, P)[:, 2]
        JK = np.zeros((b, 6))
        if inertia:
            JK[:, 2] = rest[:, 1]
    else:
        L = rest[:, :3] - cross(c, P)
        JK = rest[:, 3:9] if inertia else np.zeros((b, 6))
    Lb = np.zeros((b, 3))
    if start is not None:
        tail = rest[:, 9:]
        Lb = tail[:, 6:9] - cross(tail[:, :3] / M[:, None], tail[:, 3:6])
    return o, c, L, M, JK, Lb


def spin_record(
    spin: F64, pos: F64, vel: F64, mass: F64, inv_mass: F64, support: F64, owner: I32, linked: I32,
    members: I32, body_start: I32, body_count: I32, n: int, b: int, dim: int,
) -> None:
    """Each body's angular momentum about its centre of mass before the constraint solve (0
    for a body whose spin is not kept; constraints.c)."""
    if dim not in (2, 3):
        return
    ok, body, rows = _spinning(owner, inv_mass, support, linked, members, body_start, body_count, b, dim)
    first = members[np.where(ok, body_start[:b], 0)] if len(members) else np.zeros(b, np.int32)
    _, _, L, _, _, _ = _body_moments(pos, vel[rows], mass, body, rows, first, b, dim, False)
    spin[:b] = np.where(ok[:, None], L, 0.0)


@np.errstate(divide="ignore", invalid="ignore")  # bodies left out: 0/0, unused
def spin_keep(
    vel: F64, withheld: F64, spin: F64, pos: F64, prev_pos: F64, mass: F64, inv_mass: F64,
    support: F64, owner: I32, linked: I32, tangled: I32, members: I32, body_start: I32,
    body_count: I32, n: int, b: int, dim: int, mode: int, h: float,
) -> None:
    """The change of each kept body's angular momentum in the solve taken off as a rigid spin
    w = I^-1 dL: v_i -= w x r_i (mode 0), or withheld_i += w x r_i (modes 1 and 2: integrator
    "xpbd"); the momentum before the solve spin_record's (modes 0, 1) or, in 3D, that of the
    positions p and velocities the positions-only solve began from (mode 2; tangled bodies
    left alone) (constraints.c)."""
    if dim not in (2, 3) or (mode == 2 and dim != 3):
        return
    inv_h = 1.0 / h
    ok, body, rows = _spinning(owner, inv_mass, support, linked, members, body_start, body_count, b, dim)
    if mode == 2:
        ok &= tangled[:b] == 0
        keep = ok[body]
        body, rows = body[keep], rows[keep]
    v = (pos[rows] - prev_pos[rows]) * inv_h - withheld[rows] if mode else vel[rows]
    first = members[np.where(ok, body_start[:b], 0)] if len(members) else np.zeros(b, np.int32)
    start = (prev_pos[rows], vel[rows]) if mode == 2 else None
    o, c, L, M, JK, Lb = _body_moments(pos, v, mass, body, rows, first, b, dim, True, start)
    dL = L - (Lb if mode == 2 else spin[:b])
    w = np.zeros((b, 3))
    if dim == 2:
        inertia = JK[:, 2] - M * (c[:, 0] * c[:, 0] + c[:, 1] * c[:, 1])
        go = ok & (inertia > 0.0)
        w[:, 2] = dL[:, 2] / inertia
    else:
        xx, yy, zz = c[:, 0] * c[:, 0], c[:, 1] * c[:, 1], c[:, 2] * c[:, 2]
        i00, i11, i22 = JK[:, 0] - M * (yy + zz), JK[:, 1] - M * (xx + zz), JK[:, 2] - M * (xx + yy)
        i01, i02 = M * (c[:, 0] * c[:, 1]) - JK[:, 3], M * (c[:, 0] * c[:, 2]) - JK[:, 4]
        i12 = M * (c[:, 1] * c[:, 2]) - JK[:, 5]
        w, solved = inertia_solve(dL, i00, i11, i22, i01, i02, i12)
        go = ok & solved
    live = go[body]
    lb, lr = body[live], rows[live]
    oc = o + c
    wb = w[lb]
    r = np.zeros((len(lr), 3))
    r[:, :dim] = pos[lr] - oc[lb, :dim]
    sign = 1.0 if mode else -1.0
    if dim == 2:
        s = np.stack([sign * -(wb[:, 2] * r[:, 1]), sign * (wb[:, 2] * r[:, 0])], axis=1)
    else:
        s = sign * cross(wb, r)
    np.add.at(withheld if mode else vel, lr, s)
