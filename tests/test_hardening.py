"""Hardening: arguments at the edge of the float range, derived values that overflow, and
state that a snapshot, a removal or a winding could leave inconsistent.

Each bad call gets a ValueError (or KeyError) naming the argument the caller passed, and
the world is left as it was (the fingerprint of test_bad_input and the snapshot's bytes).
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from test_bad_input import fingerprint
from test_determinism import _with_array

import pysoft
from pysoft import build

BIG = 10**400  # float(BIG) raises OverflowError


class Scene:
    """A small stepped world with one of everything a call may name."""

    def __init__(self, backend: str = "c") -> None:
        w = self.world = pysoft.World(backend=backend)
        self.collider = w.add_collider(pysoft.Plane((0.0, 1.0), 0.0))
        self.p = w.add_particles([[0.0, 1.0], [0.5, 1.0], [0.25, 1.5], [2.0, 2.0]])
        self.spring = w.add_spring(self.p[0], self.p[1])
        self.area = w.add_area_spring(self.p[0], self.p[1], self.p[2], 10.0)
        self.distance = w.add_distance_constraint(self.p[1], self.p[2])
        self.pressure = pysoft.Pressure(1.0)
        self.matching = pysoft.ShapeMatching()
        self.body = w.add_body(self.p[:3], self.pressure, self.matching)
        self.well = w.add_gravity_well((5.0, 5.0), 1.0)
        self.grab = w.grab(self.p[3])
        for _ in range(2):
            w.step()

    def state(self) -> tuple[bytes, bytes]:
        return fingerprint(self.world), self.world.snapshot()


Call = Callable[[Scene, Any], Any]
SETTINGS = ("dt", "max_dt", "drag", "restitution_threshold", "max_speed", "substeps",
            "contact_iterations", "constraint_iterations", "body_contact_iterations", "threads")



def _setter(name: str) -> Call:
    return lambda s, x: setattr(s.world, name, x)


# (id, call with the bad number x in it, the argument's name the error must give)
NUMBERS: list[tuple[str, Call, str]] = [
    *[(f"set-{a}", _setter(a), a) for a in SETTINGS],
    ("set-gravity", lambda s, x: setattr(s.world, "gravity", (0.0, x)), "gravity"),
    ("set-time", lambda s, x: setattr(s.world, "time", x), "time"),
    ("step", lambda s, x: s.world.step(x), "dt"),
    ("particle-position", lambda s, x: s.world.add_particle((x, 0.0)), "position"),
    ("particle-velocity", lambda s, x: s.world.add_particle((0.0, 0.0), velocity=(0.0, x)), "velocity"),
    ("particle-mass", lambda s, x: s.world.add_particle((0.0, 0.0), mass=x), "mass"),
    ("particle-radius", lambda s, x: s.world.add_particle((0.0, 0.0), radius=x), "radius"),
    ("particles-positions", lambda s, x: s.world.add_particles([[0.0, x]]), "positions"),
    ("particles-velocities", lambda s, x: s.world.add_particles([[0.0, 0.0]], velocities=[[x, 0.0]]),
     "velocities"),
    ("particles-masses", lambda s, x: s.world.add_particles([[0.0, 0.0]], masses=x), "masses"),
    ("particles-masses-list", lambda s, x: s.world.add_particles([[0.0, 0.0]], masses=[x]), "masses"),
    ("particles-radii", lambda s, x: s.world.add_particles([[0.0, 0.0]], radii=x), "radii"),
    ("spring-stiffness", lambda s, x: s.world.add_spring(s.p[0], s.p[2], stiffness=x), "stiffness"),
    ("spring-damping", lambda s, x: s.world.add_spring(s.p[0], s.p[2], damping=x), "damping"),
    ("spring-rest-length", lambda s, x: s.world.add_spring(s.p[0], s.p[2], rest_length=x), "rest_length"),
    ("spring-max-strain", lambda s, x: s.world.add_spring(s.p[0], s.p[2], max_strain=x), "max_strain"),
    ("springs-stiffness", lambda s, x: s.world.add_springs([[s.p[0], s.p[2]]], stiffness=[x]), "stiffness"),
    ("springs-damping", lambda s, x: s.world.add_springs([[s.p[0], s.p[2]]], damping=x), "damping"),
    ("springs-rest-lengths", lambda s, x: s.world.add_springs([[s.p[0], s.p[2]]], rest_lengths=x),
     "rest_lengths"),
    ("springs-max-strain", lambda s, x: s.world.add_springs([[s.p[0], s.p[2]]], max_strain=x), "max_strain"),
    ("area-stiffness", lambda s, x: s.world.add_area_spring(s.p[0], s.p[1], s.p[3], x), "stiffness"),
    ("area-damping", lambda s, x: s.world.add_area_spring(s.p[0], s.p[1], s.p[3], 1.0, x), "damping"),
    ("area-rest-area", lambda s, x: s.world.add_area_spring(s.p[0], s.p[1], s.p[3], 1.0, rest_area=x),
     "rest_area"),
    ("areas-rest-areas", lambda s, x: s.world.add_area_springs([[*s.p[:2], s.p[3]]], 1.0, rest_areas=x),
     "rest_areas"),
    ("distance-compliance", lambda s, x: s.world.add_distance_constraint(s.p[0], s.p[3], compliance=x),
     "compliance"),
    ("distance-rest-length", lambda s, x: s.world.add_distance_constraint(s.p[0], s.p[3], rest_length=x),
     "rest_length"),
    ("distances-rest-lengths", lambda s, x: s.world.add_distance_constraints([[s.p[0], s.p[3]]],
                                                                             rest_lengths=[x]),
     "rest_lengths"),
    ("volume-compliance", lambda s, x: s.world.add_volume_constraint([*s.p[:2], s.p[3]], compliance=x),
     "compliance"),
    ("body-friction", lambda s, x: s.world.add_body(s.p[:3], friction=x), "friction"),
    ("body-restitution", lambda s, x: s.world.add_body(s.p[:3], restitution=x), "restitution"),
    ("body-rolling", lambda s, x: s.world.add_body(s.p[:3], rolling_resistance=x), "rolling_resistance"),
    ("body-category", lambda s, x: s.world.add_body(s.p[:3], category=x), "category"),
    ("pressure-amount", lambda s, x: pysoft.Pressure(x), "amount"),
    ("matching-stiffness", lambda s, x: pysoft.ShapeMatching(stiffness=x), "stiffness"),
    ("collider-restitution", lambda s, x: s.world.add_collider(pysoft.Plane((0, 1)), restitution=x),
     "restitution"),
    ("collider-friction", lambda s, x: s.world.add_collider(pysoft.Plane((0, 1)), friction=x), "friction"),
    ("collider-damping", lambda s, x: s.world.add_collider(pysoft.Plane((0, 1)), tangential_damping=x),
     "tangential_damping"),
    ("collider-velocity", lambda s, x: s.world.add_collider(pysoft.Plane((0, 1)), velocity=(x, 0)),
     "velocity"),
    ("collider-spin", lambda s, x: s.world.add_collider(pysoft.Plane((0, 1)), angular_velocity=x),
     "angular_velocity"),
    ("plane-normal", lambda s, x: s.world.add_collider(pysoft.Plane((x, 1.0))), "normal"),
    ("plane-offset", lambda s, x: s.world.add_collider(pysoft.Plane((0.0, 1.0), x)), "offset"),
    ("disc-center", lambda s, x: s.world.add_collider(pysoft.Disc((x, 0.0), 1.0)), "center"),
    ("disc-radius", lambda s, x: s.world.add_collider(pysoft.Disc((0.0, 0.0), x)), "radius"),
    ("segment-a", lambda s, x: s.world.add_collider(pysoft.Segment((x, 0.0), (1.0, 0.0))), r"\ba\b"),
    ("segment-radius", lambda s, x: s.world.add_collider(pysoft.Segment((0, 0), (1, 0), x)), "radius"),
    ("box-half-extents", lambda s, x: s.world.add_collider(pysoft.Box((0, 0), (x, 1.0))), "half_extents"),
    ("box-angle", lambda s, x: s.world.add_collider(pysoft.Box((0, 0), (1.0, 1.0), x)), "angle"),
    ("polygon-vertices", lambda s, x: s.world.add_collider(pysoft.Polygon([(0, 0), (x, 0), (0, 1)])),
     "vertices"),
    ("pusher-radius", lambda s, x: s.world.add_pusher(x), "radius"),
    ("pusher-position", lambda s, x: s.world.add_pusher(0.1, position=(x, 0.0)), "position"),
    ("pusher-friction", lambda s, x: s.world.add_pusher(0.1, friction=x), "friction"),
    ("well-center", lambda s, x: s.world.add_gravity_well((x, 0.0), 1.0), "center"),
    ("well-strength", lambda s, x: s.world.add_gravity_well((0.0, 0.0), x), "strength"),
    ("well-falloff", lambda s, x: s.world.add_gravity_well((0.0, 0.0), 1.0, falloff=x), "falloff"),
    ("well-min-distance", lambda s, x: s.world.add_gravity_well((0.0, 0.0), 1.0, min_distance=x),
     "min_distance"),
    ("grab-point", lambda s, x: s.world.grab((x, 0.0)), "what"),
    ("grab-stiffness", lambda s, x: s.world.grab(s.p[0], stiffness=x), "stiffness"),
    ("grab-max-distance", lambda s, x: s.world.grab((0.0, 1.0), max_distance=x), "max_distance"),
    ("nearest-point", lambda s, x: s.world.nearest_particle((0.0, x)), "point"),
    ("nearest-max-distance", lambda s, x: s.world.nearest_particle((0.0, 0.0), x), "max_distance"),
    ("body-at", lambda s, x: s.world.body_at((x, 0.0)), "point"),
    # the writable fields of components
    ("set-position", lambda s, x: setattr(s.world.particle(s.p[0]), "position", (x, 0.0)), "position"),
    ("set-particle-friction", lambda s, x: setattr(s.world.particle(s.p[0]), "friction", x), "friction"),
    ("set-spring-stiffness", lambda s, x: setattr(s.world.spring(s.spring), "stiffness", x), "stiffness"),
    ("set-spring-max-strain", lambda s, x: setattr(s.world.spring(s.spring), "max_strain", x),
     "max_strain"),
    ("set-area-rest", lambda s, x: setattr(s.world.area_spring(s.area), "rest_area", x), "rest_area"),
    ("set-distance-rest", lambda s, x: setattr(s.world.distance_constraint(s.distance), "rest_length", x),
     "rest_length"),
    ("set-collider-angle", lambda s, x: setattr(s.world.collider(s.collider), "angle", x), "angle"),
    ("set-collider-spin", lambda s, x: setattr(s.world.collider(s.collider), "angular_velocity", x),
     "angular_velocity"),
    ("set-collider-position", lambda s, x: setattr(s.world.collider(s.collider), "position", (0.0, x)),
     "position"),
    ("set-well-strength", lambda s, x: setattr(s.world.gravity_well(s.well), "strength", x), "strength"),
    ("set-body-friction", lambda s, x: setattr(s.world.body(s.body), "friction", x), "friction"),
    ("set-pressure-amount", lambda s, x: setattr(s.pressure, "amount", x), "amount"),
    ("set-matching-damping", lambda s, x: setattr(s.matching, "damping", x), "damping"),
    ("set-grab-target", lambda s, x: setattr(s.grab, "target", (x, 0.0)), "target"),
    ("set-grab-damping", lambda s, x: setattr(s.grab, "damping", x), "damping"),
]


@pytest.mark.parametrize("sign", [1, -1], ids=["plus", "minus"])
@pytest.mark.parametrize(("call", "name"), [pytest.param(c, n, id=i) for i, c, n in NUMBERS])
def test_a_number_beyond_the_float_range_is_a_value_error_naming_it(call: Call, name: str,
                                                                    sign: int) -> None:
    """float(10**400) raises OverflowError: every numeric argument of the public API turns it
    into a ValueError naming the argument, and changes nothing."""
    scene = Scene()
    before = scene.state()
    with pytest.raises(ValueError, match=name):
        call(scene, sign * BIG)
    assert scene.state() == before


WORLD_SETTINGS = (*SETTINGS, "gravity")


@pytest.mark.parametrize("name", WORLD_SETTINGS)
def test_a_world_setting_beyond_the_float_range_is_a_value_error(name: str) -> None:
    value: Any = (0.0, BIG) if name == "gravity" else BIG
    with pytest.raises(ValueError, match=name):
        pysoft.World(**{name: value})


def test_a_message_does_not_print_a_huge_int() -> None:
    """An int too long to print (10**5000: str() refuses past 4,300 digits) is described, not
    printed, so the error is still the ValueError naming the argument."""
    w = pysoft.World()
    for call in (lambda: w.add_particle((0.0, 0.0), mass=10**5000),
                 lambda: setattr(w, "substeps", 10**5000),
                 lambda: w.add_particle((0.0, 0.0), pinned=10**5000)):
        with pytest.raises(ValueError, match=r"(mass|substeps|pinned).*an int of \d+ bits"):
            call()


def test_an_entity_array_beyond_int64_is_a_value_error() -> None:
    w = pysoft.World()
    a, _ = w.add_particles([[0.0, 0.0], [1.0, 0.0]])
    n = w.store.springs.n
    with pytest.raises(ValueError, match="pairs"):
        w.add_springs(np.array([[a, 2**63]], dtype=np.uint64))
    assert w.store.springs.n == n


def test_overflowing_ints_inside_arrays_name_the_argument() -> None:
    w = pysoft.World()
    with pytest.raises(ValueError, match=r"positions.*float range"):
        w.add_particles([[0.0, BIG]])
    assert w.store.particles.n == 0


def test_a_huge_but_finite_number_still_passes() -> None:
    """The check is the float range, not a size limit: 10**300 (an int) is a valid drag."""
    w = pysoft.World(drag=10**300)
    assert w.drag == 1e300
    assert math.isfinite(w.drag)


# -- builders: every argument, bad values, and the argument the caller passed in the error ----

SQUARE = [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)]
# builder variants: the models whose derived values differ (springs, gas, XPBD, a filled disc)
VARIANTS: dict[str, tuple[Callable[..., int], dict[str, Any]]] = {
    "box": (build.box, {}), "box-gas": (build.box, {"model": "pressure"}),
    "box-xpbd": (build.box, {"model": "xpbd"}),
    "circle": (build.circle, {}), "circle-gas": (build.circle, {"model": "pressure"}),
    "circle-xpbd": (build.circle, {"model": "xpbd"}), "disc": (build.circle, {"rings": 2}),
    "ball": (build.ball, {}), "blob": (build.blob, {}),
    "rope": (build.rope, {}), "rope-xpbd": (build.rope, {"model": "xpbd", "bending": 10.0}),
    "cloth": (build.cloth, {}), "cloth-springs": (build.cloth, {"model": "springs"}),
    "polygon": (build.polygon, {"vertices": SQUARE}),
    "polygon-gas": (build.polygon, {"vertices": SQUARE, "model": "pressure"}),
}
# arguments for which None means something (documented: the builder derives the value, the
# rope or cloth hangs free, the spring never tears, the polygon's edges are not subdivided)
NONE_OK = {"stiffness", "damping", "amount", "max_strain", "segment", "spacing", "pin"}
# arguments for which 0 is valid (no springs, no gas, no friction, ...); elsewhere it is refused
ZERO_OK = {"category", "mask", "rings", "friction", "restitution", "rolling_resistance", "stiffness",
           "damping", "amount", "match_stiffness", "match_damping", "wobble_damping", "compliance",
           "area_compliance", "particle_radius", "bending"}
MUST_FAIL: list[tuple[str, Any]] = [("nan", math.nan), ("-inf", -math.inf), ("-1", -1), ("x", "x"),
                                   ("big", BIG), ("-big", -BIG), ("true", True), ("inf", math.inf),
                                   ("None", None), ("list-str", ["x"])]
MAY_PASS: list[tuple[str, Any]] = [("0", 0), ("1e308", 1e308), ("1e200", 1e200), ("1e155", 1e155),
                                  ("1e-155", 1e-155), ("1e-300", 1e-300), ("subnormal", 5e-324)]


def _vectors(default: Any) -> list[tuple[str, Any]]:
    """Bad points, sizes and outlines: one coordinate of the default made extreme."""
    arr = np.array(default, dtype=float)
    out = []
    for label, x in (("nan", math.nan), ("big", BIG), ("1e308", 1e308), ("1e200", 1e200),
                     ("1e-200", 1e-200), ("-1e155", -1e155), ("none", None)):
        bad: Any = arr.tolist()
        if arr.ndim == 1:
            bad[-1] = x
        else:
            bad[1][0] = x
        out.append((f"vec-{label}", bad))
    scaled = [("scaled-1e200", (arr * 1e200).tolist()), ("scaled-1e-200", (arr * 1e-200).tolist()),
              ("offset-1e200", (arr + 1e200).tolist())]
    return out + (scaled if arr.dtype.kind == "f" and arr.ndim else [])


def _arguments(name: str) -> list[str]:
    builder, fixed = VARIANTS[name]
    return [p for p in inspect.signature(builder).parameters if p != "world" and p not in fixed]


def _builder_cases() -> list[Any]:
    return [pytest.param(v, a, id=f"{v}-{a}") for v in VARIANTS for a in _arguments(v)]


def _expect(arg: str, label: str, value: Any) -> bool:
    """Whether the value must be refused (else it may be accepted, if what it builds is valid)."""
    if label == "None" or label.endswith("none"):
        return arg not in NONE_OK
    if label == "true":
        return arg != "self_collision"
    if label == "inf":
        return arg != "max_strain"
    if label == "0":
        return arg not in ZERO_OK
    return label in dict(MUST_FAIL) or label.startswith(("vec-nan", "vec-big"))


@pytest.mark.parametrize(("variant", "arg"), _builder_cases())
def test_a_builder_names_the_argument_the_caller_passed(variant: str, arg: str) -> None:
    """Every builder argument, with values a caller might pass by mistake: a refused one is a
    ValueError (or KeyError) naming that argument, not one the builder derived from it (a
    stiffness from the mass, rest lengths, radii), nor a TypeError, OverflowError,
    ZeroDivisionError or an error of a library below; nothing is added. An accepted one
    builds a body whose every stored value passes the snapshot's rules (nothing infinite
    derived from it)."""
    builder, fixed = VARIANTS[variant]
    default = inspect.signature(builder).parameters[arg].default
    values = MUST_FAIL + MAY_PASS
    if arg == "vertices" or (isinstance(default, tuple) and not isinstance(default[0], str)):
        values = values + _vectors(SQUARE if arg == "vertices" else default)
    scene = Scene()
    w = scene.world
    for label, value in values:
        before = scene.state()
        try:
            builder(w, **{**fixed, arg: value})
        except (ValueError, KeyError) as exc:
            assert re.search(rf"\b{arg}\b", str(exc)), f"{label}: {exc!r} does not name {arg}"
            assert scene.state() == before, f"{label}: the refused call changed the world"
            continue
        assert not _expect(arg, label, value), f"{label}: {value!r} for {arg} was accepted"
        w.restore(w.snapshot())  # every stored value within the public API's rules
        body = w.store.bodies.n
        assert body > 0


def test_a_rope_pinned_to_none_hangs_free_and_a_name_pins_that_end() -> None:
    """pin=None (or ()) is a free rope, a bare name pins that end (it was iterated letter by
    letter), anything else is a ValueError naming pin."""
    w = pysoft.World()
    for pin, want in ((None, []), ((), []), ("end", [False, True]), ("start", [True, False]),
                      (("start", "end"), [True, True]), (["end"], [False, True])):
        body = build.rope(w, segments=3, pin=pin)
        ends = w.body(body).particles
        pinned = [w.particle(e).pinned for e in (ends[0], ends[-1])]
        assert pinned == (want or [False, False]), pin
        assert not any(w.particle(e).pinned for e in ends[1:-1])
    n = w.store.particles.n
    for bad in (0, 1.5, "middle", ("start", None), {"start": 1}, b"start"):
        with pytest.raises(ValueError, match=r"\bpin\b"):
            build.rope(w, pin=bad)
    assert w.store.particles.n == n


def test_a_cloth_pinned_to_none_hangs_free() -> None:
    w = pysoft.World()
    body = build.cloth(w, cells=(2, 2), pin=None)
    assert not any(w.particle(e).pinned for e in w.body(body).particles)
    assert "None" in (build.cloth.__doc__ or "") and "None" in (build.rope.__doc__ or "")


@pytest.mark.parametrize("arg", ["particle_radius", "compliance", "wobble_damping", "match_stiffness"])
def test_none_where_a_builder_needs_a_number_names_it(arg: str) -> None:
    """None for an argument that has no derived default is refused naming it, also where the
    model does not use it (box's springs have no compliance): it used to be ignored, or
    reported as the particles' radii."""
    w = pysoft.World()
    with pytest.raises(ValueError, match=rf"\b{arg}\b"):
        build.box(w, **{arg: None})
    assert w.store.particles.n == 0


DERIVED: list[Any] = [
    # the default stiffness, 5000 N/m per kg, overflows
    pytest.param(build.box, {"mass": 1e308}, "mass", id="box-mass"),
    # the default damping, 0.4 sqrt(k m), overflows
    pytest.param(build.rope, {"mass": 1e306, "stiffness": 1e10}, "mass", id="rope-mass"),
    # the area springs, 2 k / |grad A|^2, overflow
    pytest.param(build.box, {"stiffness": 1e308}, "stiffness", id="box-stiffness"),
    pytest.param(build.ball, {"mass": 1e307}, "mass", id="ball-mass"),  # the default gas overflows
    pytest.param(build.ball, {"amount": 1e300}, "amount", id="ball-amount"),  # the skin's tension
    pytest.param(build.ball, {"inflation": 0.6}, "inflation", id="ball-inflation"),  # holds nothing
    pytest.param(build.blob, {"mass": 1e308}, "mass", id="blob-mass"),
    # pythoncdt's RuntimeError (duplicate vertices)
    pytest.param(build.circle, {"center": (0.0, 1e200), "model": "xpbd"}, "center", id="circle-center"),
    # a ring rounded onto a line: ZeroDivisionError in the default gas
    pytest.param(build.ball, {"center": (0.0, 1e200)}, "center", id="ball-center"),
    # ZeroDivisionError in the estimate of the particles
    pytest.param(build.polygon, {"vertices": SQUARE, "spacing": 1e-300}, "spacing", id="polygon-spacing"),
]


@pytest.mark.parametrize(("builder", "kwargs", "name"), DERIVED)
def test_a_derived_value_that_overflows_names_the_argument_it_came_from(
        builder: Callable[..., int], kwargs: dict[str, Any], name: str) -> None:
    scene = Scene()
    before = scene.state()
    with pytest.raises(ValueError, match=rf"^[^:]*\b{name}\b"):  # named first, as the culprit
        builder(scene.world, **kwargs)
    assert scene.state() == before


# -- shapes: normals and sizes at the ends of the float range --------------------------------

UNIT_DIAGONAL = pysoft.Plane((1.0, 1.0)).geometry(2).face_normal


@pytest.mark.parametrize("scale", [1e200, 1.7e308, 1e-200, 1e-320, 5e-324])
def test_a_plane_normal_keeps_its_direction_at_any_scale(scale: float) -> None:
    """The normal is divided by its largest component, then normalised: (s, s) gives the
    normal of (1, 1) bit for bit, where |normal|^2 overflowed (1.7e308: the normal (0, 0)),
    or lost bits (1e-200: an ulp off; 5e-324: (1, 1), not a unit vector)."""
    geo = pysoft.Plane((scale, scale)).geometry(2)
    assert geo.face_normal.tobytes() == UNIT_DIAGONAL.tobytes()
    along = pysoft.Plane((scale, 0.0, 0.0)).geometry(3)
    assert along.face_normal.tolist() == [[1.0, 0.0, 0.0]]


def test_a_plane_offset_is_divided_by_the_normal_length_without_its_square() -> None:
    assert pysoft.Plane((2e200, 0.0), 4e200).geometry(2).face_offset.tolist() == [2.0]
    assert pysoft.Plane((1.2e308, 1.2e308), 0.0).geometry(2).face_offset.tolist() == [0.0]
    w = pysoft.World()
    with pytest.raises(ValueError, match="offset"):  # 1 / 5e-324 is beyond the float range
        w.add_collider(pysoft.Plane((5e-324, 0.0), 1.0))
    assert w.store.colliders.n == 0


def test_a_plane_with_a_huge_normal_holds_a_particle_up(backend: str) -> None:
    """(1.7e308, 1.7e308): |normal|^2 overflowed and the plane got the normal (0, 0)."""
    w = pysoft.World(backend=backend)
    w.add_collider(pysoft.Plane((1.7e308, 1.7e308), 0.0))
    p = w.add_particle((0.3, -0.5))  # inside the half-space x + y < 0
    for _ in range(30):  # (a deep particle is pushed out over a few frames)
        w.step()
    assert float(w.particle(p).position.sum()) >= -1e-12


def test_a_huge_polygon_has_the_normals_of_the_small_one() -> None:
    """A triangle 1.5 x 2^511 m (about 1e154) across: its long edge's |n|^2 overflowed (it was
    refused as 'enclosing no area'); its normals are those of the unit triangle, bit for bit."""
    tri = np.array([(0.0, 0.0), (1.0, 0.0), (0.0, 1.0)])
    small = pysoft.Polygon(tri).geometry(2)
    big = pysoft.Polygon(tri * 1.5 * 2.0**511).geometry(2)
    assert big.face_normal.tobytes() == small.face_normal.tobytes()
    np.testing.assert_allclose(big.face_offset, small.face_offset * 1.5 * 2.0**511, rtol=1e-15)
    assert math.isfinite(big.bound)


TINY = 1e-160  # its square (1e-320) is subnormal: below validate.MIN_SIZE


@pytest.mark.parametrize(("shape", "name"), [
    (pysoft.Disc((0.0, 0.0), TINY), "radius"),
    (pysoft.Box((0.0, 0.0), (1.0, TINY)), "half_extents"),
    (pysoft.Segment((0.0, 0.0), (TINY, 0.0)), "a, b"),
    (pysoft.Segment((0.0, 0.0), (1.0, 0.0), TINY), "radius"),
], ids=["disc", "box", "segment-length", "segment-radius"])
def test_a_shape_whose_size_squared_underflows_is_refused(shape: Any, name: str) -> None:
    """A disc of radius 1e-160 had r^2 = 0 in the kernel (nothing ever touched it): sizes whose
    square is not a normal float are refused, naming the argument."""
    scene = Scene()
    before = scene.state()
    with pytest.raises(ValueError, match=name):
        scene.world.add_collider(shape)
    assert scene.state() == before
    with pytest.raises(ValueError, match="radius"):
        pysoft.Sphere((0.0, 0.0, 0.0), TINY).geometry(3)


# -- a polygon's winding and first vertex do not matter ---------------------------------------

# (counter-clockwise; listed from another vertex, its mean, the centre, rounds differently)
PENTAGON = np.array([(2.577, 1.217), (0.301, 1.599), (0.164, 0.72), (1.377, 0.0), (1.934, 0.121)])


def _listings(v: np.ndarray) -> list[np.ndarray]:
    """Every way to list a polygon: each first vertex, each winding."""
    return [np.roll(w, -k, axis=0) for w in (v, v[::-1]) for k in range(len(v))]


def test_a_polygon_is_stored_the_same_from_any_listing() -> None:
    ref = pysoft.Polygon(PENTAGON).geometry(2)
    for listing in _listings(PENTAGON):
        geo = pysoft.Polygon(listing).geometry(2)
        for field in ("center", "face_normal", "face_offset", "outline"):
            assert getattr(geo, field).tobytes() == getattr(ref, field).tobytes(), field
        assert (geo.bound, geo.grow) == (ref.bound, ref.grow)


def _drop_on(backend: str, vertices: np.ndarray) -> bytes:
    w = pysoft.World(backend=backend)
    w.add_collider(pysoft.Polygon(vertices), friction=0.5, restitution=0.2)
    build.box(w, center=(1.27, 3.5), size=(0.8, 0.5), cells=(3, 2))
    w.add_particle((1.67, 3.0), radius=0.05)
    for _ in range(60):
        w.step()
    assert len(w.contacts.particles)  # (resting on the polygon)
    return w.positions.tobytes() + w.velocities.tobytes()


def test_a_body_dropped_on_a_polygon_moves_the_same_for_any_listing(backend: str) -> None:
    """A clockwise-given polygon, or one listed from another vertex, is the same collider: a
    box and a particle dropped on it follow the same trajectories bit for bit."""
    ref = _drop_on(backend, PENTAGON)
    for listing in (PENTAGON[::-1], np.roll(PENTAGON, 2, axis=0), np.roll(PENTAGON[::-1], 3, axis=0)):
        assert _drop_on(backend, listing) == ref


# -- default rest lengths that overflow ------------------------------------------------------

FAR = [[-1e308, 0.0], [1e308, 0.0]]  # 2e308 apart: the distance is inf
FAR_SQUARED = [[0.0, 0.0], [1e200, 1e200]]  # 1.4e200 apart: the squared distance is inf


@pytest.mark.parametrize("where", [FAR, FAR_SQUARED], ids=["distance", "squared"])
@pytest.mark.parametrize(("call", "name"), [
    (lambda w, a, b: w.add_spring(a, b), "rest_length"),
    (lambda w, a, b: w.add_springs([[a, b]]), "rest_lengths"),
    (lambda w, a, b: w.add_distance_constraint(a, b), "rest_length"),
    (lambda w, a, b: w.add_distance_constraints([[a, b]]), "rest_lengths"),
], ids=["spring", "springs", "distance", "distances"])
def test_a_default_rest_length_that_overflows_is_refused(call: Callable[..., Any], name: str,
                                                         where: list[list[float]]) -> None:
    """Particles 2e308 m apart (or 1.4e200: the square of their distance overflows) had the
    rest length inf (a spring of inf N at rest, NaN on the first step): refused, naming the
    rest length and the particles, and nothing is added."""
    scene = Scene()
    w = scene.world
    a, b = w.add_particles(where)
    before = scene.state()
    with pytest.raises(ValueError, match=rf"{name}\b.*particles {a} and {b}"):
        call(w, a, b)
    assert scene.state() == before


def test_a_default_rest_area_or_volume_that_overflows_is_refused() -> None:
    scene = Scene()
    w = scene.world
    a, b, c = w.add_particles([[0.0, 0.0], [1e200, 0.0], [0.0, 1e200]])
    before = scene.state()
    with pytest.raises(ValueError, match="rest_areas"):
        w.add_area_spring(a, b, c, 1.0)
    with pytest.raises(ValueError, match="simplices"):
        w.add_volume_constraint([a, b, c])
    assert scene.state() == before


# -- snapshots: a collider's rotation and a well's minimum distance --------------------------


def _snapshot_scene(dim: int) -> pysoft.World:
    w = pysoft.World(dim=dim)
    up = (0.0, 1.0, 0.0)[:dim]
    w.add_collider(pysoft.Plane(up, 0.0))
    w.add_collider(pysoft.Box((0.0, 1.0, 0.0)[:dim], (0.5, 0.2, 0.3)[:dim], angle=0.3),
                   angular_velocity=0.5 if dim == 2 else (0.0, 0.4, 0.3))
    w.add_gravity_well((0.0, 5.0, 0.0)[:dim], 2.0)
    w.add_particles([(0.0, 2.0, 0.0)[:dim], (0.3, 2.5, 0.1)[:dim]])
    for _ in range(5):
        w.step()
    return w


def _set_row(row: int, value: Any) -> Callable[[np.ndarray], None]:
    def edit(arr: np.ndarray) -> None:
        arr[row] = value
    return edit


ROTATION_EDITS: dict[str, Callable[[int], Any]] = {
    "scaled": lambda dim: 2.0 * np.eye(dim),
    "sheared": lambda dim: np.eye(dim) + np.eye(dim, k=1),
    "mirrored": lambda dim: np.diag([1.0, -1.0, 1.0][:dim]),
    "zero": lambda dim: np.zeros((dim, dim)),
    "slightly-off": lambda dim: np.eye(dim) * (1.0 + 1e-5),
}


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("how", list(ROTATION_EDITS))
def test_a_snapshot_whose_collider_rotation_is_no_rotation_is_refused(how: str, dim: int) -> None:
    """A blob edited (and re-checksummed) to give a collider a rotation that is not
    orthonormal with determinant +1 (a scaled, sheared or mirrored matrix) is refused, and
    the world is unchanged; the kernel takes R^T for R's inverse."""
    w = _snapshot_scene(dim)
    blob = w.snapshot()
    w.step()
    before = (fingerprint(w), w.snapshot())
    bad = _with_array(blob, "colliders.rotation", _set_row(1, ROTATION_EDITS[how](dim)))
    with pytest.raises(ValueError, match=r"colliders\.rotation \(row 1"):
        w.restore(bad)
    assert (fingerprint(w), w.snapshot()) == before
    w.restore(blob)  # the blob as it was restores


@pytest.mark.parametrize("value", [0.0, -0.0])
def test_a_snapshot_whose_well_has_no_minimum_distance_is_refused(value: float) -> None:
    """min_distance 0 (add_gravity_well refuses it) divided by zero at the well's centre."""
    w = _snapshot_scene(2)
    blob = w.snapshot()
    before = (fingerprint(w), w.snapshot())
    with pytest.raises(ValueError, match=r"wells\.min_distance"):
        w.restore(_with_array(blob, "wells.min_distance", _set_row(0, value)))
    assert (fingerprint(w), w.snapshot()) == before


def test_a_spinning_3d_collider_restores_after_many_steps() -> None:
    """Rounding drifts a spinning collider's rotation from orthonormal a little each substep:
    the restore check leaves room for it (1e-6), so a live world's blob restores."""
    w = _snapshot_scene(3)
    box = w.collider(int(w.store.colliders.view("entity")[1]))
    box.angular_velocity = (3.0, 5.0, 7.0)
    for _ in range(300):
        w.step()
    rot = box.rotation
    drift = float(np.abs(rot @ rot.T - np.eye(3)).max())
    assert drift < 1e-6
    w.restore(w.snapshot())


# -- contacts never name a removed collider or body -------------------------------------------


def test_contacts_never_name_a_removed_collider(backend: str) -> None:
    """Particles rest on three colliders; removing the first (the last row moves into its
    place) leaves its contacts out of world.contacts, and the others' keep their names."""
    w = pysoft.World(backend=backend)
    ledges = [w.add_collider(pysoft.Box((x, 0.0), (0.4, 0.1))) for x in (0.0, 2.0, 4.0)]
    on = {c: w.add_particle((x, 0.2), radius=0.05) for c, x in zip(ledges, (0.0, 2.0, 4.0), strict=True)}
    for _ in range(20):
        w.step()
    before = dict(zip(w.contacts.particles.tolist(), w.contacts.colliders.tolist(), strict=True))
    assert before == {p: c for c, p in on.items()}
    w.remove(ledges[0])
    now = dict(zip(w.contacts.particles.tolist(), w.contacts.colliders.tolist(), strict=True))
    assert now == {on[c]: c for c in ledges[1:]}
    assert len(w.contacts.normals) == len(w.contacts.impulses) == 2
    w.step()
    assert ledges[0] not in w.contacts.colliders.tolist()


def test_body_contacts_never_name_a_removed_body(backend: str) -> None:
    w = pysoft.World(backend=backend)
    w.add_collider(pysoft.Plane((0.0, 1.0), 0.0))
    low = build.box(w, center=(0.0, 0.25), size=(0.5, 0.5), model="xpbd")
    build.box(w, center=(0.0, 0.8), size=(0.5, 0.5), model="xpbd")
    for _ in range(60):  # until the landing frame
        w.step()
        if low in w.body_contacts.bodies.tolist():
            break
    assert low in w.body_contacts.bodies.tolist()
    w.remove(low)
    assert low not in w.body_contacts.bodies.tolist()
    contacts = w.body_contacts
    assert len({len(contacts.particles), len(contacts.points), len(contacts.impulses)}) == 1


def test_a_particle_radius_whose_square_overflows_is_refused(backend: str) -> None:
    """The kernels square the sum of two radii: a radius beyond MAX_RADIUS (about 3.4e153 m)
    is refused, naming the argument; the world is unchanged."""
    w = pysoft.World(backend=backend)
    p = w.add_particle((0.0, 1.0), radius=pysoft._validate.MAX_RADIUS)  # the largest accepted
    before = fingerprint(w)
    for call, name in ((lambda: w.add_particle((0.0, 0.0), radius=1e200), "radius"),
                       (lambda: w.add_particles(np.zeros((2, 2)), radii=[0.1, 1e300]), "radii")):
        with pytest.raises(ValueError, match=name):
            call()
        assert fingerprint(w) == before
    w.step()
    assert np.isfinite(w.particle(p).position).all()
