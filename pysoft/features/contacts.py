"""Body contacts: bodies against bodies, a body against itself, particles against
particles, and the body-contact report (``csrc/src/contacts.c``; a 3D world's surfaces of
triangles in ``csrc/src/contacts3d.c``, behind the same kernel).

Runs in the collide stage, after the colliders. It reads the bodies'
outlines, members and materials (``pysoft.features.bodies``) and each
particle's owner, material and filter; it owns the report columns and the
broad phase's workspace (both sized once, like every Store table).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from pysoft._frame import COLLIDE, Op, cached
from pysoft._kernels import Arg, Kernel, register
from pysoft._store import Field, Table
from pysoft.features._feature import PROBE_H, Context, Feature
from pysoft.features.bodies import MAX_BODIES, MAX_MEMBERS, SELF

MAX_BUCKETS = 1 << 22  # spatial hash buckets (the kernel uses what the scene needs)
MAX_ENTRIES = 1 << 24  # body boxes entered in the hash, summed over their cells
MAX_PAIRS = 1 << 24  # the candidate lists' (particle, body) pairs (more are listed in turns)


def _check(arrays: dict[str, np.ndarray], sizes: dict[str, int]) -> None:
    nb, n = sizes["b"], sizes["n"]
    for index, start, count in (("outline", "outline_start", "outline_count"),
                                ("member", "member_start", "member_count")):
        s, c, idx = arrays[start][:nb], arrays[count][:nb], arrays[index]
        if (c < 0).any() or (s < 0).any() or (s.astype(np.int64) + c > len(idx)).any():
            raise ValueError(f"body_contacts: {start}/{count} reach outside {index}")
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise ValueError(f"body_contacts: {index} holds rows outside [0, {n})")
    owner = arrays["owner"][:n]
    if ((owner < -2) | (owner >= nb)).any():
        raise ValueError("body_contacts: owner must be a body row, -1 (none) or -2 (several)")
    dim = sizes["dim"]
    if dim == 3 and (arrays["outline_count"][:nb] % 3).any():
        raise ValueError("body_contacts: a 3D body's outline (its surface) has three rows a triangle")
    if dim not in (2, 3) or sizes["nbuckets"] < 1 or sizes["nentries"] < 2**dim * nb or sizes["npairs"] < nb:
        raise ValueError("body_contacts: dim 2 or 3, with a hash of >= 1 bucket and >= 2**dim entries"
                         " a body, and room for >= 1 pair a body")


_P, _S, _B = ("n", "dim"), ("n",), ("b",)
_NO_PASS = np.uint64(0xFFFF_FFFF_FFFF_FFFF)  # a NaN: left_pos before a frame's first pass
_I = np.int32
register(Kernel(
    "body_contacts", "contacts",
    (Arg("pos", _P), Arg("vel", _P), Arg("contact_body", _S, _I), Arg("contact_point", _P),
     Arg("contact_normal", _P), Arg("contact_impulse", _S),
     Arg("snap", _P), Arg("aabb", ("b", 10)), Arg("bucket_start", ("nbuckets+1",), _I),
     Arg("bucket_body", ("nentries",), _I), Arg("cell_start", ("nbuckets+1",), _I),
     Arg("cell_particle", _S, _I), Arg("near", _S, _I), Arg("edge", ("e", 4)),
     Arg("fat_pos", _P), Arg("fat_first", _S, _I), Arg("fat_count", _S, _I),
     Arg("fat_body", ("npairs",), _I), Arg("fat_state", (8,)), Arg("fat_clear", ("npairs",)),
     Arg("fat_kept", ("npairs", 2)), Arg("fat_drift", ("b", 6)),
     Arg("reacted", _P), Arg("left_pos", _P), Arg("prev_pos", _P),
     Arg("support", _P), Arg("radius", _S), Arg("inv_mass", _S), Arg("owner", _S, _I),
     Arg("category", _S, _I), Arg("mask", _S, _I), Arg("friction", _S), Arg("restitution", _S),
     Arg("rest_pos", _P), Arg("outline", ("e",), _I), Arg("outline_start", _B, _I),
     Arg("outline_count", _B, _I), Arg("member", ("f",), _I), Arg("member_start", _B, _I),
     Arg("member_count", _B, _I), Arg("body_flags", _B, _I), Arg("body_category", _B, _I),
     Arg("body_mask", _B, _I), Arg("body_friction", _B), Arg("body_restitution", _B)),
    ("n", "b", "nbuckets", "nentries", "npairs", "dim"),
    ("iterations", "particle_collisions", "h", "rest_speed"),
    ("pos", "vel", "contact_body", "contact_point", "contact_normal", "contact_impulse", "left_pos"),
    scratch=("snap", "aabb", "bucket_start", "bucket_body", "cell_start", "cell_particle", "near",
             "edge", "fat_pos", "fat_first", "fat_count", "fat_body", "fat_state", "fat_clear",
             "fat_kept", "fat_drift", "reacted"),
    check=_check))


class BodyContacts(NamedTuple):
    """Contacts between bodies (and particles) in the last step, one row per particle that
    touched: the body whose outline or surface (or whose particle) it met -- -1 for a free particle --
    the last contact's point and normal (pointing toward the particle), and the normal
    impulse (N s) summed over the step's substeps."""

    particles: np.ndarray
    bodies: np.ndarray
    points: np.ndarray
    normals: np.ndarray
    impulses: np.ndarray


