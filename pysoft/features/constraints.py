"""XPBD constraints: distance, area (2D) / volume (3D) over simplices, with compliance, and
an elastic material over tetrahedra set by Young's modulus and Poisson's ratio
(``csrc/src/constraints.c``).

Each constraint table is solved in batches of constraints that share no
particle (``pysoft._coloring``), kept up to date as constraints come and go.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from pysoft import _validate
from pysoft._coloring import Batches
from pysoft._ecs import Column, RowView
from pysoft._frame import COLLIDE, CONSTRAINTS, Op, cached
from pysoft._kernels import REGISTRY, Arg, Kernel, register
from pysoft._store import Field
from pysoft.features._feature import PROBE_H, Context, Feature
from pysoft.features._links import Links, Pair, pair_entities
from pysoft.features._materials import MaterialConstraint, material_compliance
from pysoft.features.bodies import check_ranges
from pysoft.twins.constraints import _simplex

MAX_CONSTRAINTS = 1 << 25


def _check_batches(index: str) -> Any:
    def check(arrays: dict[str, np.ndarray], sizes: dict[str, int]) -> None:
        order, start, m = arrays["order"], arrays["batch_start"], len(arrays[index])
        if len(order) != m or (m and not np.array_equal(np.sort(order), np.arange(m))):
            raise ValueError("order must be a permutation of the constraints")
        if len(start) < 1 or start[0] != 0 or start[-1] != m or (np.diff(start) < 0).any():
            raise ValueError("batch_start must rise from 0 to the constraint count")
        if not m:
            return
        rows = arrays[index][order].reshape(m, -1).astype(np.int64)
        batch = np.repeat(np.arange(len(start) - 1), np.diff(start))[:, None]
        keys = (batch * max(sizes.get("n", 1), 1) + rows).ravel()
        if len(np.unique(keys)) != keys.size:  # the solver's batches are independent by contract
            raise ValueError(f"batch_start: two constraints of one batch share a particle ({index})")

    return check


_P, _S = ("n", "dim"), ("n",)
_SOLVE = (Arg("order", ("m",), np.int32), Arg("batch_start", ("nbatch+1",), np.int32))
_SPIN = (Arg("mass", _S), Arg("inv_mass", _S), Arg("support", _P), Arg("owner", _S, np.int32),
         Arg("linked", ("b",), np.int32),
         Arg("members", ("e",), np.int32), Arg("body_start", ("b",), np.int32),
         Arg("body_count", ("b",), np.int32))
register(
    Kernel("xpbd_distance", "constraints",
           (Arg("pos", _P), Arg("vel", _P), Arg("withheld", _P), Arg("lambda", ("m",)),
            Arg("inv_mass", _S), Arg("prev_pos", _P), Arg("pairs", ("m", 2), np.int32),
            Arg("rest_length", ("m",)), Arg("compliance", ("m",)), *_SOLVE),
           ("m", "nbatch", "dim"), ("follow", "h"), ("pos", "vel", "withheld", "lambda"),
           index_args=(("pairs", "n"),), check=_check_batches("pairs")),
    Kernel("settle_mass", "constraints",
           (Arg("settle_inv_mass", _S), Arg("support", _P), Arg("stuck", _S, np.int32),
            Arg("inv_mass", _S),
            Arg("members", ("e",), np.int32), Arg("body_start", ("b",), np.int32),
            Arg("body_count", ("b",), np.int32)),
           ("n", "b", "dim"), (), ("settle_inv_mass",), check=check_ranges("members", any_dim=True)),
    Kernel("settle_plan", "constraints",
           (Arg("settle_order", ("m",), np.int32), Arg("settle_start", ("nbatch+1",), np.int32),
            *_SOLVE, Arg("rows", ("m", "k"), np.int32), Arg("settle_inv_mass", ("n",))),
           ("m", "nbatch", "k"), (), ("settle_order", "settle_start"),
           index_args=(("rows", "n"),), check=_check_batches("rows")),
    Kernel("zero", "constraints", (Arg("values", ("m",)),), ("m",), (), ("values",)),
    Kernel("untangle", "constraints",
           (Arg("pos", _P), Arg("vel", _P), Arg("withheld", _P), Arg("tangled", ("b",), np.int32),
            Arg("inv_mass", _S), Arg("support", _P), Arg("owner", _S, np.int32),
            Arg("simplices", ("m", "dim+1"), np.int32), Arg("rest_volume", ("m",)),
            Arg("members", ("e",), np.int32), Arg("rest", ("e", "dim")),
            Arg("body_start", ("b",), np.int32), Arg("body_count", ("b",), np.int32)),
           ("n", "m", "b", "dim"), ("h",), ("pos", "vel", "withheld", "tangled"),
           index_args=(("simplices", "n"),), check=check_ranges("members", any_dim=True)),
    Kernel("spin_record", "constraints",
           (Arg("spin", ("b", 3)), Arg("pos", _P), Arg("vel", _P), *_SPIN),
           ("n", "b", "dim"), (), ("spin",), check=check_ranges("members", any_dim=True)),
    Kernel("spin_keep", "constraints",
           (Arg("vel", _P), Arg("withheld", _P), Arg("spin", ("b", 3)), Arg("pos", _P),
            Arg("prev_pos", _P), *_SPIN[:5], Arg("tangled", ("b",), np.int32), *_SPIN[5:]),
           ("n", "b", "dim"), ("mode", "h"), ("vel", "withheld"),
           check=check_ranges("members", any_dim=True)),
    Kernel("xpbd_volume", "constraints",
           (Arg("pos", _P), Arg("vel", _P), Arg("withheld", _P), Arg("lambda", ("m",)),
            Arg("inv_mass", _S), Arg("simplices", ("m", "dim+1"), np.int32),
            Arg("rest_volume", ("m",)), Arg("compliance", ("m",)), *_SOLVE),
           ("m", "nbatch", "dim"), ("follow", "h"), ("pos", "vel", "withheld", "lambda"),
           index_args=(("simplices", "n"),), check=_check_batches("simplices")),
    Kernel("xpbd_material", "constraints",
           (Arg("pos", _P), Arg("vel", _P), Arg("withheld", _P), Arg("lambda", ("m", 2)),
            Arg("inv_mass", _S), Arg("tets", ("m", 4), np.int32), Arg("dm_inv", ("m", 9)),
            Arg("compliance", ("m", 2)), *_SOLVE),
           ("m", "nbatch", "dim"), ("h",), ("pos", "vel", "withheld", "lambda"),
           index_args=(("tets", "n"),), check=_check_batches("tets")),
)


class DistanceConstraint(Pair):
    """An XPBD distance constraint between particles ``a`` and ``b``."""

    __slots__ = ()

    rest_length = Column("rest_length", "Rest length (m).", _validate.nonnegative)
    compliance = Column("compliance", "Compliance (m/N): 0 is rigid, 1/k is a spring of k.",
                        _validate.nonnegative)


class VolumeConstraint(RowView):
    """An XPBD constraint on a simplex's signed area (2D triangle) or volume (3D tetrahedron)."""

    __slots__ = ()

    rest_volume = Column("rest_volume", "Rest area (m^2, 2D) or volume (m^3, 3D), signed.")
    compliance = Column("compliance", "Compliance: 0 keeps the area or volume exactly.",
                        _validate.nonnegative)

    @property
    def particles(self) -> list[int]:
        """The simplex's particle entities."""
        return [int(e) for e in self.table.arrays["ends"][self.row]]


