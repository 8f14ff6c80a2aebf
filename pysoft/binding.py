"""Binding: the World's kernels bound to its Store arrays, rebuilt when the topology changes.

``bind_kernels(world)`` derives the index arrays (spring, constraint and
body rows from entity ids; collider faces; constraint batches) and binds
every kernel once, so that a step is one foreign call per kernel per pass.
The result is ``World._bound``; nothing here runs per step.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np

from pysoft import kernels
from pysoft.coloring import batches

if TYPE_CHECKING:
    from pysoft.world import World

COLLIDER_FIELDS = ("kind", "center", "rotation", "velocity", "angular_velocity", "restitution",
                   "friction", "keep", "face_start", "face_count", "cap_a", "cap_b", "cap_radius",
                   "bound", "grow")


def bind_kernels(world: World) -> SimpleNamespace:
    """Rebuild the index arrays and bind every kernel to the world's current Store arrays."""
    s = world.store
    P, S, C, W, B = s.particles, s.springs, s.colliders, s.wells, s.bodies
    D, V = s.distances, s.volumes
    for table, rows in ((S, "pairs"), (D, "pairs"), (V, "simplices")):
        table.view(rows)[:] = s.rows_of(table.view("ends"))
    face_normal, face_offset = gather_faces(world)
    body_arrays = gather_bodies(world)
    v = P.view
    shared = {"mass": v("mass"), "inv_mass": v("inv_mass")}
    bind = kernels.bind
    be = world.backend
    b = SimpleNamespace(force=v("force"), force_builtin=v("force_builtin"), force1=v("force1"),
                        f2=v("f2"), f3=v("f3"), f4=v("f4"))

    def forces(pos: np.ndarray, vel: np.ndarray, force: np.ndarray) -> Any:
        gravity = bind("gravity_drag", be, force=force, vel=vel, gravity=world._gravity, **shared)
        springs = bind("springs", be, force=force, pos=pos, vel=vel, pairs=S.view("pairs"),
                       rest_length=S.view("rest_length"), stiffness=S.view("stiffness"),
                       damping=S.view("damping"))
        wells = bind("radial_gravity", be, force=force, pos=pos, well_center=W.view("center"),
                     well_strength=W.view("strength"), well_falloff=W.view("falloff"),
                     well_min_distance=W.view("min_distance"), **shared)
        has_wells = W.n > 0
        pressure = bind("pressure", be, force=force, pos=pos, **body_arrays["pressure"])
        matching = bind("shape_match", be, force=force, pos=pos, vel=vel, **shared,
                        **body_arrays["shape_match"])
        has_pressure = bool(B.n and body_arrays["pressure"]["body_count"].any())
        has_matching = bool(B.n and body_arrays["shape_match"]["body_count"].any())

        def evaluate() -> None:
            gravity(world._drag)
            if has_wells:
                wells()
            springs()
            if has_pressure:
                pressure()
            if has_matching:
                matching()

        return evaluate

    step = {"pos": v("pos"), "vel": v("vel"), "inv_mass": v("inv_mass")}
    moving = {**step, "prev_pos": v("prev_pos")}
    b.forces = forces(v("pos"), v("vel"), v("force"))
    b.symplectic_euler = bind("symplectic_euler", be, force=v("force"), **moving)
    b.explicit_euler = bind("explicit_euler", be, force=v("force"), **moving)
    b.xpbd_predict = bind("xpbd_predict", be, force=v("force"), **moving)
    b.xpbd_velocity = bind("xpbd_velocity", be, **moving)
    b.verlet_drift = bind("verlet_drift", be, vel_pred=v("vel_pred"), force=v("force"), **moving)
    b.forces_verlet = forces(v("pos"), v("vel_pred"), v("force1"))
    b.verlet_kick = bind("verlet_kick", be, vel=v("vel"), force0=v("force"),
                         force1=v("force1"), inv_mass=v("inv_mass"))
    stage = {"pos_out": v("stage_pos"), **step, "inv_mass": v("inv_mass")}
    b.rk4_stage2 = bind("rk4_stage", be, vel_out=v("v2"), dpos=v("vel"), force=v("force"), **stage)
    b.rk4_stage3 = bind("rk4_stage", be, vel_out=v("v3"), dpos=v("v2"), force=v("f2"), **stage)
    b.rk4_stage4 = bind("rk4_stage", be, vel_out=v("v4"), dpos=v("v3"), force=v("f3"), **stage)
    b.forces_f2 = forces(v("stage_pos"), v("v2"), v("f2"))
    b.forces_f3 = forces(v("stage_pos"), v("v3"), v("f3"))
    b.forces_f4 = forces(v("stage_pos"), v("v4"), v("f4"))
    b.rk4_combine = bind("rk4_combine", be, v1=v("vel"), v2=v("v2"), v3=v("v3"), v4=v("v4"),
                         f1=v("force"), f2=v("f2"), f3=v("f3"), f4=v("f4"), **moving)
    b.collide = bind("collide", be, pos=v("pos"), vel=v("vel"),
                     contact_collider=v("contact_collider"), contact_normal=v("contact_normal"),
                     contact_impulse=v("contact_impulse"), prev_pos=v("prev_pos"),
                     radius=v("radius"), face_normal=face_normal, face_offset=face_offset,
                     **shared, **{name: C.view(name) for name in COLLIDER_FIELDS})
    d_order, d_batches = batches(D.view("pairs"))
    v_order, v_batches = batches(V.view("simplices"))
    b.lambdas = (D.view("lambda"), V.view("lambda"))
    b.xpbd_distance = bind("xpbd_distance", be, pos=v("pos"), vel=v("vel"),
                           **{"lambda": D.view("lambda")}, inv_mass=v("inv_mass"),
                           pairs=D.view("pairs"), rest_length=D.view("rest_length"),
                           compliance=D.view("compliance"), order=d_order, batch_start=d_batches)
    b.xpbd_volume = bind("xpbd_volume", be, pos=v("pos"), vel=v("vel"),
                         **{"lambda": V.view("lambda")}, inv_mass=v("inv_mass"),
                         simplices=V.view("simplices"), rest_volume=V.view("rest_volume"),
                         compliance=V.view("compliance"), order=v_order, batch_start=v_batches)
    b.constraints = (D.n > 0, V.n > 0)
    b.tearing = bool(np.isfinite(S.view("max_strain")).any())
    b.find_unstable = bind("find_unstable", be, pos=v("pos"), vel=v("vel"))
    return b