class _ContactTerm:
    label = "bodies against bodies"  # its name in an InstabilityError

    def __init__(self, ctx: Context, work: Table, buckets: Table, entries: Table, edges: Table,
                 pairs: Table, state: Table) -> None:
        self.ctx = ctx
        self.P, self.B = ctx.store.particles, ctx.store.bodies
        a, b = self.P.arrays, self.B.arrays
        members, outlines = ctx.store.body_members, ctx.store.body_outlines
        self.call = ctx.bind(
            "body_contacts", pos=a["pos"], vel=a["vel"], contact_body=a["touch_body"],
            contact_point=a["touch_point"], contact_normal=a["touch_normal"],
            contact_impulse=a["touch_impulse"], snap=a["snap"], aabb=work.arrays["aabb"],
            bucket_start=buckets.arrays["bucket_start"], bucket_body=entries.arrays["body"],
            cell_start=buckets.arrays["cell_start"], cell_particle=a["cell_particle"],
            near=a["near"], edge=edges.arrays["edge"], fat_pos=a["fat_pos"], fat_first=a["fat_first"],
            fat_count=a["fat_count"], fat_body=pairs.arrays["body"], fat_state=state.arrays["state"][0],
            fat_clear=pairs.arrays["clear"], fat_kept=pairs.arrays["kept"], fat_drift=work.arrays["drift"],
            reacted=a["reacted"], left_pos=a["left_pos"], prev_pos=a["prev_pos"],
            support=a["support"], radius=a["radius"], inv_mass=a["inv_mass"],
            owner=a["owner"], category=a["category"], mask=a["mask"], friction=a["friction"],
            restitution=a["restitution"], rest_pos=a["rest_pos"], outline=outlines.arrays["rows"],
            outline_start=b["outline_start"], outline_count=b["outline_count"],
            member=members.arrays["rows"], member_start=b["member_start"],
            member_count=b["member_count"], body_flags=b["flags"], body_category=b["category"],
            body_mask=b["mask"], body_friction=b["friction"], body_restitution=b["restitution"])
        self.buckets, self.entries, self.pairs = buckets.capacity - 1, entries.capacity, pairs.capacity
        self.reported = True  # whether the report (touch_*) may hold values since it was cleared

    def counts(self) -> tuple[int, int, int, int, int, int]:
        return self.P.n, self.B.n, self.buckets, self.entries, self.pairs, self.ctx.dim

    def first_substep(self) -> None:
        """A frame's first substep starts a new report (new rows start cleared), with no pass
        before it (``left_pos`` NaN, read in 3D only: see contacts3d.c)."""
        if self.ctx.dim == 3:
            self.P.view("left_pos").view(np.uint64)[:] = _NO_PASS  # the bytes of ``between``'s fill
        if self.reported:
            P = self.P
            P.view("touch_body")[:] = -1
            P.view("touch_impulse")[:] = 0.0
            self.reported = False

    def arguments(self, h: float) -> tuple[Any, ...] | None:
        """The kernel's counts and scalars, or None when there is nothing to touch (a lone
        body touches nothing unless it collides with itself: no call for it)."""
        s, nb = self.ctx.settings, self.B.n
        if self.P.n and s._body_collisions and (nb > 1 or s._particle_collisions
                                                or (nb == 1 and self.B.arrays["flags"][0] & SELF)):
            self.reported = True  # the kernel writes the report: clear it when the next frame starts
            return (*self.counts(), s._body_contact_iterations, int(s._particle_collisions), h,
                    s._restitution_threshold)
        return None

    def run(self, h: float) -> None:
        if self.ctx.pipeline.substep == 0:
            self.first_substep()
        if (args := self.arguments(h)) is not None:
            self.call(*args)

    def frame_start(self, h: float) -> tuple[bool, bool]:
        """A one-call frame's first substep: a new report; whether there is a call (it reads
        body 0's flags), and whether the pass after a settle may run (``selfish``)."""
        self.first_substep()
        return self.arguments(h) is not None, self.selfish()

    def selfish(self) -> bool:
        """Whether a body collides with itself in a 3D world (the pass after a settle runs
        then: ``_RecontactTerm``)."""
        B = self.B
        return bool(self.ctx.dim == 3 and B.n and (B.arrays["flags"][: B.n] & SELF).any())

    def watched(self) -> list[np.ndarray]:
        """What ``frame_start`` reads besides the rows and the settings: the bodies' flags."""
        return [self.B.view("flags")] if self.B.n else []

    def between(self) -> list[tuple[np.ndarray, int]]:
        """What ``frame_start`` does to the arrays at a later frame of the same plan (see
        pysoft._frame.Frame.between): in 3D, no pass before (left_pos NaN: bytes 0xFF); after a
        frame with a call, a new report (touch_body -1: bytes 0xFF; touch_impulse 0.0: zero
        bytes)."""
        P = self.P
        report = [(P.view("touch_body"), 0xFF), (P.view("touch_impulse"), 0)] if self.reported else []
        return [(P.view("left_pos"), 0xFF), *report] if self.ctx.dim == 3 else report

    def ops(self, h: float) -> list[Op]:
        """The call of every substep, after ``frame_start``."""
        args = self.arguments(h)
        return [] if args is None else [cached(self, "contacts", self.call, COLLIDE).set(*args)]