class _Solver:
    """One constraint kind: its links, batches and bound kernel."""

    def __init__(self, ctx: Context, kernel: str, name: str, width: int, index: str,
                 fields: dict[str, Field], binds: tuple[str, ...]) -> None:
        """``fields``: the table's columns besides the links' own (``lambda`` among them);
        ``binds``: those the kernel reads or writes, after the particles' and before the
        batches' (``order``, ``batch_start``)."""
        self.ctx, self.kernel = ctx, kernel
        self.links = Links(ctx, name, width, index, {
            **fields, "colour": Field((), np.int32), "slot": Field((), np.int32)}, MAX_CONSTRAINTS)
        self.table = T = self.links.table
        # the multipliers, zeroed before each solve (``per`` of them a constraint)
        self.per = int(np.prod(fields["lambda"].shape, dtype=np.int64))
        self.zero = ctx.bind("zero", values=T.arrays["lambda"].reshape(-1))
        self.batches = Batches(T, ctx.store)
        a = ctx.store.particles.arrays
        rest_of = {**{f: T.arrays[f] for f in (index, *binds)}, "order": self.batches.plan_order,
                   "batch_start": self.batches.plan_start}
        spec = REGISTRY[kernel]
        moving = {f: a[f] for f in ("pos", "vel", "withheld", "prev_pos")
                  if any(arg.name == f for arg in spec.arrays)}
        # whether the kernel can leave the velocities alone (follow 0: the positions-only solve)
        self.follows = "follow" in spec.scalars
        self.solve = ctx.bind(kernel, inv_mass=a["inv_mass"], **moving, **rest_of)
        # the settle solve: particles static friction holds this substep count as immovable;
        # it solves its own plan, the solve plan less the constraints it would leave as they are
        # (``settle_plan``: none of their particles movable in it)
        store, cap = ctx.store, T.capacity
        settle_order = store.work_table(f"{name}.settle", {"row": Field((), np.int32)},
                                        cap, exact=True).arrays["row"]
        settle_start = store.work_table(f"{name}.settle_batches", {"start": Field((), np.int32)},
                                        cap + 1, exact=True).arrays["start"]
        self.settle = ctx.bind(kernel, inv_mass=a["settle_inv_mass"], **moving,
                               **{**rest_of, "order": settle_order, "batch_start": settle_start})
        self.width = T.arrays[index].shape[1]
        self.settle_plan = ctx.bind("settle_plan", settle_order=settle_order, settle_start=settle_start,
                                    order=self.batches.plan_order, batch_start=self.batches.plan_start,
                                    rows=T.arrays[index], settle_inv_mass=a["settle_inv_mass"])

    def run(self, nbatch: int, dim: int, h: float, settle: bool, follow: int) -> None:
        """One sweep over the constraints (the settle solve's if ``settle``); ``follow`` 0:
        the velocities are left alone where the kernel can leave them (distances and volumes;
        the material kernel's always follow)."""
        (self.settle if settle else self.solve)(*self.arguments(nbatch, dim, h, follow))

    def arguments(self, nbatch: int, dim: int, h: float, follow: int) -> tuple[Any, ...]:
        """A sweep's counts and scalars."""
        m = self.table.n
        return (m, nbatch, dim, follow, h) if self.follows else (m, nbatch, dim, h)

    def add(self, what: str, make: Any, ends: np.ndarray, rows: np.ndarray, **values: Any) -> list[int]:
        entities = self.links.add(what, make, ends, rows, **values)
        self.batches.add(np.arange(self.table.n - len(ends), self.table.n))
        return cast(list[int], entities.tolist())

    def remove(self, entities: list[int]) -> None:
        self.batches.remove(self.table.rows(entities))
        _, moved_from, moved_to = self.links.remove(entities)
        self.batches.moved(moved_from, moved_to)


