"""Twin of csrc/src/collide.c: particles against colliders."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pysoft._constants import MAX_PUSHOUT_SPEED, SWEEP_SLOP
from pysoft.twins._common import F64, I32, MIN_LENGTH, POLYTOPE, dot


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
        out = (d0 >= 0.0) | ((d0 >= -SWEEP_SLOP) & (d1 < d0))
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
        depth[hit] = r[hit] - (dot(nf, x[hit], dim) - fo[face[hit]])
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
    outside = dot(mp, mp, dim) >= R * R
    # swept against the core, for particles whose centre started outside it
    d = x - p
    ab = b - a
    l2 = 0.0
    for c in range(dim):
        l2 = l2 + ab[c] * ab[c]
    dd = dot(d, d, dim)
    t_hit = np.full(len(x), 2.0)
    if l2 > 0.0:
        m = p - a
        md, ddab = _vdot(ab, m, dim), _vdot(ab, d, dim)
        A = dd - ddab * ddab / l2
        B = 2.0 * (dot(m, d, dim) - md * ddab / l2)
        C = dot(m, m, dim) - md * md / l2 - R * R
        t = _first_root(A, B, C)
        s = (md + t * ddab) / l2
        t_hit = np.where(outside & (t >= 0.0) & (s >= 0.0) & (s <= 1.0), t, t_hit)
    for end in (a, b):
        m = p - end
        t = _first_root(dd, 2.0 * dot(m, d, dim), dot(m, m, dim) - R * R)
        t_hit = np.where(outside & (t >= 0.0) & (t < t_hit), t, t_hit)
    y = p + t_hit[:, None] * d
    q_swept = _closest_on_segment(y, a, b, dim)
    q_static = _closest_on_segment(x, a, b, dim)
    mx = x - q_static
    swept = ~(t_hit > 1.0)
    hit = swept | (dot(mx, mx, dim) < rr * rr)
    q = np.where(swept[:, None], q_swept, q_static)
    m = np.where(swept[:, None], y - q_swept, mx)
    length = np.sqrt(dot(m, m, dim))
    axis = np.zeros(dim)
    axis[1] = 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        nrm = np.where((length > MIN_LENGTH)[:, None], m / length[:, None], axis)
    depth = rr - dot(nrm, x - q, dim)
    depth = np.where(hit & (depth > 0.0), depth, 0.0)
    return depth, nrm


def _shape_contact(p: F64, x: F64, r: F64, j: int, kind: I32, face_start: I32, face_count: I32,
                   face_normal: F64, face_offset: F64, cap_a: F64, cap_b: F64, cap_radius: F64,
                   dim: int) -> tuple[F64, F64]:
    """Depth and local normal of collider j's grown shape against local paths p -> x."""
    if kind[j] == POLYTOPE:
        lo, hi = face_start[j], face_start[j] + face_count[j]
        return _polytope_contact(p, x, r, face_normal[lo:hi], face_offset[lo:hi], dim)
    return _capsule_contact(p, x, r, cap_a[j], cap_b[j], cap_radius[j], dim)


def _deepest(idx: np.ndarray, pos: F64, prev_pos: F64, radius: F64, kind: I32, center: F64,
             rotation: F64, face_start: I32, face_count: I32, face_normal: F64, face_offset: F64,
             cap_a: F64, cap_b: F64, cap_radius: F64, bound: F64, grow: F64, k: int,
             dim: int, velocity: F64, angular_velocity: F64,
             h: float) -> tuple[F64, np.ndarray, F64]:
    """The deepest contact of each particle ``idx`` over all colliders: depth (0: none),
    collider (-1: none) and world normal, colliders in index order as in C; against a
    moving collider the start is carried by its surface (p0 + h u(p0))."""
    x, p0, r = pos[idx], prev_pos[idx], radius[idx]
    best = np.zeros(len(idx))
    best_j = np.full(len(idx), -1)
    best_n = np.zeros((len(idx), dim))
    path = x - p0
    path_len = np.sqrt(dot(path, path, dim))
    for j in range(k):
        pj, length = p0, path_len
        if velocity[j].any() or angular_velocity[j].any():
            pj = p0 + h * _surface_velocity(p0, np.full(len(idx), j), center, velocity,
                                            angular_velocity, dim)
            carried = x - pj
            length = np.sqrt(dot(carried, carried, dim))
        off = x - center[j]
        lim = bound[j] + grow[j] * r + length
        near = np.flatnonzero(~(dot(off, off, dim) > lim * lim))  # the bounding-sphere cull
        R = rotation[j]
        xl, pl = _to_local(x[near], center[j], R, dim), _to_local(pj[near], center[j], R, dim)
        depth, nl = _shape_contact(pl, xl, r[near], j, kind, face_start, face_count, face_normal,
                                   face_offset, cap_a, cap_b, cap_radius, dim)
        deeper = depth > best[near]
        rows = near[deeper]
        best[rows] = depth[deeper]
        best_j[rows] = j
        best_n[rows] = _to_world(nl[deeper], R, dim)
    return best, best_j, best_n


