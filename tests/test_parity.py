"""C-vs-NumPy parity for every registered kernel.

Each kernel's C code and NumPy twin evaluate the same expressions in the same
order (documented at the top of each csrc/src file), so written arrays and
return values must be identical bit for bit (``Kernel.ulp == 0``); a kernel
with a documented ULP bound is held to that bound instead. Cases come from
``tests/samplers.py``: n = 0, 1 and large, dim 2 and 3, pinned particles,
zero rest length, coincident endpoints, particles exactly on a plane, ragged
ranges with gaps. The World binds kernels to capacity-sized buffers and
passes live counts, so both backends are also held to touching only the
first ``count`` rows of arrays longer than that.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from samplers import SAMPLERS, arrays_of, scalars_of, spring_workspace

import pysoft  # noqa: F401  (registers every feature's kernels)
from pysoft import _kernels
from pysoft._kernels import REGISTRY

SIZES = (0, 1, 7, 2000)
PAD = 3  # extra rows after the live ones, in the padded cases
THREE_D_ONLY = {"xpbd_material"}  # kernels that do nothing in 2D: their padded case is 3D


def _copy(args: dict[str, Any]) -> dict[str, Any]:
    return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}


def _run(name: str, backend: str, args: dict[str, Any]) -> Any:
    return _kernels.call(name, backend, *scalars_of(name, args), **arrays_of(name, args))


def _ulp_distance(a: np.ndarray, b: np.ndarray) -> int:
    ia = a.view(np.int64).astype(np.int64)
    ib = b.view(np.int64).astype(np.int64)
    ia = np.where(ia < 0, np.iinfo(np.int64).min - ia, ia)
    ib = np.where(ib < 0, np.iinfo(np.int64).min - ib, ib)
    return int(np.abs(ia - ib).max(initial=0))


def _sample(name: str, n: int, dim: int, seed: int) -> dict[str, Any]:
    return SAMPLERS[name](np.random.default_rng(seed * 1000 + n * 10 + dim), n, dim)


def test_every_kernel_has_a_sampler() -> None:
    assert set(SAMPLERS) == set(REGISTRY)


@pytest.mark.parametrize("name", sorted(REGISTRY))
@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("seed", [0, 1])
def test_c_matches_numpy_twin(name: str, dim: int, n: int, seed: int) -> None:
    kernel = REGISTRY[name]
    args = _sample(name, n, dim, seed)
    c_args, py_args = _copy(args), _copy(args)
    c_out = _run(name, "c", c_args)
    py_out = _run(name, "python", py_args)
    assert c_out == py_out, f"{name}: return value C={c_out} NumPy={py_out}"
    for written in kernel.writes:
        a, b = c_args[written], py_args[written]
        if kernel.ulp == 0:
            assert a.tobytes() == b.tobytes(), (
                f"{name}.{written}: not bitwise equal, {_ulp_distance(a, b)} ULP apart")
        else:
            assert _ulp_distance(a, b) <= kernel.ulp
    # Read-only arrays are untouched by both (a workspace holds nothing of meaning).
    for arg in kernel.arrays:
        if arg.name not in kernel.writes and arg.name not in kernel.scratch:
            assert c_args[arg.name].tobytes() == args[arg.name].tobytes(), arg.name


def _padded(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """``args`` with PAD rows of poison after the live rows of every counted axis."""
    out = dict(args)
    for arg in REGISTRY[name].arrays:
        a = args[arg.name]
        if not isinstance(arg.shape[0], str) or arg.shape[0] == "dim":
            continue
        poison = 0 if a.dtype == np.int32 else np.nan  # index poison stays a valid row
        out[arg.name] = np.concatenate([a, np.full((PAD, *a.shape[1:]), poison, dtype=a.dtype)])
    return out


@pytest.mark.parametrize("name", sorted(REGISTRY))
@pytest.mark.parametrize("backend", ["c", "python"])
def test_kernels_touch_only_the_live_rows_of_longer_buffers(name: str, backend: str) -> None:
    """What the World does: bind once to buffers with spare rows, pass the live counts."""
    kernel = REGISTRY[name]
    args = _sample(name, 200, 3 if name in THREE_D_ONLY else 2, 7)
    plain = _copy(args)
    plain_out = _run(name, backend, plain)
    sizes = _kernels.Bound(name, backend, **arrays_of(name, args)).sizes
    padded = _padded(name, _copy(args))
    bound = _kernels.Bound(name, backend, **arrays_of(name, padded))
    out = bound.call(*(sizes[c] for c in kernel.counts), *scalars_of(name, args))
    assert out == plain_out
    for arg in kernel.arrays:
        if arg.name in kernel.scratch:
            continue
        a, live = padded[arg.name], plain[arg.name]
        assert a[: len(live)].tobytes() == live.tobytes(), f"{name}.{arg.name}: live rows differ"
        if arg.name in kernel.writes and len(a) > len(live):
            assert np.isnan(a[len(live):]).all() if a.dtype != np.int32 else (a[len(live):] == 0).all()


def test_every_kernel_is_in_the_header_and_the_registry() -> None:
    """Every function of the header is a registered kernel but those _build.NOT_OPS names
    (build information, which build to load, the benchmark's yardstick loops, the frame
    runner), and every prototype is one the frame runner's dispatch was generated from."""
    from pysoft._build import NOT_OPS, PROTOTYPE, cdef_text

    text = cdef_text()
    named = {tok[3:].split("(")[0] for tok in text.split() if tok.startswith("ps_") and "(" in tok}
    declared = {name for _, name, _ in PROTOTYPE.findall(text)}
    assert named == declared
    assert declared - set(NOT_OPS) == set(REGISTRY)