class _ConstraintTerm:
    """Zero the multipliers and ``withheld`` (the velocity the corrections' caps withheld, and
    the untangle pass's moves, which integrator "xpbd"'s velocity update leaves out), put
    tangled bodies back at their rest shape (``_UntangleTerm``), then
    ``constraint_iterations`` sweeps: distances, then volumes, then materials."""
    label = "XPBD constraints"  # its name in an InstabilityError

    def __init__(self, ctx: Context, solvers: tuple[_Solver, ...], untangle: _UntangleTerm,
                 spin: _SpinTerm) -> None:
        self.ctx, self.solvers, self.untangle, self.spin = ctx, solvers, untangle, spin
        self.P = P = ctx.store.particles
        self.zero = ctx.bind("zero", values=P.arrays["withheld"].reshape(-1))

    def live(self) -> list[_Solver]:
        """The solvers that have constraints."""
        return [s for s in self.solvers if s.table.n]

    def run(self, h: float) -> None:
        live = self.live()
        if not live:
            return
        self.zero(self.P.n * self.ctx.dim)
        self.untangle.run(h)
        mode = self.spin.mode(self.positions_only(False))
        if mode != 2:
            self.spin.record()
        self.sweep(live, h, settle=False)
        self.spin.keep(h, mode)

    def ops(self, h: float) -> list[Op]:
        """``run``'s calls."""
        live = self.live()
        if not live:
            return []
        ops = [cached(self, "withheld", self.zero, CONSTRAINTS).set(self.P.n * self.ctx.dim),
               *self.untangle.ops(h)]
        mode = self.spin.mode(self.positions_only(False))
        if mode != 2:
            ops += self.spin.record_ops()
        return [*ops, *self.sweep_ops(live, h), *self.spin.keep_ops(h, mode)]

    def sweep(self, live: list[_Solver], h: float, settle: bool) -> None:
        for _, _, call, args in self.sweep_calls(live, h, settle):
            call(*args)

    def sweep_ops(self, live: list[_Solver], h: float, after: Op | None = None) -> list[Op]:
        """``sweep``'s calls as ops: the main solve's, or (``after``: the settle_mass op, whose
        result says whether it runs) the settle solve's."""
        key, stage = ("settle", COLLIDE) if after is not None else ("solve", CONSTRAINTS)
        return [cached(s, f"{key}_{tag}", call, stage, after=after).set(*args)
                for s, tag, call, args in self.sweep_calls(live, h, after is not None)]

    def sweep_calls(self, live: list[_Solver], h: float,
                    settle: bool) -> list[tuple[_Solver, str | int, Any, tuple[Any, ...]]]:
        """One solve's calls, as (solver, "plan", "zero" or the iteration, bound kernel, its
        counts and scalars): each live solver's multipliers zeroed (they accumulate over the
        substep's iterations), then ``constraint_iterations`` sweeps over the solvers in turn
        (the settle solve's if ``settle``, each solver's settle plan made first)."""
        plans: list[int] = []
        calls: list[tuple[_Solver, str | int, Any, tuple[Any, ...]]] = []
        for s in live:
            plans.append(s.batches.plan(s.links.index))
            if settle:
                calls.append((s, "plan", s.settle_plan, (s.table.n, plans[-1], s.width)))
            calls.append((s, "zero", s.zero, (s.table.n * s.per,)))
        dim = self.ctx.dim
        follow = int(not self.positions_only(settle))
        for k in range(self.ctx.settings._constraint_iterations):
            for s, nbatch in zip(live, plans, strict=True):
                calls.append((s, k, s.settle if settle else s.solve, s.arguments(nbatch, dim, h, follow)))
        return calls

    def positions_only(self, settle: bool) -> bool:
        """Whether the sweep can leave the velocities alone: the main solve (not the settle)
        of a 3D world under integrator "xpbd", whose velocity update v = (x - p) / h -
        withheld (the Constraints stage's, right after this term) sets every velocity the
        solve would have moved (the distances' caps take the ends' relative velocity from
        the positions instead). The 2D solve's vectorised loop keeps the velocities
        following."""
        return not settle and self.ctx.dim == 3 and self.ctx.settings._integrator == "xpbd"