def gather_bodies(world: World) -> dict[str, dict[str, np.ndarray]]:
    """The body models' concatenated index arrays (empty ranges where a model is absent)."""
    B, bodies = world.store.bodies, world._bodies()
    rows_of = world.store.rows_of

    def ranges(lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        counts = np.array([len(x) for x in lists], dtype=np.int32)
        flat = np.concatenate([np.zeros(0, dtype=np.int64)] + [np.asarray(x, np.int64) for x in lists])
        return rows_of(flat).astype(np.int32), (np.cumsum(counts) - counts).astype(np.int32), counts

    outline, o_start, o_count = ranges(
        [b.outline if b.pressure is not None and len(b.outline) >= 3 else [] for b in bodies])
    matched = [b if b.shape_matching is not None else None for b in bodies]
    members, m_start, m_count = ranges([b.particles if b else [] for b in matched])
    rest = np.concatenate([np.zeros((0, world.dim))] + [b.rest for b in matched if b is not None])
    return {
        "pressure": {"outline": outline, "body_start": o_start, "body_count": o_count,
                     "amount": B.view("amount"), "min_area": B.view("min_area")},
        "shape_match": {"members": members, "rest": np.ascontiguousarray(rest),
                        "body_start": m_start, "body_count": m_count,
                        "stiffness": B.view("match_stiffness"), "damping": B.view("match_damping")},
    }

def gather_faces(world: World) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate the polytope colliders' local faces in row order; set face_start."""
    C = world.store.colliders
    normals, offsets, start = [np.zeros((0, world.dim))], [np.zeros(0)], 0
    for row, entity in enumerate(C.view("entity")):
        geo = world.collider(int(entity)).geometry
        C.view("face_start")[row] = start
        normals.append(geo.face_normal)
        offsets.append(geo.face_offset)
        start += len(geo.face_offset)
    return np.ascontiguousarray(np.concatenate(normals)), np.ascontiguousarray(np.concatenate(offsets))