def test_every_kernel_twin_lives_in_the_twin_file_of_its_c_file() -> None:
    from pysoft._build import CSRC

    for kernel in REGISTRY.values():
        source = CSRC / "src" / f"{kernel.source}.c"
        assert f"ps_{kernel.name}(" in source.read_text(), kernel.name
        assert callable(kernel.twin)
        assert kernel.twin.__module__ == f"pysoft.twins.{kernel.source}"


def test_springs_never_produce_nan_for_coincident_endpoints() -> None:
    """A spring too short to have an axis gives f = -0.0: end a keeps its force bit for bit
    (even -0.0), end b subtracts -0.0 (so a -0.0 there becomes 0.0), on both backends."""
    for backend in ("c", "python"):
        force = np.full((2, 2), -0.0)
        pos = np.ones((2, 2))
        _kernels.call("springs", backend, 1, force=force, pos=pos, vel=np.zeros((2, 2)),
                      pairs=np.array([[0, 1]], dtype=np.int32), rest_length=np.array([1.0]),
                      stiffness=np.array([100.0]), damping=np.array([1.0]),
                      **spring_workspace(2, 1, 2))
        assert np.array_equal(force, np.zeros((2, 2)))
        assert np.signbit(force[0]).all() and not np.signbit(force[1]).any(), backend


def test_a_particle_of_fewer_springs_than_its_neighbours_keeps_a_negative_zero() -> None:
    """The twin sums every particle's k-th spring at once, padding shorter lists with -0.0
    (x + -0.0 is x bit for bit; 0.0 would turn a -0.0 sum into 0.0): particle 0's one spring
    has no axis (f = -0.0) and its force stays -0.0 while particle 1 adds two, on both backends."""
    for backend in ("c", "python"):
        force = np.full((3, 2), -0.0)
        pos = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
        _kernels.call("springs", backend, 2, force=force, pos=pos, vel=np.zeros((3, 2)),
                      pairs=np.array([[0, 1], [1, 2]], dtype=np.int32), rest_length=np.array([1.0, 0.5]),
                      stiffness=np.array([100.0, 100.0]), damping=np.array([1.0, 1.0]),
                      **spring_workspace(3, 2, 2))
        assert np.signbit(force[0]).all() and force[0].tolist() == [0.0, 0.0], backend
        assert force[1].tolist() == [50.0, 0.0] and force[2].tolist() == [-50.0, 0.0], backend