class _SettleTerm:
    """After the collide stage, the constraints are solved again with the particles static
    friction holds in this substep (``stuck``) immovable.

    A particle a collider holds only along its normal (a frictionless or a sliding contact)
    keeps its inverse mass: immovable, it took the tangential part of its constraints'
    corrections from the collider, a force along the surface that no frictionless contact
    exerts, and an XPBD body resting on a frictionless floor slid away (0.75 m/s after 10 s).
    Skipped when static friction holds no particle.

    Static friction puts a held particle back where the substep began, after the constraint
    solve had moved it; its neighbours kept their share of that correction (and, following
    it, velocity). Left to the next substep, the constraint would pull them back, and back
    again: a substep-long cycle of corrections that keeps a resting XPBD ring rocking at
    0.1 m/s. Solved again at once around the held particles, the constraints end the
    substep satisfied and the velocities consistent with the positions.

    A body held from opposite sides (two of its held particles' contact normals more than
    120 degrees apart: pressed between a plate and the floor, or between two walls) sits the
    settle out: all its members count as held. Its constraints cannot all hold there (an
    incompressible body pressed flat), and with the held members immovable the settle put the
    whole of each substep's conflict into the few free ones, and velocity after it: pressed
    XPBD discs came out from under a plate at 10 m/s, and 7 of 27 sizes were still moving
    10 s after the release (1 since).

    A body none of whose members is stuck sits the settle out too (a row it shares with a body
    that has one excepted): it has nothing the settle corrects, and solved again it got a third
    sweep in each substep in which any particle anywhere was stuck, so its stiffness hung on
    other bodies' contacts. The settle solves its own plan (``settle_plan``), the solve plan
    less the constraints it would leave as they are (none of their particles movable in it):
    in a pile, the bodies resting on other bodies cost it nothing.
    """
    label = "XPBD settle"  # its name in an InstabilityError

    def __init__(self, ctx: Context, term: _ConstraintTerm) -> None:
        self.ctx, self.term, self.P = ctx, term, ctx.store.particles
        self.staged = 0  # substeps in which it solved in the stages
        self.firsts: dict[int, Op] = {}  # the first op of each settle solve a frame in one call made
        self.mass: Callable[..., Any] | None = None  # the settle_mass kernel, bound at first use
        self.bodies: Any = None

    @property
    def runs(self) -> int:
        """Substeps in which it solved, in the stages or in a frame's one call (for the
        kernel-call accounting in the tests)."""
        return self.staged + sum(int(op.c.calls) for op in self.firsts.values())

    def ops(self, h: float) -> list[Op]:
        """``run``'s calls: settle_mass every substep, the solve after it where it found a
        particle stuck (its op is ``pipeline.settler`` and one of ``pipeline.movers``)."""
        live = self.term.live()
        if not (live and self.ctx.store.colliders.n):
            return []
        mass = cached(self, "mass", self.bound(), COLLIDE).set(self.P.n, self.bodies.n, self.ctx.dim)
        pipeline = self.ctx.pipeline
        pipeline.movers.append(mass)
        pipeline.settler = mass
        ops = self.term.sweep_ops(live, h, after=mass)
        self.firsts[id(ops[0])] = ops[0]
        return [mass, *ops]

    def bound(self) -> Callable[..., Any]:
        """The settle_mass kernel, bound on first use (the first frame): the bodies' table is
        made after this feature's."""
        if self.mass is None:
            B, members = self.ctx.store.tables["bodies"], self.ctx.store.tables["body_members"]
            a = self.P.arrays
            self.bodies = B
            self.mass = self.ctx.bind("settle_mass", settle_inv_mass=a["settle_inv_mass"],
                                      support=a["support"], stuck=a["stuck"], inv_mass=a["inv_mass"],
                                      members=members.arrays["rows"], body_start=B.arrays["member_start"],
                                      body_count=B.arrays["member_count"])
        return self.mass

    def run(self, h: float) -> None:
        P, mass = self.P, self.bound()
        live = self.term.live()
        if not (live and self.ctx.store.colliders.n):
            return
        if not mass(P.n, self.bodies.n, self.ctx.dim):  # no particle stuck
            return
        self.staged += 1
        self.term.sweep(live, h, settle=True)
        self.ctx.pipeline.moved = self.ctx.pipeline.settled = True