def _start_depth(p0: F64, u: F64, h: float, r: F64, j: np.ndarray, kind: I32, center: F64,
                 rotation: F64, face_start: I32, face_count: I32, face_normal: F64,
                 face_offset: F64, cap_a: F64, cap_b: F64, cap_radius: F64, dim: int) -> F64:
    """How deep each particle's start, carried by its collider j's surface (p0 + h u), lies
    inside j's shape grown by r (0: not), as C's start_depth()."""
    y = p0 + h * u
    out = np.zeros(len(j))
    for jj in np.unique(j):
        sel = np.flatnonzero(j == jj)
        yl = _to_local(y[sel], center[jj], rotation[jj], dim)
        out[sel], _ = _shape_contact(yl, yl, r[sel], jj, kind, face_start, face_count, face_normal,
                                     face_offset, cap_a, cap_b, cap_radius, dim)
    return out


def _touching(p0: F64, u: F64, h: float, r: F64, rest_speed: float, j: np.ndarray, kind: I32,
              center: F64, rotation: F64, face_start: I32, face_count: I32, face_normal: F64,
              face_offset: F64, cap_a: F64, cap_b: F64, cap_radius: F64, dim: int) -> np.ndarray:
    """Whether each particle touched its collider j at the substep's start (p0 + h u within
    rest_speed h of the grown shape), as C's touching()."""
    return _start_depth(p0, u, h, r + rest_speed * h, j, kind, center, rotation, face_start,
                        face_count, face_normal, face_offset, cap_a, cap_b, cap_radius, dim) > 0.0


def _pushout(depth: F64, step: float, start: Callable[[np.ndarray], F64]) -> F64:
    """How far to push out each particle found ``depth`` inside its collider, as C's pushout()
    and plane_pushout(): all of it, unless it began the substep inside by more than step =
    MAX_PUSHOUT_SPEED h (``start(rows)``: how deep those rows' starts lay); then it stays that
    much less deep than it began. Starts are looked at only where the limit can matter."""
    out = depth.copy()
    far = np.flatnonzero(depth > step)
    if len(far):
        keep = start(far) - step
        d = depth[far]
        out[far] = np.where(keep > 0.0, np.where(d > keep, d - keep, 0.0), d)
    return out


def _surface_velocity(x: F64, j: np.ndarray, center: F64, velocity: F64, angular_velocity: F64,
                      dim: int) -> F64:
    """``u = v_c + w x (x - c)`` of colliders ``j`` at points ``x``."""
    rel = x - center[j]
    w = angular_velocity[j]
    u = np.empty_like(x)
    if dim == 2:
        u[:, 0] = velocity[j, 0] + -w[:, 2] * rel[:, 1]
        u[:, 1] = velocity[j, 1] + w[:, 2] * rel[:, 0]
    else:
        u[:, 0] = velocity[j, 0] + (w[:, 1] * rel[:, 2] - w[:, 2] * rel[:, 1])
        u[:, 1] = velocity[j, 1] + (w[:, 2] * rel[:, 0] - w[:, 0] * rel[:, 2])
        u[:, 2] = velocity[j, 2] + (w[:, 0] * rel[:, 1] - w[:, 1] * rel[:, 0])
    return u


Planes = list[tuple[F64, float]]  # still planes in the world frame: (normal n, offset o of n . y <= o)


