"""Outline edges and surface triangles against colliders: a collider's corner, or the
end of a disc, a sphere or a segment, kept out of the edges between a closed 2D body's
outline particles, and out of the triangles of a closed 3D body's surface
(``csrc/src/edges.c``), so an obstacle smaller than the particle spacing cannot
slip between them.

Runs in the collide stage right after the particles meet the colliders (it
reads the colliders' tables and the bodies' outlines -- a 3D body's outline rows
are its surface, three a triangle -- and writes the same contact report) and
before the body contacts.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from pysoft._constants import CAPSULE
from pysoft._frame import COLLIDE, PARITY, Op, cached
from pysoft._kernels import Arg, Kernel, register
from pysoft._store import Field, Table
from pysoft.features._feature import PROBE_H, Context, Feature
from pysoft.features.bodies import MAX_MEMBERS
from pysoft.features.colliders import COLLIDER_FIELDS, _check_collide


def _check(arrays: dict[str, np.ndarray], sizes: dict[str, int]) -> None:
    _check_collide(arrays, sizes)
    nb, n = sizes["b"], sizes["n"]
    s, c, idx = arrays["outline_start"][:nb], arrays["outline_count"][:nb], arrays["outline"]
    if (c < 0).any() or (s < 0).any() or (s.astype(np.int64) + c > len(idx)).any():
        raise ValueError("edge_collide: outline_start/outline_count reach outside outline")
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ValueError(f"edge_collide: outline holds rows outside [0, {n})")


_P, _S, _K, _B = ("n", "dim"), ("n",), ("k",), ("b",)
_I = np.int32
_EDGE_COLLIDER_FIELDS = tuple(f for f in COLLIDER_FIELDS if f != "grow")
register(Kernel(
    "edge_collide", "edges",
    (Arg("pos", _P), Arg("vel", _P), Arg("contact_collider", _S, _I), Arg("contact_normal", _P),
     Arg("contact_impulse", _S), Arg("support", _P), Arg("stuck", _S, _I), Arg("edge_near", ("e",), _I),
     Arg("prev_pos", _P), Arg("radius", _S), Arg("mass", _S), Arg("inv_mass", _S),
     Arg("outline", ("e",), _I), Arg("outline_start", _B, _I), Arg("outline_count", _B, _I),
     Arg("body_flags", _B, _I), Arg("kind", _K, _I), Arg("center", ("k", "dim")),
     Arg("rotation", ("k", "dim", "dim")), Arg("velocity", ("k", "dim")),
     Arg("angular_velocity", ("k", 3)), Arg("restitution", _K), Arg("friction", _K), Arg("keep", _K),
     Arg("face_start", _K, _I), Arg("face_count", _K, _I), Arg("face_normal", ("nfaces", "dim")),
     Arg("face_offset", ("nfaces",)), Arg("cap_a", ("k", "dim")), Arg("cap_b", ("k", "dim")),
     Arg("cap_radius", _K), Arg("bound", _K)),
    ("n", "b", "k", "nfaces", "dim"), ("iterations", "reverse", "h", "rest_speed"),
    ("pos", "vel", "contact_collider", "contact_normal", "contact_impulse", "support", "stuck"),
    scratch=("edge_near",), check=_check))


class _EdgeTerm:
    """Outline edges (surface triangles in 3D) against colliders, after the particles met
    them; skipped while there is no body, or no collider with a corner or a capsule end
    (planes have none)."""

    def __init__(self, ctx: Context, near: Table) -> None:
        store = ctx.store
        self.ctx, self.P, self.B = ctx, store.particles, store.bodies
        self.C, self.faces = store.colliders, store.collider_faces
        a, b, c = self.P.arrays, self.B.arrays, self.C.arrays
        self.call = ctx.bind(
            "edge_collide", **{name: a[name] for name in (
                "pos", "vel", "contact_collider", "contact_normal", "contact_impulse", "support", "stuck",
                "prev_pos", "radius", "mass", "inv_mass")},
            edge_near=near.arrays["near"], outline=store.body_outlines.arrays["rows"],
            outline_start=b["outline_start"], outline_count=b["outline_count"], body_flags=b["flags"],
            **{name: c[name] for name in _EDGE_COLLIDER_FIELDS},
            face_normal=self.faces.arrays["normal"], face_offset=self.faces.arrays["offset"])
        self.featured = False  # whether any collider has a corner or a capsule end
        self._version = -1
        # a polytope with corners: a polygon (3 faces or more) in 2D, a Box (4 or more) in 3D
        self.least_faces = 3 if ctx.dim == 2 else 4
        self.label = ("outline edges against colliders" if ctx.dim == 2  # its name in an InstabilityError
                      else "surface triangles against colliders")

    def counts(self) -> tuple[int, int, int, int, int]:
        return self.P.n, self.B.n, self.C.n, self.faces.n, self.ctx.dim

    def needed(self) -> bool:
        """Whether there is a body and a collider with a corner or a capsule end."""
        C = self.C
        if not (C.n and self.B.n):
            return False
        if self._version != C.version:
            self.featured = bool(((C.view("kind") == CAPSULE) | (
                (C.view("face_count") >= self.least_faces) & (C.view("bound") < np.inf))).any())
            self._version = C.version
        return self.featured

    def run(self, h: float) -> None:
        if self.needed():  # odd substeps sweep the edges backward (see edges.c)
            s, p = self.ctx.settings, self.ctx.pipeline
            if self.call(*self.counts(), s._contact_iterations, p.substep % 2, h, s._restitution_threshold):
                p.moved = True  # an end it moved may be inside a collider now: collide again

    def ops(self, h: float) -> list[Op]:
        """The call of every substep (backward on odd ones); the collide-again pass waits on
        it (``pipeline.mover``)."""
        if not self.needed():
            return []
        s = self.ctx.settings
        op = cached(self, "edges", self.call, COLLIDE, vary=6, vary_kind=PARITY).set(
            *self.counts(), s._contact_iterations, 0, h, s._restitution_threshold)
        self.ctx.pipeline.movers.append(op)
        return [op]


class EdgeCollisions(Feature):
    """Closed bodies' outline edges (2D) or surface triangles (3D) against colliders' corners
    and capsule ends."""

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.term: _EdgeTerm | None = None
        # the cull at the pass's start, one flag per outline entry (the kernel's workspace)
        near = ctx.store.work_table("edge_collide_near", {"near": Field((), np.int32)}, MAX_MEMBERS)
        self.term = _EdgeTerm(ctx, near)
        ctx.pipeline.collide.append(self.term)

    def probes(self) -> dict[str, tuple[int, Callable[[], Any]]]:
        if self.term is None:
            return {}
        s = self.ctx.settings
        return {"edge_collide": (int(self.ctx.store.bodies.view("outline_count").sum()), functools.partial(
            self.term.call, *self.term.counts(), s._contact_iterations, 0, PROBE_H,
            s._restitution_threshold))}
