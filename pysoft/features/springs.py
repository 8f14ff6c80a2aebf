"""Springs: damped springs between particles, strain and tearing; area springs on triangles
(``csrc/src/springs.c``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from pysoft import _validate
from pysoft._constants import MUSCLE_RANGE
from pysoft._ecs import Column, RowView
from pysoft._frame import FORCES, ONCE, Op, cached
from pysoft._kernels import Arg, Kernel, register
from pysoft._pipeline import MAIN
from pysoft._store import Field
from pysoft.features._feature import Context, Feature, PerState
from pysoft.features._links import Links, Pair, pair_entities
from pysoft.twins.constraints import _simplex

MAX_SPRINGS = 1 << 25

def _rebuild_incidence(arrays: dict[str, np.ndarray], sizes: dict[str, int]) -> None:
    """A one-off call's incidence lists are built afresh (never trusted from the caller)."""
    arrays["incidence_state"][0] = 0


# The spring pass's workspace (``spring_end``, ``incidence``, ``spring_force``,
# ``incidence_state``) holds each particle's list of springs, built by the kernel when
# ``incidence_state`` says the lists are stale, and the springs' forces between its two passes.
register(Kernel("springs", "springs",
                (Arg("force", ("n", "dim")), Arg("pos", ("n", "dim")), Arg("vel", ("n", "dim")),
                 Arg("pairs", ("m", 2), np.int32), Arg("rest_length", ("m",)),
                 Arg("stiffness", ("m",)), Arg("damping", ("m",)),
                 Arg("spring_end", ("n",), np.int32), Arg("incidence", ("m", 2), np.int32),
                 Arg("spring_force", ("m", "dim")), Arg("incidence_state", (3,), np.int32)),
                ("m", "dim", "n"), ("threads",), ("force",),
                scratch=("spring_end", "incidence", "spring_force", "incidence_state"),
                index_args=(("pairs", "n"),), check=_rebuild_incidence))


register(Kernel("muscles", "springs",
                (Arg("rest_length", ("m",)), Arg("muscle_length", ("m",)), Arg("activation", ("m",))),
                ("m",), ("low", "high"), ("rest_length",)))


register(Kernel("area_springs", "springs",
                (Arg("force", ("n", "dim")), Arg("pos", ("n", "dim")), Arg("vel", ("n", "dim")),
                 Arg("triangles", ("m", "dim+1"), np.int32), Arg("rest_area", ("m",)),
                 Arg("rest_gradient", ("m",)), Arg("stiffness", ("m",)), Arg("damping", ("m",))),
                ("m", "dim"), (), ("force",), index_args=(("triangles", "n"),)))


def max_strain_rows(value: Any, m: int) -> np.ndarray:
    """``max_strain`` for ``m`` springs: each > 1 (length / rest length at which it breaks) or inf."""
    out = _validate.per_row("max_strain", value, m)
    if np.isnan(out).any() or (out <= 1.0).any():
        raise ValueError("max_strain must be > 1 (length / rest length at which a spring breaks)")
    return out


class _MaxStrain(Column):
    """A spring's max_strain: writable, and counted in its table's ``edits`` (tearing is checked
    while any is finite: the feature recounts them when the table's rows or edits change)."""

    def __set__(self, view: RowView, value: Any) -> None:
        view.table.arrays[self.field][view.row] = max_strain_rows(value, 1)[0]
        view.table.edited()


class Spring(Pair):
    """A damped spring between two particle entities (Hooke + axial damper)."""

    __slots__ = ()

    rest_length = Column("rest_length", "Rest length (m).", _validate.nonnegative)
    stiffness = Column("stiffness", "Stiffness k (N/m).", _validate.nonnegative)
    damping = Column("damping", "Damping along the spring axis (N s/m).", _validate.nonnegative)
    max_strain = _MaxStrain("max_strain", "Length / rest length at which it breaks (inf: never; "
                                          "writable, > 1).")


class AreaSpring(RowView):
    """A damped spring on a triangle's signed area (2D): force -(k (A - A0) + c dA/dt) dA/dx
    on each corner, so a triangle turned inside out is pushed back through itself."""

    __slots__ = ()

    rest_area = Column("rest_area", "Rest area (m^2), signed: > 0 for counter-clockwise corners.",
                       _validate.finite)
    stiffness = Column("stiffness", "Stiffness k (N/m^3: force per area error per gradient).",
                       _validate.nonnegative)
    damping = Column("damping", "Damping of the area's rate of change (N s/m^3).", _validate.nonnegative)

    @property
    def particles(self) -> list[int]:
        """The triangle's particle entities."""
        return [int(e) for e in self.table.arrays["ends"][self.row]]