@pytest.mark.parametrize("backend", ["c", "python"])
def test_springs_rebuild_their_incidence_lists_when_the_springs_change(backend: str) -> None:
    """A bound spring kernel keeps each particle's list of springs between calls and rebuilds it
    when told the springs changed (incidence_state[0] = 0) or the counts differ: the same
    forces as a fresh one-off call after each change. Two threads and 9,000 springs: the lists
    serve the pass split over threads (one thread adds each spring's force as it goes)."""
    rng = np.random.default_rng(3)
    args = SAMPLERS["springs"](rng, 3000, 2)
    bound = _kernels.Bound("springs", backend, **arrays_of("springs", args))
    n, m = 3000, len(args["pairs"])
    for change in range(4):
        if change == 1:  # other pairs, same count: stale unless marked
            args["pairs"][:] = args["pairs"][rng.permutation(m)][:, ::-1]
            args["incidence_state"][0] = 0
        fresh = _copy(args)
        args["force"][:] = 0.0
        fresh["force"][:] = 0.0
        live = m - 7 if change >= 2 else m  # fewer springs, then fewer particles
        count_n = n - 1 if change == 3 else n
        if change == 3:
            fresh["pairs"] = fresh["pairs"].copy()
            keep = (fresh["pairs"][:live] < count_n).all(axis=1)
            args["pairs"][:live][~keep] = 0, 1
            fresh["pairs"][:live][~keep] = 0, 1
        bound.call(live, 2, count_n, 2)
        want = {k: (v[:live] if k in ("pairs", "rest_length", "stiffness", "damping", "incidence",
                                      "spring_force") else v[:count_n] if k in ("force", "pos", "vel",
                                                                                "spring_end") else v)
                for k, v in fresh.items()}
        _run("springs", backend, want)
        assert args["force"][:count_n].tobytes() == want["force"].tobytes(), change


@pytest.mark.parametrize("backend", ["c", "python"])
def test_wrapper_rejects_bad_arrays_before_c(backend: str) -> None:
    good = SAMPLERS["springs"](np.random.default_rng(0), 5, 2)
    arrays = arrays_of("springs", good)
    with pytest.raises(ValueError, match="pairs"):
        _kernels.bind("springs", backend, **{**arrays, "pairs": arrays["pairs"].astype(np.int64)})
    with pytest.raises(ValueError, match="force"):
        _kernels.bind("springs", backend, **{**arrays, "force": np.asfortranarray(
            np.zeros((5, 2)))[:, ::-1]})
    with pytest.raises(ValueError, match="rest_length"):
        _kernels.bind("springs", backend, **{**arrays, "rest_length": arrays["rest_length"][:-1]})
    bad_pairs = arrays["pairs"].copy()
    bad_pairs[0, 0] = 5
    with pytest.raises(ValueError, match="pairs holds rows outside"):
        _kernels.bind("springs", backend, **{**arrays, "pairs": bad_pairs})


@pytest.mark.parametrize("backend", ["c", "python"])
def test_a_one_off_call_checks_its_scalars(backend: str) -> None:
    """Found by fuzzing: h = 0 gave ZeroDivisionError from the twin and inf from C; a one-off
    call now refuses a non-finite scalar, or h <= 0, naming it."""
    args = SAMPLERS["xpbd_velocity"](np.random.default_rng(0), 5, 2)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="h must be"):
            _kernels.call("xpbd_velocity", backend, bad, **arrays_of("xpbd_velocity", args))
    with pytest.raises(ValueError, match="max_speed must be"):
        _kernels.call("find_unstable", backend, float("nan"),
                      **arrays_of("find_unstable", SAMPLERS["find_unstable"](np.random.default_rng(0), 5, 2)))


@pytest.mark.parametrize("backend", ["c", "python"])
def test_a_one_off_call_checks_that_batches_are_independent(backend: str) -> None:
    """Found by fuzzing: two constraints of one batch that share a particle (the solver's
    batches are independent by contract) made C (sequential) and the twin (a batch at once)
    disagree; a one-off call refuses them."""
    args = SAMPLERS["xpbd_distance"](np.random.default_rng(0), 8, 2)
    arrays = arrays_of("xpbd_distance", args)
    order, start = arrays["order"], arrays["batch_start"]
    first = order[start[0]:start[1]]
    assert len(first) >= 2
    pairs = arrays["pairs"].copy()
    pairs[first[1], 0] = pairs[first[0], 0]  # the batch's second constraint shares a particle
    if pairs[first[1], 0] == pairs[first[1], 1]:
        pairs[first[1], 1] = pairs[first[0], 1]
    with pytest.raises(ValueError, match="share a particle"):
        _kernels.call("xpbd_distance", backend, *scalars_of("xpbd_distance", args),
                      **{**arrays, "pairs": pairs})