class _UntangleTerm:
    """Before each substep's constraint solve (``_ConstraintTerm``): a body whose own area
    constraints (all three corners its members; in 3D volume constraints, four) have one turned
    inside out, and that no collider holds from opposite sides, has its movable members put at
    its rest shape, best-fit rotated about their mean, moving as a rigid body with their mean
    velocity and best-fit spin (constraints.c). The move is not velocity: under integrator
    "xpbd", whose velocity update is the substep's displacement over h, it goes into
    ``withheld`` (less the velocity change).

    Put back before the solve, the body's constraints have nothing large to correct. Put back
    after it (as the collide stage's first pass), a mirrored XPBD cube in zero gravity came
    back spinning at 1.7 m/s: the solve's corrections of its inside-out tetrahedra, half a
    metre in one substep, keep angular momentum only to first order in their size.

    A body tangled by a press (a member pushed through its neighbours) has conflicting
    constraints: each substep's solve moves the members one way and the next the other, and
    velocity follows. A 0.3 m XPBD disc of 12 segments pressed flat and released stayed tangled
    for 0.5 s, its members at 30-39 m/s: it threw itself 15 m across the floor and still
    rocked at 0.26 m/s 10 s after the release. Put back at its rest shape, it rests (put back
    with its members' velocities kept, a pressed 0.25 m disc of 16 segments flew 1 m high). A body
    still pressed from opposite sides is left alone (its rest shape does not fit between the
    plate and the floor); ``support`` is then the previous substep's contacts.
    """
    label = "XPBD untangle"  # its name in an InstabilityError

    def __init__(self, ctx: Context, volumes: _Solver) -> None:
        self.ctx, self.volumes, self.P = ctx, volumes, ctx.store.particles
        self.call: Callable[..., Any] | None = None
        self.bodies: Any = None

    def ops(self, h: float) -> list[Op]:
        """``run``'s call (the constraint term's)."""
        m = self.volumes.table.n
        if not m:
            return []
        call = self.bound()
        if not self.bodies.n:
            return []
        return [cached(self, "untangle", call, CONSTRAINTS).set(self.P.n, m, self.bodies.n, self.ctx.dim, h)]

    def bound(self) -> Callable[..., Any]:
        """The untangle kernel, bound on first use (the bodies' table is made after this
        feature's)."""
        if self.call is None:
            B, members = self.ctx.store.tables["bodies"], self.ctx.store.tables["body_members"]
            a, V = self.P.arrays, self.volumes.table.arrays
            self.bodies = B
            self.call = self.ctx.bind("untangle", pos=a["pos"], vel=a["vel"], withheld=a["withheld"],
                                      tangled=B.arrays["tangled"],
                                      inv_mass=a["inv_mass"], support=a["support"], owner=a["owner"],
                                      simplices=V["simplices"], rest_volume=V["rest_volume"],
                                      members=members.arrays["rows"], rest=members.arrays["rest"],
                                      body_start=B.arrays["member_start"],
                                      body_count=B.arrays["member_count"])
        return self.call

    def run(self, h: float) -> None:
        m, dim = self.volumes.table.n, self.ctx.dim
        if not m:
            return
        call = self.bound()
        if self.bodies.n:
            call(self.P.n, m, self.bodies.n, dim, h)