class _RecontactTerm:
    """Bodies against bodies once more, after a settle solve in a 3D world with a
    self-colliding body: the settle solves the constraints again after the contacts (around
    the particles static friction holds on a collider) and knows nothing of them, so it
    pulled a cloth's folds back into each other, every substep the cloth lay on a collider
    (scenes.drape3d: pairs at 0.25 of their radii's sum). The contact report goes on
    accumulating."""
    label = "bodies against bodies (again)"  # its name in an InstabilityError

    def __init__(self, term: _ContactTerm) -> None:
        self.term = term
        self.staged = 0  # substeps in which it ran in the stages

    @property
    def runs(self) -> int:
        """Substeps in which it ran, in the stages or in a frame's one call (for the tests)."""
        op = self.__dict__.get("_op_again")
        return self.staged + (0 if op is None else int(op.c.calls))

    def run(self, h: float) -> None:
        term = self.term
        if not (term.ctx.pipeline.settled and term.selfish()):
            return
        if (args := term.arguments(h)) is not None:
            self.staged += 1
            term.call(*args)

    def ops(self, h: float) -> list[Op]:
        """The call, in the substeps where the settle solved (``pipeline.settler``)."""
        term, settler = self.term, self.term.ctx.pipeline.settler
        if settler is None or not term.selfish() or (args := term.arguments(h)) is None:
            return []
        return [cached(self, "again", term.call, COLLIDE, after=settler).set(*args)]