class _SpringTerm:
    label = "springs"  # its name in an InstabilityError

    def __init__(self, ctx: Context, links: Links, areas: Links) -> None:
        self.ctx, self.S, self.T = ctx, links.table, areas.table
        self.P, self.dim, self.settings = ctx.store.particles, ctx.dim, ctx.settings
        a, s, t = ctx.store.particles.arrays, links.table.arrays, areas.table.arrays
        self.incidence_state = np.zeros(3, dtype=np.int32)  # [lists built, for m, for n]
        self.built_for = -1  # the spring table's version the lists were last marked fresh for
        self.calls = PerState(lambda p, v, f: ctx.bind(
            "springs", force=a[f], pos=a[p], vel=a[v], pairs=s["pairs"], rest_length=s["rest_length"],
            stiffness=s["stiffness"], damping=s["damping"], spring_end=a["spring_end"],
            incidence=s["incidence"], spring_force=s["spring_force"],
            incidence_state=self.incidence_state))
        self.area_calls = PerState(lambda p, v, f: ctx.bind(
            "area_springs", force=a[f], pos=a[p], vel=a[v], triangles=t["triangles"],
            rest_area=t["rest_area"], rest_gradient=t["rest_gradient"], stiffness=t["stiffness"],
            damping=t["damping"]))
        self.muscles = ctx.bind("muscles", rest_length=s["rest_length"], muscle_length=s["muscle_length"],
                                activation=s["activation"])
        self.muscled: Callable[[], bool] = lambda: False  # (the feature's: whether any spring is a muscle)

    def arguments(self) -> tuple[int, int, int, int]:
        """The spring kernel's counts and thread count; marks the incidence lists stale when
        the springs changed."""
        if self.S.version != self.built_for:
            self.incidence_state[0] = 0
            self.built_for = self.S.version
        return self.S.n, self.dim, self.P.n, self.settings._threads

    def evaluate(self, state: int) -> None:
        if self.S.n and self.muscled():
            self.muscles(self.S.n, *MUSCLE_RANGE)
        if self.S.n:
            self.calls[state](*self.arguments())
        if self.T.n:
            self.area_calls[state](self.T.n, self.ctx.dim)

    def ops(self, h: float) -> list[Op]:
        out = []
        if self.S.n and self.muscled():
            # (once a frame: nothing in a frame's calls changes an activation or a rest length)
            out.append(cached(self, "muscles", self.muscles, FORCES, when=ONCE).set(self.S.n, *MUSCLE_RANGE))
        if self.S.n:
            out.append(cached(self, "springs", self.calls[MAIN], FORCES).set(*self.arguments()))
        if self.T.n:
            out.append(cached(self, "areas", self.area_calls[MAIN], FORCES).set(self.T.n, self.ctx.dim))
        return out