def test_body_contacts_twin_takes_a_nan_position_as_c_does() -> None:
    """Found by fuzzing: a NaN position (a world that went unstable within a frame) raised
    ValueError from the twin's cell (math.floor of NaN) where C clamps the cell; and the
    twin's sqrt of a negative friction product raised where C's gives NaN. Both run now."""
    for backend in ("c", "python"):
        args = SAMPLERS["body_contacts"](np.random.default_rng(0), 9, 2)
        args["pos"][0, 0] = np.nan
        _kernels.call("body_contacts", backend, *scalars_of("body_contacts", args),
                      **arrays_of("body_contacts", args))


def test_the_twins_scatter_add_is_np_add_at_bit_for_bit() -> None:
    """``twins._common.scatter_add`` (bincount per column) against ``np.add.at`` on rows that
    repeat, rows with no additions, and values among -0.0, 0.0, tiny, huge, inf and NaN:
    the same bytes, the sign of every zero included, NaN where NaN (not its payload, which
    IEEE leaves to the machine and compilers may swap the operands of a sum for)."""
    from pysoft.twins._common import scatter_add

    rng = np.random.default_rng(7)
    pool = np.array([-0.0, 0.0, 1e-300, -1e-300, 1.0, -3.5, 1e300, -1e300, np.inf, -np.inf, np.nan])
    for trial in range(200):
        n, m = int(rng.integers(1, 12)), int(rng.integers(0, 40))
        out = rng.choice(pool, size=(n, 2)) if trial % 2 else rng.normal(size=(n, 2))
        rows = rng.integers(0, n, size=m)
        vals = rng.choice(pool, size=(m, 2)) if trial % 3 else rng.normal(size=(m, 2))
        want, got = out.copy(), out.copy()
        with np.errstate(invalid="ignore", over="ignore"):
            np.add.at(want, rows, vals)
            scatter_add(got, rows, vals)
        nan = np.isnan(want)
        assert np.array_equal(nan, np.isnan(got)), trial
        assert want[~nan].tobytes() == got[~nan].tobytes(), trial