class _SpinTerm:
    """Around each substep's constraint solve (``_ConstraintTerm``, after the untangle pass): a
    body whose constraints are its own (none links one of its members to a particle of another
    body or of none), whose members are all its own (none shared with another body) and
    movable and none held by a collider (``support``, the last substep's contacts), ends the
    solve with the angular momentum about its centre of mass it began it
    with (constraints.c). The solve's change of it, dL, is taken off as a rigid spin
    w = I^-1 dL (I the members' inertia tensor about the centre now): v_i -= w x r_i, or under
    integrator "xpbd", whose velocity update v = (x - p) / h - withheld follows the solve,
    withheld_i += w x r_i. The momentum stays (sum m_i r_i = 0), and only the solve's change
    is taken off: forces, grabs, contacts and the settle solve (the collide stage's, with the
    particles colliders hold immovable) change the spin as they did.

    The corrections are along the constraints' gradients, which keep angular momentum to first
    order in their size only: a cube flattened to 2 % of its height, corrected by half its
    size in a substep, came back to its volume spinning at 0.2-0.9 m/s (2D XPBD boxes at
    0.88 m/s); with the spin kept it comes back at rest. Which bodies a constraint links
    (``linked``) is found again when the tables' rows change."""
    label = "XPBD spin"  # its name in an InstabilityError

    def __init__(self, ctx: Context, solvers: tuple[_Solver, ...], untangle: _UntangleTerm) -> None:
        self.ctx, self.solvers, self.untangle, self.P = ctx, solvers, untangle, ctx.store.particles
        self.calls: tuple[Callable[..., Any], Callable[..., Any]] | None = None
        self.bodies: Any = None
        self.linked_at = -1  # the Store's clock when ``linked`` was found

    def bound(self) -> tuple[Callable[..., Any], Callable[..., Any]]:
        """The spin_record and spin_keep kernels, bound on first use (the bodies' table is made
        after this feature's)."""
        if self.calls is None:
            B, members = self.ctx.store.tables["bodies"], self.ctx.store.tables["body_members"]
            a = self.P.arrays
            self.bodies = B
            common = {"mass": a["mass"], "inv_mass": a["inv_mass"], "support": a["support"],
                      "owner": a["owner"],
                      "linked": B.arrays["linked"], "members": members.arrays["rows"],
                      "body_start": B.arrays["member_start"], "body_count": B.arrays["member_count"]}
            self.calls = (self.ctx.bind("spin_record", spin=B.arrays["spin"], pos=a["pos"], vel=a["vel"],
                                        **common),
                          self.ctx.bind("spin_keep", vel=a["vel"], withheld=a["withheld"],
                                        spin=B.arrays["spin"], pos=a["pos"], prev_pos=a["prev_pos"],
                                        tangled=B.arrays["tangled"], **common))
        return self.calls

    def links(self) -> None:
        """``linked``: 1 for each body a constraint joins to a particle not its own."""
        clock = self.ctx.store.clock.value
        if clock == self.linked_at:
            return
        B, owner = self.bodies, self.P.arrays["owner"]
        linked = B.arrays["linked"]
        linked[: B.n] = 0
        for s in self.solvers:
            T = s.table
            if not T.n:
                continue
            o = owner[T.arrays[s.links.index][: T.n]]
            apart = o[(o != o[:, :1]).any(axis=1)].ravel()
            linked[np.unique(apart[(apart >= 0) & (apart < B.n)])] = 1
        self.linked_at = clock

    def record(self) -> None:
        record, _ = self.bound()
        if self.bodies.n:
            self.links()
            record(self.P.n, self.bodies.n, self.ctx.dim)

    def record_ops(self) -> list[Op]:
        """``record``'s call."""
        record, _ = self.bound()
        if not self.bodies.n:
            return []
        self.links()
        return [cached(self, "record", record, CONSTRAINTS).set(self.P.n, self.bodies.n, self.ctx.dim)]

    def mode(self, positions_only: bool) -> int:
        """spin_keep's mode: 0 velocities, 1 integrator "xpbd" (through ``withheld``), 2 its
        positions-only solve (3D), which leaves the velocities as the solve found them: the
        momentum before the solve is that of the positions p and those velocities (the same as
        the positions x = p + h v the solve began from have), found in spin_keep's pass, and
        spin_record is not called. Mode 2 only when the untangle pass ran (its ``tangled``:
        the bodies it put back, whose x is not p + h v, are left alone)."""
        if positions_only and self.untangle.volumes.table.n:
            return 2
        return int(self.ctx.settings._integrator == "xpbd")

    def keep(self, h: float, mode: int) -> None:
        _, keep = self.bound()
        if self.bodies.n:
            keep(self.P.n, self.bodies.n, self.ctx.dim, mode, h)

    def keep_ops(self, h: float, mode: int) -> list[Op]:
        """``keep``'s call."""
        _, keep = self.bound()
        if not self.bodies.n:
            return []
        return [cached(self, "keep", keep, CONSTRAINTS).set(self.P.n, self.bodies.n, self.ctx.dim, mode, h)]