class Springs(Feature):
    """Damped springs (a spring with ``max_strain`` breaks when stretched beyond it) and area
    springs."""

    kinds = (Spring, AreaSpring)
    snapshot = (("springs", ("rest_length", "stiffness", "damping", "muscle_length", "activation")),
                ("area_springs", ("rest_area", "rest_gradient", "stiffness", "damping")))

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.links = Links(ctx, "springs", 2, "pairs", {
            "rest_length": Field((), np.float64), "stiffness": Field((), np.float64),
            "damping": Field((), np.float64), "max_strain": Field((), np.float64, np.inf),
            # a muscle's length at activation 1 (< 0: the spring is not a muscle), its activation
            "muscle_length": Field((), np.float64, -1.0), "activation": Field((), np.float64, 1.0),
            # the spring pass's workspace: the particles' lists of springs, the forces
            "incidence": Field((2,), np.int32), "spring_force": Field((ctx.dim,), np.float64),
        }, MAX_SPRINGS)
        self.areas = Links(ctx, "area_springs", ctx.dim + 1, "triangles", {
            "rest_area": Field((), np.float64), "stiffness": Field((), np.float64),
            "damping": Field((), np.float64),
            # 3D: the sum of the squared volume gradients at the corners, in the shape the
            # spring was added in (a volume spring stiffens up to VOLUME_STIFFENING times it)
            "rest_gradient": Field((), np.float64)}, MAX_SPRINGS)
        self.table = self.links.table
        self._tearable, self._counted = False, (-1, -1)  # any finite max_strain, as of (version, writes)
        self._muscled, self._muscles_counted = False, (-1, -1)  # any muscle, as of (version, writes)
        self.broken_springs: list[int] = []
        self.term = _SpringTerm(ctx, self.links, self.areas)
        self.term.muscled = self._any_muscle
        ctx.pipeline.forces.append(self.term)

    def probes(self) -> dict[str, tuple[int, Callable[[], Any]]]:
        m, t = self.table.n, self.areas.table.n
        return {"springs": (m, functools.partial(self.term.calls[0], *self.term.arguments())),
                "area_springs": (t, functools.partial(self.term.area_calls[0], t, self.ctx.dim)),
                "muscles": (m, functools.partial(self.term.muscles, m, *MUSCLE_RANGE))}

    def add_spring(self, a: int, b: int, stiffness: float = 500.0, damping: float = 2.0,
                   rest_length: float | None = None, max_strain: float | None = None) -> int:
        """A damped spring between particles ``a`` and ``b``; rest length defaults to their distance.

        With ``max_strain`` (length / rest length, > 1) the spring breaks (is
        removed) at the end of the first step in which it is stretched beyond it.
        """
        pair = pair_entities(self.ctx, a, b)
        rest = None if rest_length is None else [_validate.nonnegative("rest_length", rest_length)]
        return self._add_springs(pair, _validate.nonnegative("stiffness", stiffness),
                         _validate.nonnegative("damping", damping), rest, max_strain, "rest_length")[0]

    def add_springs(self, pairs: Any, stiffness: Any = 500.0, damping: Any = 2.0,
                    rest_lengths: Any = None, max_strain: Any = None) -> list[int]:
        """Springs in bulk: ``pairs`` is (M, 2) particle entities. Returns their entities.
        Rest lengths default to the current distances (ValueError naming ``rest_lengths`` if
        one overflows: particles more than about 1e154 m apart)."""
        return self._add_springs(pairs, stiffness, damping, rest_lengths, max_strain, "rest_lengths")

    def _add_springs(self, pairs: Any, stiffness: Any, damping: Any, rest_lengths: Any, max_strain: Any,
                     rest_name: str) -> list[int]:
        """add_springs; an error about the default rest lengths names ``rest_name``."""
        ends, rows = self.links.resolve("pairs", pairs)
        m = len(ends)
        params = {name: _validate.nonnegative_rows(name, value, m)
                  for name, value in (("stiffness", stiffness), ("damping", damping))}
        rest = (self.links.rest_lengths(rest_name, ends, rows) if rest_lengths is None
                else _validate.nonnegative_rows("rest_lengths", rest_lengths, m))
        if max_strain is not None:
            params["max_strain"] = max_strain_rows(max_strain, m)
        table = self.table
        entities = self.links.add("add_springs", lambda: Spring(table), ends, rows,
                                  rest_length=rest, **params)
        return cast(list[int], entities.tolist())

    def spring(self, entity: int) -> Spring:
        """The Spring component of ``entity``."""
        return self.ctx.ecs.get(entity, Spring, "spring")

    def add_area_spring(self, a: int, b: int, c: int, stiffness: float, damping: float = 0.0,
                        rest_area: float | None = None) -> int:
        """A damped spring on the signed area of triangle (a, b, c) (2D); the rest area
        defaults to its current one. ``stiffness`` k (N/m^3) and ``damping`` (N s/m^3) act
        along the area's gradient: k |grad A|^2 (|grad A|^2 = the sum of the squared sides
        / 4) is the stiffness of its area mode in N/m, as a spring's."""
        rest = None if rest_area is None else [_validate.finite("rest_area", rest_area)]
        return self.add_area_springs([[a, b, c]], _validate.nonnegative("stiffness", stiffness),
                                     _validate.nonnegative("damping", damping), rest)[0]

    def add_area_springs(self, triangles: Any, stiffness: Any, damping: Any = 0.0,
                         rest_areas: Any = None) -> list[int]:
        """Area springs in bulk over (M, 3) particle entities (2D), or volume springs over
        (M, 4) tetrahedra (3D: the same law on the signed volume; stiffness N/m^5, damping
        N s/m^5; a volume spring's pull grows with its tetrahedron's faces up to
        VOLUME_STIFFENING (3) times what it is in the shape it is added in, and no further).
        Returns their entities."""
        ends, rows = self.areas.resolve("triangles", triangles)
        m = len(ends)
        params = {name: _validate.nonnegative_rows(name, value, m)
                  for name, value in (("stiffness", stiffness), ("damping", damping))}
        with np.errstate(over="ignore", invalid="ignore"):
            shape, gradient = _simplex(self.ctx.store.particles.arrays["pos"], rows, self.ctx.dim)
            size = (gradient * gradient).sum(axis=(1, 2))
        if self.ctx.dim == 3 and not np.isfinite(size).all():
            raise ValueError("triangles: a tetrahedron's faces overflow when squared (its particles "
                             "are too far apart)")
        if rest_areas is None:
            rest = shape
            if not np.isfinite(rest).all():
                raise ValueError("rest_areas: a triangle's area overflows (its particles are too far "
                                 "apart)")
        else:
            rest = _validate.per_row("rest_areas", rest_areas, m)
            if not np.isfinite(rest).all():
                raise ValueError("rest_areas must be finite")
        table = self.areas.table
        entities = self.areas.add("add_area_springs", lambda: AreaSpring(table), ends, rows,
                                  rest_area=rest, rest_gradient=size if self.ctx.dim == 3 else 0.0,
                                  **params)
        return cast(list[int], entities.tolist())

    def area_spring(self, entity: int) -> AreaSpring:
        """The AreaSpring component of ``entity``."""
        return self.ctx.ecs.get(entity, AreaSpring, "area_spring")

    def spring_pairs(self, entities: bool = False) -> np.ndarray:
        """Every spring's two particles at once, in spring row order (a copy, (m, 2)): their
        rows in ``world.positions`` (for drawing: ``positions[pairs]`` is (m, 2, dim)), or
        their entities."""
        S = self.table
        return (S.view("ends") if _validate.flag("entities", entities) else S.view("pairs")).copy()

    def spring_strain(self, entity: int | None = None) -> Any:
        """Length / rest length of every spring, in spring row order (inf for rest 0), for
        stress colours; of one spring if ``entity`` is given."""
        if entity is not None:
            return float(self.spring_strain()[self.spring(entity).row])
        S = self.table
        length = self.links.lengths(S.view("pairs"))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(S.view("rest_length") > 0.0, length / S.view("rest_length"), np.inf)

    def remove(self, entities: list[int]) -> None:
        areas = self.areas.table.row_of
        for links, own in ((self.links, [e for e in entities if e not in areas]),
                           (self.areas, [e for e in entities if e in areas])):
            if own:
                links.remove(own)

    def add_muscles(self, springs: Any, activation: Any = 1.0) -> Muscles:
        """Make springs muscles: each one's rest length becomes its ``muscle_length`` (its rest
        length now) times its activation, clamped to ``MUSCLE_RANGE`` (0.5 to 1.5), set for all
        of them at once by the returned :class:`Muscles` (``drive``). ``springs``: spring
        entities (ValueError naming it for one that is not a live spring, or a spring listed
        twice); ``activation``: their first activation (one number, or one each)."""
        table = self.table
        entities = np.asarray(springs)
        if entities.ndim != 1 or not len(entities) or entities.dtype.kind not in "iu":
            raise ValueError(f"springs must be a non-empty 1-D array of spring entities, got {springs!r}")
        rows = np.empty(len(entities), np.intp)
        for k, e in enumerate(entities.tolist()):
            row = table.row_of.get(e)
            if row is None or e in self.areas.table.row_of:
                raise ValueError(f"springs[{k}] = {e} is not a live spring of this world")
            rows[k] = row
        if len(np.unique(rows)) != len(rows):
            raise ValueError("springs lists a spring twice")
        muscles = Muscles(self, entities.astype(np.int64), rows)
        start = muscles.clamped("activation", activation)
        length = table.arrays["muscle_length"]
        length[rows] = table.arrays["rest_length"][rows]
        table.arrays["activation"][rows] = start
        table.arrays["rest_length"][rows] = length[rows] * start
        table.edited()
        return muscles

    def _any_muscle(self) -> bool:
        """Whether any spring is a muscle (recounted after rows or writes change)."""
        now = (self.table.version, self.table.edits)
        if now != self._muscles_counted:
            self._muscled = bool((self.table.view("muscle_length") >= 0.0).any())
            self._muscles_counted = now
        return self._muscled

    def _any_tearable(self) -> bool:
        """Whether any spring has a finite max_strain (recounted after rows or writes change)."""
        now = (self.table.version, self.table.edits)
        if now != self._counted:
            self._tearable = bool(np.isfinite(self.table.view("max_strain")).any())
            self._counted = now
        return self._tearable

    def links_of(self, particles: list[int]) -> list[int]:
        return self.links.links_of(particles) + self.areas.links_of(particles)

    def particles_moved(self, entities: np.ndarray, rows: np.ndarray) -> None:
        self.links.particles_moved(entities, rows)
        self.areas.particles_moved(entities, rows)

    def repeats(self) -> bool:
        """No spring may tear (tearing is checked after every frame)."""
        return not self._any_tearable()

    def after_frame(self) -> None:
        """Remove the springs stretched beyond their max_strain; list them in ``broken_springs``
        and their particle pairs in the context's ``torn``."""
        if self.broken_springs:  # (a list handed out is never changed: a new one replaces it)
            self.broken_springs = []
        if self.ctx.torn:
            self.ctx.torn.clear()
        if not self._any_tearable():
            return
        S = self.table
        broken = np.flatnonzero(self.spring_strain() > S.view("max_strain"))
        if len(broken):
            self.broken_springs = [int(e) for e in S.view("entity")[broken]]
            ends = self.ctx.store.particles.view("entity")[S.view("pairs")[broken]]
            self.ctx.torn.extend((int(a), int(b)) for a, b in ends)
            self.remove(self.broken_springs)