def _still_planes(kind: I32, center: F64, rotation: F64, velocity: F64, angular_velocity: F64,
                  face_start: I32, face_count: I32, face_normal: F64, face_offset: F64, k: int,
                  dim: int) -> Planes | None:
    """When every collider is a still plane (a floor, walls; at most 8, as C takes them), each
    one's world normal and offset, computed as C computes them; else None."""
    if k > 8 or not ((kind[:k] == POLYTOPE).all() and (face_count[:k] == 1).all()
                     and not velocity[:k].any() and not angular_velocity[:k].any()):
        return None
    planes = []
    for j in range(k):
        nl, ol, c = face_normal[face_start[j]], float(face_offset[face_start[j]]), center[j]
        pw = _to_world(nl[None, :], rotation[j], dim)[0]
        s = 0.0
        for a in range(dim):
            s = s + float(pw[a]) * float(c[a])
        planes.append((pw, ol + s))
    return planes


def _near_planes(pos: F64, radius: F64, n: int, planes: Planes, dim: int) -> np.ndarray:
    """Which particles may touch a still plane when every collider is one: not those above
    every plane by more than r (C's above_plane: the search's depth r - (n . x - o), computed
    the same way, is then not positive)."""
    x, r = pos[:n], radius[:n]
    near = np.zeros(n, dtype=bool)
    for pw, o in planes:
        near |= ~(_vdot(pw, x, dim) - o > r)
    return near


def _plane_deepest(idx: np.ndarray, pos: F64, radius: F64, planes: Planes,
                   dim: int) -> tuple[F64, np.ndarray, F64]:
    """C's plane_deepest(): each particle's deepest still plane, in the world frame (a plane's
    contact is at depth r - (n . x - o) along n when that is positive)."""
    x, r = pos[idx], radius[idx]
    best, best_j, best_n = np.zeros(len(idx)), np.full(len(idx), -1), np.zeros((len(idx), dim))
    for j, (pw, o) in enumerate(planes):
        depth = r - (_vdot(pw, x, dim) - o)
        deeper = depth > best
        best = np.where(deeper, depth, best)
        best_j[deeper] = j
        best_n[deeper] = pw
    return best, best_j, best_n


def _plane_start_depth(p0: F64, r: F64, j: np.ndarray, planes: Planes, dim: int) -> F64:
    """C's plane_start_depth(): how deep each start lies inside its plane j grown by r."""
    out = np.zeros(len(j))
    for jj, (pw, o) in enumerate(planes):
        sel = np.flatnonzero(j == jj) if len(planes) > 1 else slice(None)
        s0 = _vdot(pw, p0[sel], dim) - o
        out[sel] = np.where(s0 < r[sel], r[sel] - s0, 0.0)
    return out