class BodyCollisions(Feature):
    """Bodies against bodies and particles against particles; ``World.body_contacts``."""

    @staticmethod
    def particle_fields(dim: int) -> dict[str, Field]:
        vec = Field((dim,), np.float64)
        return {"touch_body": Field((), np.int32, -1), "touch_point": vec, "touch_normal": vec,
                "touch_impulse": Field((), np.float64),
                # the body-contact report (touch_*) and the kernel's workspace, one row per particle
                "snap": vec, "cell_particle": Field((), np.int32), "near": Field((), np.int32),
                "fat_pos": vec, "fat_first": Field((), np.int32), "fat_count": Field((), np.int32),
                "reacted": vec,
                # where the frame's last pass left each particle (NaN before it: see contacts3d.c)
                "left_pos": Field((dim,), np.float64, np.nan)}

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.reported = np.zeros(0, dtype=np.int64)  # body entities by row, as of the last step
        self._reported_version = -1
        self.term: _ContactTerm | None = None
        table = ctx.store.work_table
        # each body's box; in 3D, how far its particles are from the lists' positions (see contacts3d.c)
        work = table("body_contact_boxes", {"aabb": Field((10,), np.float64),
                                            "drift": Field((6,), np.float64)}, MAX_BODIES)
        buckets = table("body_contact_buckets", {"bucket_start": Field((), np.int32),
                                                 "cell_start": Field((), np.int32)}, MAX_BUCKETS + 1)
        entries = table("body_contact_entries", {"body": Field((), np.int32)}, MAX_ENTRIES)
        # each outline edge at the substep's start, one row per outline row
        edges = table("body_contact_edges", {"edge": Field((4,), np.float64)}, MAX_MEMBERS)
        # the candidate lists, kept from substep to substep while nothing moves far (see contacts.c)
        # and, in 3D, each pair's clearance and, while the lists are made again, the old lists'
        # pairs and clearances (see contacts3d.c)
        pairs = table("body_contact_pairs", {"body": Field((), np.int32), "clear": Field((), np.float64),
                                             "kept": Field((2,), np.float64)}, MAX_PAIRS)
        state = table("body_contact_lists", {"state": Field((8,), np.float64)}, 1, exact=True)
        self.term = _ContactTerm(ctx, work, buckets, entries, edges, pairs, state)
        ctx.pipeline.collide.append(self.term)
        self.again = _RecontactTerm(self.term)
        ctx.pipeline.resettle.append(self.again)  # after the colliders' again

    def after_frame(self) -> None:
        B = self.ctx.store.bodies
        if self._reported_version != B.version:
            self.reported = B.view("entity").copy()
            self._reported_version = B.version

    @property
    def body_contacts(self) -> BodyContacts:
        """Body contacts of the last step as arrays (see ``BodyContacts``); those with a body
        removed since are left out (it is no longer there to name)."""
        P = self.ctx.store.particles
        which = P.view("touch_body")
        rows = np.flatnonzero(which != -1)
        body = which[rows]
        bodies = np.where(body >= 0, self.reported[np.maximum(body, 0)] if len(self.reported)
                          else -1, -1) if len(rows) else np.zeros(0, dtype=np.int64)
        B = self.ctx.store.bodies
        if self._reported_version != B.version:  # bodies came or went since the step
            live = (bodies < 0) | np.isin(bodies, B.view("entity"))
            rows, bodies = rows[live], bodies[live]
        return BodyContacts(P.view("entity")[rows].copy(), bodies.astype(np.int64),
                            P.view("touch_point")[rows].copy(), P.view("touch_normal")[rows].copy(),
                            P.view("touch_impulse")[rows].copy())

    def probes(self) -> dict[str, tuple[int, Callable[[], Any]]]:
        if self.term is None:
            return {}
        s = self.ctx.settings
        return {"body_contacts": (self.ctx.store.particles.n, functools.partial(
            self.term.call, *self.term.counts(), s._body_contact_iterations, int(s._particle_collisions),
            PROBE_H, s._restitution_threshold))}