class Constraints(Feature):
    """XPBD distance, volume and material constraints."""

    kinds = (DistanceConstraint, VolumeConstraint, MaterialConstraint)
    snapshot = (("distances", ("rest_length", "compliance")), ("volumes", ("rest_volume", "compliance")),
                ("materials", ("young", "poisson", "rest_volume", "dm_inv", "compliance")))

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        f64 = Field((), np.float64)
        self.distances = _Solver(ctx, "xpbd_distance", "distances", 2, "pairs",
                                 {"rest_length": f64, "compliance": f64, "lambda": f64},
                                 ("lambda", "rest_length", "compliance"))
        self.volumes = _Solver(ctx, "xpbd_volume", "volumes", ctx.dim + 1, "simplices",
                               {"rest_volume": f64, "compliance": f64, "lambda": f64},
                               ("lambda", "rest_volume", "compliance"))
        two = Field((2,), np.float64)
        self.materials = _Solver(ctx, "xpbd_material", "materials", 4, "tets",
                                 {"young": f64, "poisson": f64, "rest_volume": f64,
                                  "dm_inv": Field((9,), np.float64), "compliance": two, "lambda": two},
                                 ("lambda", "dm_inv", "compliance"))
        self.solvers = (self.distances, self.volumes, self.materials)
        self.untangle = _UntangleTerm(ctx, self.volumes)
        self.spin = _SpinTerm(ctx, self.solvers, self.untangle)
        self.term = term = _ConstraintTerm(ctx, self.solvers, self.untangle, self.spin)
        ctx.pipeline.constraints.append(term)
        self.settle = _SettleTerm(ctx, term)
        ctx.pipeline.settle.append(self.settle)

    @staticmethod
    def particle_fields(dim: int) -> dict[str, Field]:
        # the settle solve's inverse masses: 0 for a particle static friction holds; the
        # velocity the corrections' caps withheld in this substep (m/s; workspaces)
        return {"settle_inv_mass": Field((), np.float64), "withheld": Field((dim,), np.float64)}

    def add_distance_constraint(self, a: int, b: int, compliance: float = 0.0,
                                rest_length: float | None = None) -> int:
        """An XPBD distance constraint (compliance in m/N; 0 is rigid); rest length defaults
        to the current distance."""
        pair = pair_entities(self.ctx, a, b)
        rest = None if rest_length is None else [_validate.nonnegative("rest_length", rest_length)]
        return self._add_distances(pair, _validate.nonnegative("compliance", compliance), rest,
                                   "rest_length")[0]

    def add_distance_constraints(self, pairs: Any, compliance: Any = 0.0,
                                 rest_lengths: Any = None) -> list[int]:
        """XPBD distance constraints in bulk over (M, 2) particle entities; rest lengths default
        to the current distances (ValueError naming ``rest_lengths`` if one overflows)."""
        return self._add_distances(pairs, compliance, rest_lengths, "rest_lengths")

    def _add_distances(self, pairs: Any, compliance: Any, rest_lengths: Any, rest_name: str) -> list[int]:
        """add_distance_constraints; an error about the default rest lengths names ``rest_name``."""
        links = self.distances.links
        ends, rows = links.resolve("pairs", pairs)
        alpha = _validate.nonnegative_rows("compliance", compliance, len(ends))
        rest = (links.rest_lengths(rest_name, ends, rows) if rest_lengths is None
                else _validate.nonnegative_rows("rest_lengths", rest_lengths, len(ends)))
        table = links.table
        return self.distances.add("add_distance_constraints", lambda: DistanceConstraint(table),
                                  ends, rows, rest_length=rest, compliance=alpha)

    def add_volume_constraint(self, particles: Sequence[int], compliance: float = 0.0) -> int:
        """An XPBD constraint keeping a triangle's area (2D: 3 particles) or a tetrahedron's
        volume (3D: 4 particles) at its current signed value."""
        return self.add_volume_constraints([list(particles)],
                                           _validate.nonnegative("compliance", compliance))[0]

    def add_volume_constraints(self, simplices: Any, compliance: Any = 0.0) -> list[int]:
        """Volume constraints in bulk over (M, dim + 1) particle entities."""
        links, dim = self.volumes.links, self.ctx.dim
        ends, rows = links.resolve("simplices", simplices)
        alpha = _validate.nonnegative_rows("compliance", compliance, len(ends))
        pos = self.ctx.store.particles.arrays["pos"]
        with np.errstate(over="ignore", invalid="ignore"):
            rest = _simplex(pos, rows, dim)[0]
        if not np.isfinite(rest).all():
            raise ValueError("simplices: a simplex's area/volume overflows (its particles are too far "
                             "apart)")
        span = np.ptp(pos[rows.reshape(-1)], axis=0).max() if len(rows) else 0.0
        if len(rest) and not (np.abs(rest) > 1e-12 * span**dim).all():
            raise ValueError("simplices: a simplex has zero area/volume (collinear or coplanar points)")
        table = links.table
        return self.volumes.add("add_volume_constraints", lambda: VolumeConstraint(table),
                                ends, rows, rest_volume=rest, compliance=alpha)

    def add_material_constraint(self, tet: Sequence[int], young: float, poisson: float) -> int:
        """A tetrahedron of elastic material (3D): Young's modulus ``young`` (Pa) and Poisson's
        ratio ``poisson`` (> -1, < 0.5); its rest shape is the four particles' current places."""
        return self._add_materials([list(tet)], _validate.positive("young", young),
                                   _validate.finite("poisson", poisson), "tet")[0]

    def add_material_constraints(self, tets: Any, young: Any, poisson: Any) -> list[int]:
        """Material tetrahedra in bulk over (M, 4) particle entities; ``young`` and ``poisson``
        a value each or one per tet (rubber: about young=1e6, poisson=0.49). Energy
        mu V0 |dev E|^2 + K V0 / 2 (det F - 1)^2 (E Green's strain, mu the shear and K the
        bulk modulus): linear elasticity of (young, poisson) at small strain, recovering
        from inversion (csrc/src/constraints.c). Either order of a tet's corners is taken as
        given: the rest shape is the current one (F = I at rest), its volume positive."""
        return self._add_materials(tets, young, poisson, "tets")

    def _add_materials(self, tets: Any, young: Any, poisson: Any, name: str) -> list[int]:
        if self.ctx.dim != 3:
            raise ValueError(f"{name}: material constraints need a 3D world (dim=3), this one has "
                             f"dim={self.ctx.dim}")
        links = self.materials.links
        ends, rows = links.resolve(name, tets)
        pos = self.ctx.store.particles.arrays["pos"]
        with np.errstate(over="ignore", invalid="ignore"):
            dm = np.stack([pos[rows[:, k]] - pos[rows[:, 0]] for k in (1, 2, 3)], axis=2)
            volume = np.abs(np.linalg.det(dm)) / 6.0 if len(rows) else np.zeros(0)
        span = np.ptp(pos[rows.reshape(-1)], axis=0).max() if len(rows) else 0.0
        if not (np.isfinite(volume).all() and (volume > 1e-12 * span**3).all()):
            raise ValueError(f"{name}: a tet has zero (or not finite) volume: coplanar corners")
        with np.errstate(over="ignore", invalid="ignore"):
            dm_inv = np.linalg.inv(dm).reshape(-1, 9) if len(rows) else np.zeros((0, 9))
        if not np.isfinite(dm_inv).all():
            raise ValueError(f"{name}: a tet is too flat to invert its rest shape")
        alpha = material_compliance(young, poisson, volume)
        m = len(ends)
        table = links.table
        return self.materials.add("add_material_constraints", lambda: MaterialConstraint(table), ends,
                                  rows, young=_validate.per_row("young", young, m),
                                  poisson=_validate.per_row("poisson", poisson, m),
                                  rest_volume=volume, dm_inv=dm_inv, compliance=alpha)

    def probes(self) -> dict[str, tuple[int, Callable[[], Any]]]:
        dim, n = self.ctx.dim, self.ctx.store.particles.n
        probes: dict[str, tuple[int, Callable[[], Any]]] = {
            s.kernel: (s.table.n, functools.partial(s.run, s.batches.plan(s.links.index), dim, PROBE_H,
                                                    False, int(not self.term.positions_only(False))))
            for s in self.solvers}
        probes["settle_mass"] = (n, lambda: self.settle.bound()(n, self.settle.bodies.n, dim))
        plans = self.distances
        probes["settle_plan"] = (plans.table.n, lambda: plans.settle_plan(
            plans.table.n, plans.batches.plan(plans.links.index), plans.width))
        probes["zero"] = (n * dim, functools.partial(self.term.zero, n * dim))
        m = self.volumes.table.n
        probes["untangle"] = (m, lambda: self.untangle.bound()(n, m, self.untangle.bodies.n, dim, PROBE_H))
        record, keep = self.spin.bound()
        nb = self.spin.bodies.n
        probes["spin_record"] = (n, lambda: record(n, nb, dim))
        probes["spin_keep"] = (n, lambda: keep(n, nb, dim, 0, PROBE_H))
        return probes

    def distance_constraint(self, entity: int) -> DistanceConstraint:
        """The DistanceConstraint component of ``entity``."""
        return self.ctx.ecs.get(entity, DistanceConstraint, "distance constraint")

    def volume_constraint(self, entity: int) -> VolumeConstraint:
        """The VolumeConstraint component of ``entity``."""
        return self.ctx.ecs.get(entity, VolumeConstraint, "volume constraint")

    def material_constraint(self, entity: int) -> MaterialConstraint:
        """The MaterialConstraint component of ``entity``."""
        return self.ctx.ecs.get(entity, MaterialConstraint, "material constraint")

    def remove(self, entities: list[int]) -> None:
        for solver in self.solvers:
            own = [e for e in entities if e in solver.table.row_of]
            if own:
                solver.remove(own)

    def links_of(self, particles: list[int]) -> list[int]:
        return [e for s in self.solvers for e in s.links.links_of(particles)]

    def particles_moved(self, entities: np.ndarray, rows: np.ndarray) -> None:
        for s in self.solvers:
            s.links.particles_moved(entities, rows)