@np.errstate(divide="ignore", invalid="ignore")  # masked-out rows may divide by zero
def collide(
    pos: F64, vel: F64, contact_collider: I32, contact_normal: F64, contact_impulse: F64,
    support: F64, stuck: I32, prev_pos: F64, radius: F64, mass: F64, inv_mass: F64, kind: I32,
    center: F64,
    rotation: F64, velocity: F64, angular_velocity: F64, restitution: F64, friction: F64,
    keep: F64, face_start: I32, face_count: I32, face_normal: F64, face_offset: F64,
    cap_a: F64, cap_b: F64, cap_radius: F64, bound: F64, grow: F64, n: int, k: int, nfaces: int,
    dim: int,
    iterations: int, h: float, rest_speed: float, threads: int, clear: int,
) -> int:
    """Particles against colliders: swept entry or nearest surface, deepest wins; response;
    then particles whose slip was undone are projected out again without friction; ``stuck``
    marks those whose slip static friction (friction > 0) undid. (C splits the particles over
    ``threads``; they are independent, so the twin needs none.)"""
    shape = (kind, center, rotation, face_start, face_count, face_normal, face_offset, cap_a,
             cap_b, cap_radius, bound, grow, k, dim, velocity, angular_velocity, h)
    shapes = (kind, center, rotation, face_start, face_count, face_normal, face_offset, cap_a, cap_b,
              cap_radius, dim)
    contacts = 0
    if clear:  # a frame's first substep: a new contact report
        contact_collider[:n] = -1
        contact_impulse[:n] = 0.0
    support[:n] = 0.0
    stuck[:n] = 0
    planes = _still_planes(kind, center, rotation, velocity, angular_velocity, face_start, face_count,
                           face_normal, face_offset, k, dim)
    movable = inv_mass[:n] != 0.0
    if planes is not None:  # C's block pre-pass, then the search in the world frame
        movable &= _near_planes(pos, radius, n, planes, dim)
    step = MAX_PUSHOUT_SPEED * h

    def find(idx: np.ndarray) -> tuple[F64, np.ndarray, F64]:
        if planes is None:
            return _deepest(idx, pos, prev_pos, radius, *shape)
        return _plane_deepest(idx, pos, radius, planes, dim)

    def push(best: F64, idx: np.ndarray, j: np.ndarray) -> F64:
        def start(far: np.ndarray) -> F64:
            p0, r, jf = prev_pos[idx[far]], radius[idx[far]], j[far]
            if planes is not None:
                return _plane_start_depth(p0, r, jf, planes, dim)
            u = _surface_velocity(p0, jf, center, velocity, angular_velocity, dim)
            return _start_depth(p0, u, h, r, jf, *shapes)

        return _pushout(best, step, start)

    active = np.flatnonzero(movable)
    slipped = np.zeros(n, dtype=bool)
    for _ in range(iterations):
        if not len(active) or not k:
            break
        best, best_j, best_n = find(active)
        found = best_j >= 0
        active, best, j_, nrm = active[found], best[found], best_j[found], best_n[found]
        if not len(active):
            break
        best = push(best, active, j_)
        contacts += len(active)
        x = pos[active] + best[:, None] * nrm
        u = _surface_velocity(x, j_, center, velocity, angular_velocity, dim)
        contact_collider[active] = j_
        contact_normal[active] = nrm
        support[active] = nrm
        vr = vel[active] - u
        vn = dot(vr, nrm, dim)
        app = vn < 0.0
        fast = -vn > rest_speed
        bounce = fast.copy()
        if fast.any():
            f = np.flatnonzero(fast)
            if planes is None:
                bounce[f] = ~_touching(prev_pos[active[f]], u[f], h, radius[active[f]], rest_speed,
                                       j_[f], *shapes)
            else:
                bounce[f] = ~(_plane_start_depth(prev_pos[active[f]], radius[active[f]] + rest_speed * h,
                                                 j_[f], planes, dim) > 0.0)
        vn_new = np.where(bounce, -restitution[j_] * vn, 0.0)
        dvn = vn_new - vn
        vt = vr - vn[:, None] * nrm
        vt_len = np.sqrt(dot(vt, vt, dim))
        limit = friction[j_] * dvn
        static = vt_len <= limit
        slip = (x - prev_pos[active]) - h * u
        sn = dot(slip, nrm, dim)
        x = np.where((app & static)[:, None], x - (slip - sn[:, None] * nrm), x)
        slipped[active] |= app & static
        stuck[active[app & static & (friction[j_] > 0.0)]] = 1
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(static, 0.0, (1.0 - limit / vt_len) * keep[j_])
        v_new = u + vt * scale[:, None] + vn_new[:, None] * nrm
        pos[active] = x
        vel[active] = np.where(app[:, None], v_new, vel[active])
        contact_impulse[active] = np.where(app, contact_impulse[active] + mass[active] * dvn,
                                           contact_impulse[active])
    active = np.flatnonzero(slipped)
    for _ in range(iterations):
        if not len(active):
            break
        best, best_j, best_n = find(active)
        found = best_j >= 0
        active, best, j_, nrm = active[found], best[found], best_j[found], best_n[found]
        if not len(active):
            break
        best = push(best, active, j_)
        x = pos[active] + best[:, None] * nrm
        pos[active] = x
        vr = vel[active] - _surface_velocity(x, j_, center, velocity, angular_velocity, dim)
        vn = dot(vr, nrm, dim)
        app = vn < 0.0
        vel[active] = np.where(app[:, None], vel[active] - vn[:, None] * nrm, vel[active])
        contact_impulse[active] = np.where(app, contact_impulse[active] + mass[active] * -vn,
                                           contact_impulse[active])
    return contacts