class Muscles:
    """Springs driven by activations (``World.add_muscles``): muscle k's rest length is
    ``rest_lengths[k] * activation[k]``, the activation clamped to ``MUSCLE_RANGE`` (0.5 to
    1.5), applied at the start of every substep. ``drive`` sets all of them from one array
    without allocating (a controller calls it every frame); the activations are in the
    world's snapshots. A muscle whose spring is removed (torn, or removed by hand) makes
    ``drive`` raise ValueError."""

    __slots__ = ("_buffer", "_feature", "_rows", "_version", "springs")

    def __init__(self, feature: Springs, springs: np.ndarray, rows: np.ndarray) -> None:
        self._feature = feature
        self.springs = springs  # the spring entities, in the muscles' order
        self._rows, self._version = rows, feature.table.version
        self._buffer = np.empty(len(springs))

    def __len__(self) -> int:
        return len(self.springs)

    def _live_rows(self) -> np.ndarray:
        """The springs' rows now (found again after the spring table's rows changed)."""
        table = self._feature.table
        if self._version != table.version:
            rows = [table.row_of.get(e) for e in self.springs.tolist()]
            if None in rows:
                gone = int(self.springs[rows.index(None)])
                raise ValueError(f"spring {gone} of these muscles was removed")
            self._rows[:] = rows
            self._version = table.version
        return self._rows

    def clamped(self, name: str, activation: Any) -> np.ndarray:
        """``activation`` (one number, or one per muscle) clamped to MUSCLE_RANGE, in the
        muscles' buffer; ValueError naming ``name`` for NaN or a wrong shape."""
        out = self._buffer
        if np.ndim(activation) == 0:
            out.fill(_validate.real(name, activation))
        elif np.shape(activation) != out.shape:
            raise ValueError(f"{name} must be a number or {len(out)} numbers (one per muscle), "
                             f"got shape {np.shape(activation)}")
        else:
            try:
                np.copyto(out, activation, casting="same_kind")
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{name} must be real numbers: {exc}") from None
        np.minimum(out, MUSCLE_RANGE[1], out=out)  # (np.clip allocates; NaN stays NaN in both)
        np.maximum(out, MUSCLE_RANGE[0], out=out)
        if np.isnan(out.sum()):
            raise ValueError(f"{name} is NaN for muscle {int(np.flatnonzero(np.isnan(out))[0])}")
        return out

    def drive(self, activation: Any) -> None:
        """Set every muscle's activation (one number, or an array of one per muscle; values
        outside MUSCLE_RANGE are clamped to it): allocation-free for a float64 array. The
        rest lengths follow at the next substep. ValueError naming ``activation`` for NaN or
        a wrong shape (nothing is changed then)."""
        rows = self._live_rows()
        self._feature.table.arrays["activation"][rows] = self.clamped("activation", activation)

    @property
    def activation(self) -> np.ndarray:
        """The activations as set (clamped), one per muscle (a copy)."""
        out: np.ndarray = self._feature.table.arrays["activation"][self._live_rows()]
        return out

    @property
    def rest_lengths(self) -> np.ndarray:
        """Each muscle's rest length at activation 1 (m; a copy)."""
        out: np.ndarray = self._feature.table.arrays["muscle_length"][self._live_rows()]
        return out