@pytest.mark.parametrize("friction", [0.5, 0.0])
@pytest.mark.parametrize("tilt", [0.0, 0.3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_particles_resting_on_one_floor_match_the_twin(seed: int, tilt: float, friction: float) -> None:
    """A single still floor (level, or tilted by 0.3 rad and offset, where a particle pushed
    out by its depth can land a rounding inside; with friction, or frictionless, where static
    friction holds nothing: none is stuck) and 2,000 particles on and near it in every
    state its contact can be in: resting just inside it (slipping or held by static
    friction), inside it and moving away, arriving fast (bouncing), deep inside (the push-out
    speed limits them), clear of it, immovable; shuffled, so the x86-64-v3 build's
    four-at-a-time path for a single floor meets every mix of common and rare particles in
    its groups (it hands a group with a rare one to the scalar loop). C and twin bit for bit."""
    from samplers import _collide_args

    from pysoft import shapes
    from pysoft._constants import MAX_PUSHOUT_SPEED

    rng = np.random.default_rng(seed)
    n, dim = 2000, 2
    normal, offset = np.array([np.sin(tilt), np.cos(tilt)]), -0.7 * np.sin(tilt)
    along = np.array([normal[1], -normal[0]])
    args = _collide_args(rng, n, dim, [shapes.Plane(normal, offset)], moving=False)
    h = args["h"]
    radius = rng.uniform(0.0, 0.02, n)
    state = rng.choice(["resting", "leaving", "bouncing", "deep", "clear"], n, p=[0.6, 0.1, 0.1, 0.1, 0.1])
    depth = np.select([state == "deep", state == "clear"],
                      [rng.uniform(2.0, 10.0, n) * MAX_PUSHOUT_SPEED * h, -rng.uniform(1e-6, 0.1, n)],
                      rng.uniform(0.0, 1e-4, n))
    pos = rng.uniform(-5.0, 5.0, n)[:, None] * along + (offset + radius - depth)[:, None] * normal
    held = rng.random(n) < 0.5  # slow along the floor: static friction holds them
    slide = np.where(held, rng.normal(0.0, 1e-3, n), rng.normal(0.0, 0.5, n))
    rise = np.select([state == "leaving", state == "bouncing"],
                     [rng.uniform(0.01, 0.5, n), -rng.uniform(1.0, 5.0, n)], -rng.uniform(0.0, 0.05, n))
    vel = slide[:, None] * along + rise[:, None] * normal
    prev = pos - h * vel
    deep = state == "deep"
    prev[deep] = pos[deep]  # it began the substep that deep
    mass = rng.uniform(0.5, 2.0, n)
    args.update(pos=pos, vel=vel, prev_pos=prev, radius=radius, mass=mass,
                inv_mass=np.where(rng.random(n) < 0.05, 0.0, 1.0 / mass),
                friction=np.array([friction]), threads=1, clear=seed % 2)
    out = {backend: _copy(args) for backend in ("c", "python")}
    counts = {backend: _run("collide", backend, out[backend]) for backend in out}
    assert counts["c"] == counts["python"] > n // 2
    for name in ("pos", "vel", "contact_collider", "contact_normal", "contact_impulse", "support", "stuck"):
        assert out["c"][name].tobytes() == out["python"][name].tobytes(), name
    assert bool(out["c"]["stuck"].any()) == (friction > 0.0)


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_collide_against_still_planes_only_matches_its_twin(dim: int, seed: int) -> None:
    """The collide kernel's path for a world whose colliders are all still planes (a floor and
    walls: the search in the world frame, samplers' mixed colliders never take it): rotated and
    offset planes, particles deep inside one at the substep's start (pushed out at the push-out
    speed), resting on one, arriving fast, in a corner between two. C and twin bit for bit."""
    from samplers import collider_arrays, frictions, particles

    from pysoft import shapes

    rng = np.random.default_rng(seed)
    normals = [(0.0, 1.0, 0.0), (np.cos(0.3), np.sin(0.3), 0.0), (-1.0, 0.2, 0.0)]
    planes = [shapes.Plane(np.array(nrm[:dim]) / np.linalg.norm(nrm[:dim]), float(off))
              for nrm, off in zip(normals, (-0.5, -1.2, -1.0), strict=True)][: seed + 1]
    colliders = collider_arrays([p.geometry(dim) for p in planes], dim)
    k, n, h = len(planes), 400, 1.0 / 480.0
    p = particles(rng, n, dim)
    prev = p["pos"] - h * rng.normal(0.0, 30.0, (n, dim))
    prev[: n // 4] = p["pos"][: n // 4] + rng.normal(0.0, 0.002, (n // 4, dim))  # slow: resting or deep
    args = {"pos": p["pos"], "vel": p["vel"], "contact_collider": np.full(n, -1, dtype=np.int32),
            "contact_normal": np.zeros((n, dim)), "contact_impulse": np.zeros(n),
            "support": np.zeros((n, dim)), "stuck": np.zeros(n, dtype=np.int32), "prev_pos": prev,
            "radius": rng.uniform(0.0, 0.05, n), "mass": p["mass"], "inv_mass": p["inv_mass"],
            **colliders, "velocity": np.zeros((k, dim)), "angular_velocity": np.zeros((k, 3)),
            "restitution": rng.uniform(0.0, 1.0, k), "friction": frictions(rng, k),
            "keep": np.exp(-rng.uniform(0.0, 5.0, k) * h), "iterations": dim, "h": h,
            "rest_speed": 0.25, "threads": 1, "clear": seed % 2}
    deep = (p["pos"][:, 1] < -0.5 - 0.01).sum()
    assert deep > 10  # some start deep in the floor: the push-out speed limits them
    out = {backend: _copy(args) for backend in ("c", "python")}
    counts = {backend: _run("collide", backend, out[backend]) for backend in out}
    assert counts["c"] == counts["python"] > 0
    for name in ("pos", "vel", "contact_collider", "contact_normal", "contact_impulse", "support", "stuck"):
        assert out["c"][name].tobytes() == out["python"][name].tobytes(), name


@pytest.mark.parametrize("name", ["xpbd_distance", "xpbd_volume"])
@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("follow", [0, 1])
def test_the_positions_only_solve_matches_its_twin(name: str, dim: int, follow: int) -> None:
    """Both ways of the distance and volume solves (follow 1: the velocities move with the
    corrections; 0: they are left alone, a distance's cap taking the ends' relative velocity
    from the positions), capped corrections among them: C and twin bit for bit, and follow 0
    writes no velocity."""
    args = {**_sample(name, 2000, dim, 3), "follow": follow}
    c_args, py_args = _copy(args), _copy(args)
    _run(name, "c", c_args)
    _run(name, "python", py_args)
    for written in REGISTRY[name].writes:
        assert c_args[written].tobytes() == py_args[written].tobytes(), written
    assert not np.array_equal(c_args["withheld"], args["withheld"])  # some corrections were capped
    assert np.array_equal(c_args["vel"], args["vel"]) == (follow == 0)
