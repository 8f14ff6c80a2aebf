"""``python -m pysoft bench``: the canonical scene at several sizes, and every kernel.

All ratios are measured in the same run (this machine may be shared and
noisy), with the compared loops interleaved in rounds and the median round
kept:

* vs reference: ``World.step`` against a straightforward scalar C loop of the
  same scene (``csrc/src/reference.c``, written to the yardstick's
  specification: one loop over springs scattering forces as it goes, one loop
  integrating with the floor test), one foreign call per step as for
  ``World.step``; above 1 pysoft is faster. This is the measure of
  efficiency, against code pysoft's kernels did not shape;
* binding overhead: ``World.step`` over the same C kernels called directly, one
  foreign call each, on the same arrays (the features' bound kernels): what the
  Python seam costs, not how fast the kernels are;
* C/NumPy: the same scene stepped by a ``backend="python"`` world;
* NumPy vs plain NumPy: that world's step against plain NumPy code of the same scene
  (``PlainNumpy``, the yardstick's NumPy peer: ``np.bincount`` scatter), both timed from the
  landed scene (2 s in, as the yardstick times them); above 1 the NumPy backend is faster;
* ns per spring: the spring kernel alone, divided by the spring count; and the spring kernel
  against the reference's spring loop alone (``ps_reference_springs``), interleaved.
"""

from __future__ import annotations

import importlib.util
import json
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from pysoft import _kernels as kernels
from pysoft import _native, peers, scenes
from pysoft.features.colliders import Colliders
from pysoft.features.gravity import Gravity
from pysoft.features.particles import Particles
from pysoft.features.springs import Springs
from pysoft.shapes import Plane
from pysoft.world import World

# s: by then the canonical scene's boxes have landed (the yardstick checks its scene at 2 s and
# times from there; the peers' scene check looks at the half second before)
LANDED = 2.0


def _rounds(fns: dict[str, Callable[[], None]], repeat: int, rounds: int) -> dict[str, float]:
    """Median over ``rounds`` of the seconds per call of each fn, interleaved."""
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(repeat):
                fn()
            samples[name].append((time.perf_counter() - t0) / repeat)
    return {k: statistics.median(v) for k, v in samples.items()}


def _direct_kernels(world: World) -> Callable[[], None]:
    """One frame's kernels called directly on the world's arrays (no stages, no systems)."""
    feature = world._feature
    gravity = cast(Gravity, feature[Gravity]).term.gravity[0]
    spring_term = cast(Springs, feature[Springs]).term
    springs = spring_term.calls[0]
    particles = cast(Particles, feature[Particles])
    integrate, unstable = particles.integrators.symplectic_euler, particles.scan.find_unstable
    colliders = cast(Colliders, feature[Colliders])
    collide, faces = colliders.term.collide, colliders.faces.flat
    P, C = world.store.particles, world.store.colliders
    h = world.dt / world.substeps
    rest, max_speed, drag = world.restitution_threshold, world.max_speed, world.drag
    iterations, dim = world.contact_iterations, world.dim

    def frame() -> None:
        n = P.n
        for k in range(world.substeps):
            gravity(n, dim, drag, int(k == 0))
            springs(*spring_term.arguments())
            integrate(n, dim, h)
            collide(n, C.n, faces.n, dim, iterations, h, rest, world.threads, int(k == 0))
        unstable(n, dim, max_speed)

    return frame


def row_bytes(table: Any) -> int:
    """Bytes one row of ``table`` takes in the Store (every field, workspace included)."""
    return sum(f.row_bytes() for f in table.fields.values())


class Reference:
    """The scene of ``world`` (particles, springs of one stiffness and damping, a floor at
    y = 0 of restitution 0.2 and friction 0.5) copied into the reference loop's arrays."""

    def __init__(self, world: World) -> None:
        P, S = world.store.particles, world.store.springs
        pos, vel = P.view("pos"), P.view("vel")
        self.x, self.y = (np.ascontiguousarray(pos[:, c]) for c in range(2))
        self.vx, self.vy = (np.ascontiguousarray(vel[:, c]) for c in range(2))
        self.fx, self.fy = np.zeros_like(self.x), np.zeros_like(self.x)
        pairs = S.view("pairs")
        self.a, self.b = (np.ascontiguousarray(pairs[:, c], dtype=np.int32) for c in range(2))
        self.rest = np.ascontiguousarray(S.view("rest_length"))
        self.k, self.c = float(S.view("stiffness")[0]), float(S.view("damping")[0])
        self.inv_mass = float(P.view("inv_mass")[0])
        self.dt, self.g = world.dt, float(world.gravity[1])
        ffi, self.lib = _native.require()
        self.args = [ffi.cast("double *", ffi.from_buffer(v)) for v in (
            self.x, self.y, self.vx, self.vy, self.fx, self.fy)] + [
            ffi.cast("int32_t *", ffi.from_buffer(self.a)), ffi.cast("int32_t *", ffi.from_buffer(self.b)),
            ffi.cast("double *", ffi.from_buffer(self.rest))]

    def springs(self) -> None:
        """The reference's spring loop alone."""
        self.lib.ps_reference_springs(*self.args, len(self.x), len(self.a), self.k, self.c)

    def steps(self, count: int) -> None:
        self.lib.ps_reference_steps(*self.args, len(self.x), len(self.a), self.k, self.c, self.dt,
                                    self.inv_mass, self.g, 0.2, 0.5, count)


class PlainNumpy:
    """The scene of ``world`` stepped by plain NumPy code, as a NumPy programmer writes it
    first (the yardstick's NumPy peer): structure of arrays, one vectorised pass over the
    springs, scattered with ``np.bincount``, semi-implicit Euler and the reference's floor
    (position projection; restitution and Coulomb friction on the velocity). The measure of
    the NumPy backend's efficiency, as ``Reference`` is of the C core's."""

    def __init__(self, world: World) -> None:
        P, S = world.store.particles, world.store.springs
        pos, vel = P.view("pos"), P.view("vel")
        self.x, self.y = pos[:, 0].copy(), pos[:, 1].copy()
        self.vx, self.vy = vel[:, 0].copy(), vel[:, 1].copy()
        pairs = S.view("pairs")
        self.a, self.b = pairs[:, 0].astype(np.intp), pairs[:, 1].astype(np.intp)
        self.rest = S.view("rest_length").copy()
        self.k, self.c = float(S.view("stiffness")[0]), float(S.view("damping")[0])
        self.inv_mass, self.dt, self.g = float(P.view("inv_mass")[0]), world.dt, float(world.gravity[1])

    def steps(self, count: int, e: float = 0.2, mu: float = 0.5) -> None:
        a, b, n, dt = self.a, self.b, len(self.x), self.dt
        for _ in range(count):
            dx, dy = self.x[b] - self.x[a], self.y[b] - self.y[a]
            length = np.sqrt(dx * dx + dy * dy)
            nx, ny = dx / length, dy / length
            f = self.k * (length - self.rest) + self.c * ((self.vx[b] - self.vx[a]) * nx
                                                          + (self.vy[b] - self.vy[a]) * ny)
            fx, fy = f * nx, f * ny
            self.vx += dt * self.inv_mass * (np.bincount(a, fx, n) - np.bincount(b, fx, n))
            self.vy += dt * self.inv_mass * (np.bincount(a, fy, n) - np.bincount(b, fy, n)) + dt * self.g
            self.x += dt * self.vx
            self.y += dt * self.vy
            hit = np.flatnonzero(self.y < 0.0)
            if len(hit):
                self.y[hit] = 0.0
                u, v = self.vx[hit], self.vy[hit]
                dvn = np.where(v < 0.0, (1.0 + e) * -v, 0.0)
                self.vy[hit] = np.where(v < 0.0, -e * v, v)
                self.vx[hit] = np.sign(u) * (np.abs(u) - np.minimum(np.abs(u), mu * dvn))


def bench_scene(particles: int, rounds: int = 5, numpy_frames: int = 3) -> dict[str, Any]:
    """The 'boxes' scene at one size: build time, step rates, passes, ratios."""
    t0 = time.perf_counter()
    world = scenes.boxes(particles)
    build_s = time.perf_counter() - t0
    n, m = world.store.particles.n, world.store.springs.n
    reference = Reference(world)
    landed = round(LANDED / world.dt)  # timed from the landed scene, as the yardstick times it
    for _ in range(landed):
        world.step()
    reference.steps(landed)
    repeat = max(1, int(2e7 // (n + m)))  # about 20 to 50 ms a call: caches warm as in a game loop
    direct = _direct_kernels(world)
    springs = cast(Springs, world._feature[Springs]).probes()["springs"][1]
    passes: dict[str, list[float]] = {}

    def step() -> None:
        world.step()
        for k, v in world.profile.items():
            passes.setdefault(k, []).append(v)

    def at(threads: int, fn: Callable[[], None]) -> Callable[[], None]:
        """fn on ``threads`` threads, the count set at the first call of each block of calls
        (a changed setting has the next frame ask every term for its calls again: a game
        pays that once when it changes the count, not at every step)."""
        def call() -> None:
            if world.threads != threads:
                world.threads = threads
            fn()
        return call

    # step_threads: the same world on two threads (the same bits: only faster)
    t = _rounds({"step": at(1, step), "step_threads": at(2, world.step), "direct": at(1, direct),
                 "springs": springs,
                 "reference": lambda: reference.steps(1), "reference_springs": reference.springs},
                repeat, rounds)
    py = scenes.boxes(particles, backend="python")
    plain = PlainNumpy(py)
    for _ in range(landed):
        py.step()
    plain.steps(landed)
    t_np = _rounds({"numpy": py.step, "plain": lambda: plain.steps(1)}, numpy_frames, max(1, rounds // 2))
    t_py = t_np["numpy"]
    return {
        "particles": n, "springs": m, "build_s": build_s,
        "step_ms": 1e3 * t["step"], "direct_ms": 1e3 * t["direct"],
        "steps_per_s": 1.0 / t["step"], "particle_steps_per_s": n / t["step"],
        "ns_per_spring": 1e9 * t["springs"] / m, "springs_us": 1e6 * t["springs"],
        "reference_springs_us": 1e6 * t["reference_springs"],
        "springs_vs_reference": t["springs"] / t["reference_springs"],
        "overhead": t["step"] / t["direct"], "numpy_step_ms": 1e3 * t_py,
        "reference_ms": 1e3 * t["reference"], "vs_reference": t["reference"] / t["step"],
        "step_threads_ms": 1e3 * t["step_threads"],
        "vs_reference_threads": t["reference"] / t["step_threads"],
        "bytes_per_particle": row_bytes(world.store.particles),
        "bytes_per_spring": row_bytes(world.store.springs),
        "c_over_numpy": t_py / t["step"], "plain_numpy_ms": 1e3 * t_np["plain"],
        "numpy_vs_plain": t_np["plain"] / t_py,
        "passes_ms": {k: statistics.median(v) for k, v in passes.items()},
    }


def bench_peers(particles: int = 10_000, rounds: int = 3, steps: int = 20) -> list[dict[str, Any]]:
    """Each installed peer engine (``pysoft.peers``) against ``World.step`` on the canonical
    scene, interleaved; then the peer runs on to 2 s for the scene check, on its boxes' mean
    height over the last 0.5 s (a soft engine's boxes may still rebound at 2 s)."""
    out = []
    for name, make in peers.available().items():
        world = scenes.boxes(particles)
        step, height = make(scenes.boxes(particles))
        t = _rounds({"pysoft": world.step, name: step}, steps, rounds)
        left, window = round(LANDED / world.dt) - steps * rounds, round(0.5 / world.dt)
        heights = []
        for k in range(left):
            step()
            if k >= left - window:
                heights.append(height())
        h = statistics.fmean(heights)
        out.append({"peer": name, "particles": world.store.particles.n, "steps_per_s": 1.0 / t[name],
                    "pysoft_steps_per_s": 1.0 / t["pysoft"], "pysoft_over_peer": t[name] / t["pysoft"],
                    "height": h, "landed": peers.landed(h)})
    return out


def bench_peers_3d(cubes: int = 80, rounds: int = 2, frames: int = 2, check_cubes: int = 4) -> dict[str, Any]:
    """MuJoCo's flex on the 3D tet-cubes scene (``peers.mujoco_flex_cubes``) against
    ``World.step`` of ``scenes.tet_cubes(cubes)``, frames interleaved; the scene check on
    ``check_cubes`` cubes run 2 s (the lowest vertex within 1 cm of the floor, the fastest under
    0.05 m/s). Empty when MuJoCo is not installed."""
    if not importlib.util.find_spec("mujoco"):
        return {}
    world = scenes.tet_cubes(cubes)
    step, _ = peers.mujoco_flex_cubes(world)
    t = _rounds({"pysoft": world.step, "mujoco flex": step}, frames, rounds)
    small = scenes.tet_cubes(check_cubes)
    check_step, check = peers.mujoco_flex_cubes(small)
    for _ in range(round(LANDED / small.dt)):
        check_step()
    lowest, fastest = check()
    return {"cubes": cubes, "particles": world.store.particles.n, "pysoft_frames_per_s": 1.0 / t["pysoft"],
            "mujoco_frames_per_s": 1.0 / t["mujoco flex"],
            "pysoft_over_mujoco": t["mujoco flex"] / t["pysoft"],
            "landed": abs(lowest) < 0.01 and fastest < 0.05, "lowest": lowest, "fastest": fastest}


def bench_floor(particles: int = 10_000, rounds: int = 3) -> dict[str, Any]:
    """The collide pass against one floor plane, on the canonical scene once its boxes rest (2 s
    in: a tenth of the particles lie on the floor): the collide stage of ``World.step`` (the
    kernel, which clears the contact report itself), in ns per particle. The frame runs in one
    call of the C core (``pysoft._frame``), which times each stage's kernels; the stage's Python,
    once a frame before that call (the moving-collider check and the tangential damping's
    refresh: about 1.9 µs at 10,000 particles, 0.19 ns per particle), is not in the figure.
    (The kernel alone, timed on a restored state less the restoring, came out above the stage
    it is part of: the copies' effect on the caches is larger than the kernel's share.)"""
    world = scenes.boxes(particles)
    for _ in range(round(LANDED / world.dt)):
        world.step()
    stage: list[float] = []

    def step() -> None:
        world.step()
        stage.append(world.profile["collide"])

    _rounds({"step": step}, 20, rounds)
    P = world.store.particles
    return {"particles": P.n, "stage_ns": 1e6 * statistics.median(stage) / P.n,
            "resting": int((P.view("pos")[:, 1] < 0.02).sum())}


def bench_contacts(particles: int = 10_000, colliders: int = 64, frames: int = 120,
                   rounds: int = 3) -> dict[str, Any]:
    """The obstacle course: ns per particle-collider test in the collide pass (C)."""
    world = scenes.obstacle_course(particles, colliders)
    for _ in range(frames):  # let the rain reach the obstacles
        world.step()
    passes: list[float] = []

    def step() -> None:
        world.step()
        passes.append(world.profile["collide"])

    t = _rounds({"step": step}, 20, rounds)["step"]
    collide_ms = statistics.median(passes)
    k = world.store.colliders.n
    return {"particles": world.store.particles.n, "colliders": k, "step_ms": 1e3 * t,
            "collide_ms": collide_ms, "contacts": len(world.contacts.particles),
            "ns_per_test": 1e6 * collide_ms / (world.store.particles.n * k)}


MODEL_SCENES: dict[str, Callable[[], World]] = {
    "pressure balls": lambda: scenes.pressure_balls(100),
    "shape-matched boxes": lambda: scenes.matched_boxes(100),
    "XPBD cloth": lambda: scenes.xpbd_cloth(100),
    "3D XPBD tet cubes": lambda: scenes.tet_cubes(80),
}
TET_CUBES_TARGET = 60.0  # frames per second on one thread, 10,000 particles (issue 34)
PILE3D_RATIO_TARGET = 2.5  # the 3D pile: a frame with body contacts over the same frame without
PILE3D_FPS_TARGET = 30.0  # the 3D pile's frames per second on one thread (issue 35)


def bench_models(rounds: int = 3, frames: int = 10) -> list[dict[str, Any]]:
    """One scene per body model at the World defaults (60 Hz, 8 substeps): ms per frame and pass."""
    out = []
    for name, make in MODEL_SCENES.items():
        t0 = time.perf_counter()
        world = make()
        build_s = time.perf_counter() - t0
        world.step()
        passes: dict[str, list[float]] = {}

        def step(world: World = world, passes: dict[str, list[float]] = passes) -> None:
            world.step()
            for k, v in world.profile.items():
                passes.setdefault(k, []).append(v)

        if world.dim == 3:  # a 3D scene lands first (its frames at rest are the game's)
            for _ in range(60):
                world.step()
        t = _rounds({"frame": step}, frames, rounds)["frame"]
        s = world.store
        passes_ms = {k: statistics.median(v) for k, v in passes.items()}
        constraints = s.distances.n + s.volumes.n
        sweeps = constraints * world.substeps * world.constraint_iterations  # per frame
        out.append({"scene": name, "particles": s.particles.n, "springs": s.springs.n,
                    "constraints": constraints, "bodies": s.bodies.n,
                    "build_s": build_s, "frame_ms": 1e3 * t, "passes_ms": passes_ms,
                    "ns_per_constraint_iteration":
                        1e6 * passes_ms["constraints"] / sweeps if sweeps else 0.0})
    return out


def bench_small_body(rounds: int = 5) -> dict[str, Any]:
    """One 25-particle spring body, 60 Hz frames of 8 substeps: microseconds per frame."""
    world = World()
    world.add_collider(Plane(normal=(0.0, 1.0), offset=0.0))
    scenes.add_boxes(world, np.array([[0.0, 0.5]]), cells=5)
    world.step()
    t = _rounds({"frame": world.step}, 500, rounds)["frame"]
    return {"particles": world.store.particles.n, "substeps": world.substeps, "frame_us": 1e6 * t}


def _mapped() -> tuple[float, float]:
    """This process's address space and resident memory now (bytes; Linux's /proc, else 0)."""
    try:
        with open("/proc/self/statm") as statm:
            size, resident = (int(v) for v in statm.read().split()[:2])
    except OSError:
        return 0.0, 0.0
    page = 4096
    return float(size * page), float(resident * page)


def bench_many(count: int = 256, rounds: int = 5, frames: tuple[int, ...] = (1, 60)) -> dict[str, Any]:
    """``count`` worlds of one 25-particle spring box each, landed on a floor (60 Hz, 8
    substeps): a Python loop of ``w.step()`` against ``pysoft.step_many`` on one thread and on
    two, per call of ``frames`` frames (rounds interleaved, medians); world-frames per second. Also the
    address space and resident memory a world of the default capacity takes, and one of
    ``capacity=4096``."""
    from pysoft import step_many

    def box(i: int, **world_args: Any) -> World:
        w = World(**world_args)
        w.add_collider(Plane(normal=(0.0, 1.0), offset=0.0))
        scenes.add_boxes(w, np.array([[0.01 * i, 0.5]]), cells=5)
        return w

    size0, rss0 = _mapped()
    worlds = [box(i) for i in range(count)]
    step_many(worlds, 120)  # landed (2 s)
    size1, rss1 = _mapped()
    small = [box(i, capacity=4096) for i in range(count)]
    for w in small:
        w.step()
    size2, rss2 = _mapped()
    del small
    # each way steps worlds of its own, the same resting boxes (a world stepped by step_many's
    # calls one after another continues each frame from the last in C; a step() in between
    # would start the next one from Python)
    ways = {"loop": worlds, "many": [box(i) for i in range(count)], "many2": [box(i) for i in range(count)]}
    for way in ("many", "many2"):
        step_many(ways[way], 120)
    out: dict[str, Any] = {"worlds": count, "particles": worlds[0].store.particles.n,
                           "substeps": worlds[0].substeps,
                           "virtual_mib_per_world": (size1 - size0) / count / 2**20,
                           "resident_kib_per_world": (rss1 - rss0) / count / 1024,
                           "small_virtual_mib_per_world": (size2 - size1) / count / 2**20,
                           "small_resident_kib_per_world": (rss2 - rss1) / count / 1024, "calls": []}
    for f in frames:
        def loop(f: int = f) -> None:
            for w in worlds:
                for _ in range(f):
                    w.step()

        t = _rounds({"loop": loop, "many": lambda f=f: step_many(ways["many"], f),  # type: ignore[misc]
                     "many2": lambda f=f: step_many(ways["many2"], f, threads=2)},  # type: ignore[misc]
                    1, rounds)
        rate = {k: count * f / v for k, v in t.items()}
        out["calls"].append({"frames": f, "loop_per_s": rate["loop"], "many_per_s": rate["many"],
                             "many2_per_s": rate["many2"], "many_vs_loop": t["loop"] / t["many"],
                             "many2_vs_loop": t["loop"] / t["many2"]})
    return out


# The soft-robot environments' targets (simulated seconds per second of wall time): Evolution
# Gym's Walker-v0 with a 5 x 5 robot, measured on the machine these figures come from, runs about
# 500 env.step() a second of 30 substeps of 0.1 ms: ~1.5 simulated seconds per second
WALKER_REFERENCE_SIM_S = 1.5
WALKER_SINGLE_TARGET = 50.0  # simulated s/s, one environment
WALKER_VECTOR_TARGETS = {1: 3.0, 2: 5.0}  # the vector env of 64 over one environment, by threads


def bench_walkers(num_envs: int = 64, rounds: int = 5, steps: int = 300,
                  vector_steps: int = 30) -> dict[str, Any] | None:
    """``pysoft/Walker-v0`` (the default 5 x 5 walker, 60 Hz, its 8 substeps) driven by the fixed
    gait of ``pysoft.envs.walker.gait``: ``env.step()`` a second of one environment made by
    ``gymnasium.make`` (its wrappers included), and of the vector environment of ``num_envs``
    (``gymnasium.make_vec``, one ``step_many`` call a step) on one thread and on two; rounds
    interleaved, medians; simulated seconds per second of wall time and the ratios to one
    environment. None without gymnasium (the ``rl`` extra)."""
    if importlib.util.find_spec("gymnasium") is None:
        return None
    import gymnasium as gym

    import pysoft.envs
    from pysoft.build.voxels import GAIT_FREQUENCY, gait

    single = gym.make("pysoft/Walker-v0", max_episode_steps=None)
    vectors = {t: gym.make_vec("pysoft/Walker-v0", num_envs=num_envs, threads=t, max_episode_steps=None)
               for t in (1, 2)}
    walker = cast(pysoft.envs.WalkerEnv, single.unwrapped)
    period = round(60.0 / GAIT_FREQUENCY)  # frames
    table = np.stack([gait(walker.robot.actuators, f, np.empty(len(walker.robot.actuators)))
                      for f in range(period)])
    batch = np.repeat(table[:, None, :], num_envs, axis=1)
    single.reset(seed=0)
    for v in vectors.values():
        v.reset(seed=0)
    clock = {"frame": 0}

    def one() -> None:
        for f in range(steps):
            single.step(table[f % period])

    def many(t: int) -> Callable[[], None]:
        def run() -> None:
            for _ in range(vector_steps):
                vectors[t].step(batch[clock["frame"] % period])
                clock["frame"] += 1
        return run

    times = _rounds({"single": one, "vector1": many(1), "vector2": many(2)}, 1, rounds)
    dt = walker.world.dt
    rate = {"single": steps / times["single"],
            **{f"vector{t}": num_envs * vector_steps / times[f"vector{t}"] for t in (1, 2)}}
    out: dict[str, Any] = {"particles": len(walker.robot.particles),
                           "springs": walker.world.store.springs.n, "substeps": walker.world.substeps,
                           "hz": round(1.0 / dt), "num_envs": num_envs,
                           "reference_sim_s_per_s": WALKER_REFERENCE_SIM_S}
    for k, r in rate.items():
        out[f"{k}_steps_per_s"] = r
        out[f"{k}_sim_s_per_s"] = r * dt
    for t in (1, 2):
        out[f"vector{t}_vs_single"] = rate[f"vector{t}"] / rate["single"]
    single.close()
    for v in vectors.values():
        v.close()
    return out


def describe_walkers(w: dict[str, Any]) -> list[str]:
    """The walker benchmark's lines, targets included."""
    single = w["single_sim_s_per_s"]
    lines = [f"soft robots: pysoft/Walker-v0, the 5 x 5 walker ({w['particles']} particles, {w['springs']} "
             f"springs), {w['hz']} Hz, {w['substeps']} substeps, the fixed gait",
             f"  one env (gymnasium.make): {w['single_steps_per_s']:,.0f} env.step()/s, {single:.1f} "
             f"simulated s/s ({single / w['reference_sim_s_per_s']:.0f}x Evolution Gym's "
             f"~{w['reference_sim_s_per_s']} on this machine; target >= {WALKER_SINGLE_TARGET:.0f}: "
             f"{_met(single >= WALKER_SINGLE_TARGET)})"]
    for t, target in WALKER_VECTOR_TARGETS.items():
        ratio = w[f"vector{t}_vs_single"]
        lines.append(f"  vector env of {w['num_envs']} (make_vec), threads={t}: "
                     f"{w[f'vector{t}_steps_per_s']:,.0f} env-steps/s, {w[f'vector{t}_sim_s_per_s']:.1f} "
                     f"simulated s/s, {ratio:.2f}x one env "
                     f"(target >= {target:.0f}x: {_met(ratio >= target)})")
    return lines


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench_changes(rounds: int = 7, cells: int = 100) -> dict[str, Any]:
    """A world that changes while it runs: the XPBD cloth scene, and the frame right after
    spawning a ``build.box``, removing one (its body, particles and springs; also one whose
    rows are refilled by the particles after it), and a spring tearing, each over a plain
    frame (medians over ``rounds``, interleaved). Also the cost of the change calls and the
    kernel calls per frame of the canonical scene."""
    from pysoft import build

    world = scenes.xpbd_cloth(cells)
    pos = world.positions  # a held view: it stays valid however the world grows
    tearable = []
    for r in range(rounds):  # springs to break later, one per round, off to the side
        a, b = world.add_particles([[20.0 + r, 3.0], [20.5 + r, 3.0]], masses=[np.inf, 1.0])
        tearable.append((b, world.add_spring(a, b, stiffness=2000.0, damping=20.0, max_strain=1.5)))
    for _ in range(3):
        world.step()
    t: dict[str, list[float]] = {k: [] for k in (
        "plain", "spawn", "remove", "remove_moving", "spawn_xpbd", "remove_xpbd", "tear", "spawn_call",
        "remove_call")}
    for r in range(rounds):
        t["plain"].append(_timed(world.step))
        t0 = time.perf_counter()
        box = build.box(world, center=(-10.0, 5.0 + r))
        t["spawn_call"].append(time.perf_counter() - t0)
        t["spawn"].append(_timed(world.step))
        t["plain"].append(_timed(world.step))
        t0 = time.perf_counter()
        world.remove(box, *world.body(box).particles)
        t["remove_call"].append(time.perf_counter() - t0)
        t["remove"].append(_timed(world.step))
        first, second = (build.box(world, center=(-10.0, 9.0 + r + k)) for k in range(2))
        world.step()
        world.remove(first, *world.body(first).particles)  # the second box's rows move
        t["remove_moving"].append(_timed(world.step))
        world.remove(second, *world.body(second).particles)
        xpbd = build.box(world, center=(-10.0, 5.0 + r), model="xpbd")  # joins the cloth's batches
        t["spawn_xpbd"].append(_timed(world.step))
        world.remove(xpbd, *world.body(xpbd).particles)
        t["remove_xpbd"].append(_timed(world.step))
        particle, spring = tearable[r]
        world.particle(particle).position = (30.0 + r, 3.0)  # stretched past max_strain
        t["tear"].append(_timed(world.step))
        if spring not in world.broken_springs:
            raise RuntimeError("bench_changes: the stretched spring did not tear")
        t["plain"].append(_timed(world.step))
    if not np.shares_memory(pos, world.positions):
        raise RuntimeError("bench_changes: a held view lost the Store")
    med = {k: statistics.median(v) for k, v in t.items()}
    with kernels.counting() as counter:
        canonical = scenes.boxes(10_000)
        canonical.step()
        before = counter.copy()
        canonical.step()
        counter.subtract(before)
        calls = sum(v for k, v in counter.items() if not k.startswith("bind:") and k != "run_frame")
    return {"particles": world.store.particles.n, "constraints": world.store.distances.n,
            "frame_ms": 1e3 * med["plain"],
            **{f"{k}_ratio": med[k] / med["plain"] for k in (
                "spawn", "remove", "remove_moving", "spawn_xpbd", "remove_xpbd", "tear")},
            "spawn_call_ms": 1e3 * med["spawn_call"], "remove_call_ms": 1e3 * med["remove_call"],
            "canonical_calls_per_frame": calls, "canonical_foreign_calls": counter["run_frame"] or calls}


def bench_pile(bodies: int = 400, rounds: int = 7, frames: int = 10, settle: int = 300,
               scene: Callable[[int], World] = scenes.pile) -> dict[str, Any]:
    """The pile: ``bodies`` 5 x 5 spring boxes (10,000 particles for 400) settled in a walled
    bin; from the same settled state (snapshot and restore), frames with body contacts and
    frames without them, interleaved: frames/s, the frame-time ratio, and ns per particle
    per substep for the body-contact pass (the difference of the two). ``scene`` makes
    another pile (``bench_pile3d``)."""
    world = scene(bodies)
    for _ in range(settle):
        world.step()
    settled = world.snapshot()
    t: dict[bool, list[float]] = {True: [], False: []}

    def run() -> None:
        for _ in range(frames):
            world.step()

    for _ in range(rounds):
        for contacts in (True, False):
            world.restore(settled)
            world.body_collisions = contacts
            t[contacts].append(_timed(run) / frames)
    world.body_collisions = True
    on, off = statistics.median(t[True]), statistics.median(t[False])
    n = world.store.particles.n
    return {"bodies": bodies, "particles": n, "frame_ms": 1e3 * on, "frames_per_s": 1.0 / on,
            "off_ms": 1e3 * off, "ratio": on / off,
            "ns_per_particle_substep": 1e9 * (on - off) / (n * world.substeps)}


def bench_pile3d(bodies: int = 180, rounds: int = 5, frames: int = 10, settle: int = 240) -> dict[str, Any]:
    """The 3D pile: ``scenes.pile3d`` with ``bodies`` mixed 3D bodies (9,565 particles for 180)
    settled in a 3 m bin, measured as ``bench_pile``."""
    return bench_pile(bodies, rounds, frames, settle, lambda count: scenes.pile3d(count, width=3.0))


def bench_kernels(n: int = 10_000, rounds: int = 3) -> list[dict[str, Any]]:
    """Every registered kernel in the kernel zoo scene (2D): ns per row, C and NumPy."""
    probes, worlds = {}, []  # (a probe calls into its world's parts: the world is kept open)
    for backend in ("c", "python"):
        world = scenes.kernel_zoo(n, backend=backend)
        world.step()
        worlds.append(world)
        probes[backend] = {name: probe for f in world._features for name, probe in f.probes().items()}
    out = []
    for name in kernels.REGISTRY:
        rows = max(1, probes["c"][name][0])
        t = _rounds({be: probes[be][name][1] for be in probes}, 20, rounds)
        out.append({"kernel": name, "rows": rows, "c_ns": 1e9 * t["c"] / rows,
                    "numpy_ns": 1e9 * t["python"] / rows, "ratio": t["python"] / t["c"]})
    return out


def _met(held: bool) -> str:
    return "met" if held else "NOT met"


def markdown(r: dict[str, Any]) -> str:
    """The benchmark's tables in Markdown (the docs' Benchmarks page) for the figures ``run`` returned."""
    sc = {s["particles"]: s for s in r["scenes"]}
    lines = [f"Measured {r['date']} on {r['machine']} (a shared machine), `{r.get('flags', '')}`:", "",
             "| particles | springs | build (s) | step (ms) | steps/s | particle-steps/s | ns per spring "
             "| reference loop (ms) | **vs reference** | binding overhead | C/NumPy | NumPy vs plain NumPy |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines.extend(f"| {s['particles']:,} | {s['springs']:,} | {s['build_s']:.2f} | {s['step_ms']:.3f} "
                 f"| {s['steps_per_s']:,.0f} | {s['particle_steps_per_s'] / 1e6:.1f} M "
                 f"| {s['ns_per_spring']:.2f} | {s['reference_ms']:.3f} | **{s['vs_reference']:.2f}x** "
                 f"| {s['overhead']:.3f} | {s['c_over_numpy']:.1f}x | {s['numpy_vs_plain']:.2f}x |"
                 for s in r["scenes"])
    big = r["scenes"][-1]
    passes = ", ".join(f"{k} {v:.3f}" for k, v in big["passes_ms"].items())
    c, b = r["contacts"], r["small_body"]
    lines += ["", f"Time per pass at {big['particles']:,} particles (ms per step): {passes}. "
              f"Memory: {big['bytes_per_particle']} bytes per particle and {big['bytes_per_spring']} "
              "per spring (the Store's rows, workspace included).", ""]
    if "models" in r:
        lines += ["| body model scene (60 Hz, 8 substeps) | particles | springs | constraints "
                  "| ms per frame | ms per pass (summed over substeps) |", "|---|---:|---:|---:|---:|---|"]
        lines.extend(f"| {m['scene']} | {m['particles']:,} | {m['springs']:,} | {m['constraints']:,} "
                     f"| {m['frame_ms']:.2f} | "
                     + ", ".join(f"{k} {v:.2f}" for k, v in m["passes_ms"].items()) + " |"
                     for m in r["models"])
        lines.append("")
    if "pile" in r:
        pl = r["pile"]
        lines += [f"The pile ({pl['bodies']} spring boxes of 5 x 5, {pl['particles']:,} particles, in a "
                  f"walled bin, 60 Hz, 8 substeps): **{pl['frames_per_s']:.0f} frames/s** "
                  f"({pl['frame_ms']:.2f} ms per frame); the same frames without body contacts "
                  f"{pl['off_ms']:.2f} ms, ratio **{pl['ratio']:.2f}** (target ≤ 2.0: "
                  f"{'met' if pl['ratio'] <= 2.0 else 'NOT met'}); body contacts "
                  f"{pl['ns_per_particle_substep']:.0f} ns per particle per substep.", ""]
    if "pile3d" in r:
        p3 = r["pile3d"]
        lines += [f"The 3D pile ({p3['bodies']} mixed 3D bodies, {p3['particles']:,} particles, in a "
                  f"walled bin, 60 Hz, 8 substeps): **{p3['frames_per_s']:.1f} frames/s** "
                  f"({p3['frame_ms']:.2f} ms per frame; target ≥ {PILE3D_FPS_TARGET:.0f}: "
                  f"{_met(p3['frames_per_s'] >= PILE3D_FPS_TARGET)}); the same frames without body contacts "
                  f"{p3['off_ms']:.2f} ms, ratio **{p3['ratio']:.2f}** (target ≤ {PILE3D_RATIO_TARGET}: "
                  f"{_met(p3['ratio'] <= PILE3D_RATIO_TARGET)}); body contacts "
                  f"{p3['ns_per_particle_substep']:.0f} ns per particle per substep.", ""]
    if "many" in r:
        m = r["many"]
        lines += [f"Many worlds: {m['worlds']} worlds of one {m['particles']}-particle spring box "
                  f"each (60 Hz, {m['substeps']} substeps), world-frames per second:", "",
                  "| frames a call | loop of `w.step()` | `step_many` | vs loop | `step_many`, "
                  "`threads=2` | vs loop |", "|---:|---:|---:|---:|---:|---:|"]
        lines.extend(f"| {c['frames']} | {c['loop_per_s']:,.0f} | {c['many_per_s']:,.0f} "
                     f"| {c['many_vs_loop']:.2f}x | {c['many2_per_s']:,.0f} | {c['many2_vs_loop']:.2f}x |"
                     for c in m["calls"])
        lines += ["", f"A world of the default capacity reserves {m['virtual_mib_per_world']:,.0f} MiB of "
                  f"address space and keeps {m['resident_kib_per_world']:,.0f} KiB resident; with "
                  f"`capacity=4096`, {m['small_virtual_mib_per_world']:,.1f} MiB and "
                  f"{m['small_resident_kib_per_world']:,.0f} KiB.", ""]
    if "walkers" in r:
        w = r["walkers"]
        single = w["single_sim_s_per_s"]
        lines += [f"Soft robots (`pysoft/Walker-v0`, the 5 x 5 walker: {w['particles']} particles, "
                  f"{w['springs']} springs, {w['hz']} Hz, {w['substeps']} substeps, the fixed gait): one "
                  f"environment (`gymnasium.make`) {w['single_steps_per_s']:,.0f} `env.step()` a second, "
                  f"**{single:.0f} simulated seconds per second** "
                  f"({single / w['reference_sim_s_per_s']:.0f}x "
                  f"Evolution Gym's Walker-v0, about {w['reference_sim_s_per_s']} on the machine of these "
                  f"figures; target ≥ {WALKER_SINGLE_TARGET:.0f}: {_met(single >= WALKER_SINGLE_TARGET)}). "
                  f"The vector environment of {w['num_envs']} (`gymnasium.make_vec`):", "",
                  "| threads | env-steps a second | simulated s/s | over one environment | target |",
                  "|---:|---:|---:|---:|---|"]
        lines.extend(f"| {t} | {w[f'vector{t}_steps_per_s']:,.0f} | {w[f'vector{t}_sim_s_per_s']:,.0f} "
                     f"| **{w[f'vector{t}_vs_single']:.2f}x** | ≥ {target:.0f}x: "
                     f"{_met(w[f'vector{t}_vs_single'] >= target)} |"
                     for t, target in WALKER_VECTOR_TARGETS.items())
        lines.append("")
    if "changes" in r:
        ch = r["changes"]
        lines += [f"A world that changes while it runs: the {ch['particles']:,}-particle XPBD cloth "
                  f"({ch['constraints']:,} constraints, {ch['frame_ms']:.2f} ms per frame). The frame "
                  "right after a change, over a plain frame (target ≤ 1.2 each):", "",
                  "| change | frame after / plain frame | the change call itself |", "|---|---:|---:|",
                  f"| spawn a `build.box` | {ch['spawn_ratio']:.3f} | {ch['spawn_call_ms']:.2f} ms |",
                  f"| remove it (body, particles, springs) | {ch['remove_ratio']:.3f} "
                  f"| {ch['remove_call_ms']:.2f} ms |",
                  f"| remove a box whose rows the next box refills | {ch['remove_moving_ratio']:.3f} | |",
                  f"| spawn an XPBD box (joins the cloth's constraint batches) "
                  f"| {ch['spawn_xpbd_ratio']:.3f} | |",
                  f"| remove it | {ch['remove_xpbd_ratio']:.3f} | |",
                  f"| a spring tears | {ch['tear_ratio']:.3f} | |", "",
                  f"The canonical scene makes {ch['canonical_calls_per_frame']} kernel calls per frame "
                  f"(one per kernel per substep) in {ch['canonical_foreign_calls']} foreign "
                  f"call{'' if ch['canonical_foreign_calls'] == 1 else 's'} from Python; no frame "
                  "rebinds anything.", ""]
    lines += ["",
              f"Obstacle course ({c['particles']:,} particles, {c['colliders']} colliders): collide pass "
              f"{c['collide_ms']:.3f} ms per step, **{c['ns_per_test']:.2f} ns per particle-collider test** "
              "(most pairs culled by the bounding-sphere test).", "",
              *([f"The collide pass against one floor plane (the canonical scene at rest, "
                 f"{r['floor']['particles']:,} particles, {r['floor']['resting']:,} on the floor): "
                 f"**{r['floor']['stage_ns']:.2f} ns per particle** for the collide stage.", ""]
                if "floor" in r else []),
              f"One {b['particles']}-particle spring body, a 60 Hz frame of {b['substeps']} substeps: "
              f"**{b['frame_us']:.0f} µs**."]
    if 10_000 in sc and 100_000 in sc:
        ten, hundred = sc[10_000], sc[100_000]
        lines += ["", "| target | measured | |", "|---|---|---|",
                  f"| World.step ≥ 1.0x the reference loop at 10k and 100k "
                  f"| {ten['vs_reference']:.2f}x, {hundred['vs_reference']:.2f}x "
                  f"| {'met' if min(ten['vs_reference'], hundred['vs_reference']) >= 1.0 else 'NOT met'} |",
                  f"| stretch: World.step with `threads=2` ≥ 2x the reference loop "
                  f"| {ten['vs_reference_threads']:.2f}x, {hundred['vs_reference_threads']:.2f}x "
                  f"| {_met(min(ten['vs_reference_threads'], hundred['vs_reference_threads']) >= 2.0)} |",
                  f"| binding overhead ≤ 1.15 at 10k and 100k "
                  f"| {ten['overhead']:.3f}, {hundred['overhead']:.3f} "
                  f"| {'met' if max(ten['overhead'], hundred['overhead']) <= 1.15 else 'NOT met'} |",
                  f"| NumPy backend ≥ 0.5x plain NumPy at 10k | {ten['numpy_vs_plain']:.2f}x "
                  f"| {'met' if ten['numpy_vs_plain'] >= 0.5 else 'NOT met'} |",
                  *([f"| collide pass against one plane ≤ 3 ns per particle "
                     f"| {r['floor']['stage_ns']:.2f} ns "
                     f"| {'met' if r['floor']['stage_ns'] <= 3 else 'NOT met'} |"] if "floor" in r else []),
                  f"| C ≥ 5x NumPy at 100k | {hundred['c_over_numpy']:.1f}x "
                  f"| {'met' if hundred['c_over_numpy'] >= 5 else 'NOT met'} |",
                  f"| spring pass ≤ 0.6x the reference's spring loop at 10k and 100k "
                  f"| {ten['springs_vs_reference']:.2f}x ({ten['springs_us']:.0f} / "
                  f"{ten['reference_springs_us']:.0f} µs), {hundred['springs_vs_reference']:.2f}x "
                  f"({hundred['springs_us']:.0f} / {hundred['reference_springs_us']:.0f} µs) "
                  f"| {_met(max(ten['springs_vs_reference'], hundred['springs_vs_reference']) <= 0.6)} |",
                  f"| spring pass ≤ 10 ns per spring | {hundred['ns_per_spring']:.2f} ns "
                  f"| {'met' if hundred['ns_per_spring'] <= 10 else 'NOT met'} |",
                  f"| build the 100k scene ≤ 3 s | {hundred['build_s']:.2f} s "
                  f"| {'met' if hundred['build_s'] <= 3 else 'NOT met'} |",
                  f"| 25-particle body, a frame of 8 substeps ≤ 20 µs | {b['frame_us']:.0f} µs "
                  f"| {_met(b['frame_us'] <= 20)} |",
                  f"| 25-particle body, 8 substeps ≤ 150 µs (the earlier target) | {b['frame_us']:.0f} µs "
                  f"| {_met(b['frame_us'] <= 150)} |",
                  *[f"| XPBD constraints ≤ 5 ns per constraint-iteration on the 101 x 101 cloth "
                    f"| {cloth['ns_per_constraint_iteration']:.2f} ns "
                    f"| {_met(cloth['ns_per_constraint_iteration'] <= 5)} |"
                    for cloth in r.get("models", []) if cloth["scene"] == "XPBD cloth"]]
    return "\n".join(lines)


def machine() -> str:
    """A one-line description of this machine."""
    import os

    return f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} " \
           f"{platform.python_version()}, numpy {np.__version__}"


def _models(rounds: int, echo: Callable[[str], Any]) -> list[dict[str, Any]]:
    """``bench_models`` with its report (the 3D row against its target)."""
    echo("\nbody models, 60 Hz frames of 8 substeps (ms per frame; passes summed over substeps)")
    models = bench_models(max(1, rounds // 2))
    for m in models:
        echo(f"{m['scene']:>20}: {m['particles']} particles, {m['springs']} springs, "
             f"{m['constraints']} constraints, {m['bodies']} bodies: {m['frame_ms']:.2f} ms "
             f"(" + ", ".join(f"{k} {v:.2f}" for k, v in m["passes_ms"].items()) + ")")
        if m["scene"].startswith("3D"):
            fps = 1e3 / m["frame_ms"]
            echo(f"{'':>20}  {fps:.0f} frames/s (target >= {TET_CUBES_TARGET:.0f} on one thread: "
                 f"{'met' if fps >= TET_CUBES_TARGET else 'NOT met'}), "
                 f"{m['ns_per_constraint_iteration']:.2f} ns per constraint-iteration")
    return models


def run(sizes: tuple[int, ...] = (1_000, 10_000, 100_000), rounds: int = 5,
        json_path: str | None = None, echo: Callable[[str], Any] = print,
        with_peers: bool = False, models_only: bool = False) -> dict[str, Any]:
    """Run the whole benchmark (``models_only``: only the body-model scenes), print a report
    and return the figures."""
    _native.require()
    echo(f"pysoft bench -- {time.strftime('%Y-%m-%d')} -- {machine()}")
    echo(f"C core flags: {_native.compile_flags()}")
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "machine": machine(),
                               "flags": _native.compile_flags(), "scenes": [], "kernels": []}
    if models_only:
        results["models"] = _models(rounds, echo)
        _write(results, json_path, echo)
        return results
    echo("\nscene 'boxes' (dt 1/240 s, 1 substep, symplectic Euler)")
    echo(f"{'particles':>10} {'springs':>8} {'build s':>8} {'step ms':>8} {'steps/s':>9} "
         f"{'Mpart-steps/s':>13} {'ns/spring':>9} {'ref ms':>7} {'vs ref':>6} {'binding':>7} "
         f"{'C/NumPy':>8} {'NumPy/plain':>11}")
    for size in sizes:
        r = bench_scene(size, rounds)
        results["scenes"].append(r)
        echo(f"{r['particles']:>10} {r['springs']:>8} {r['build_s']:>8.2f} {r['step_ms']:>8.3f} "
             f"{r['steps_per_s']:>9.0f} {r['particle_steps_per_s'] / 1e6:>13.1f} "
             f"{r['ns_per_spring']:>9.2f} {r['reference_ms']:>7.3f} {r['vs_reference']:>6.2f} "
             f"{r['overhead']:>7.3f} {r['c_over_numpy']:>8.1f} {r['numpy_vs_plain']:>11.2f}")
        echo("           passes (ms): " + ", ".join(f"{k} {v:.3f}" for k, v in r["passes_ms"].items()))
        echo(f"           with threads=2: step {r['step_threads_ms']:.3f} ms, "
             f"{r['vs_reference_threads']:.2f}x the reference")
        echo(f"           spring pass {r['springs_us']:.1f} µs, the reference's spring loop "
             f"{r['reference_springs_us']:.1f} µs: {r['springs_vs_reference']:.2f}x")
        echo(f"           memory: {r['bytes_per_particle']} bytes per particle, "
             f"{r['bytes_per_spring']} per spring (the Store's rows, workspace included)")
    c = bench_contacts(rounds=max(1, rounds // 2))
    results["contacts"] = c
    fl = bench_floor(rounds=max(1, rounds // 2))
    results["floor"] = fl
    echo(f"\nthe collide pass against one floor plane, the canonical scene at rest ({fl['particles']} "
         f"particles, {fl['resting']} on the floor): the collide stage {fl['stage_ns']:.2f} ns per "
         "particle")
    echo(f"\nscene 'obstacle course': {c['particles']} particles, {c['colliders']} colliders, "
         f"{c['contacts']} in contact: collide pass {c['collide_ms']:.3f} ms per step, "
         f"{c['ns_per_test']:.2f} ns per particle-collider test")
    results["models"] = _models(rounds, echo)
    ch = bench_changes()
    results["changes"] = ch
    echo(f"\na world that changes: XPBD cloth, {ch['particles']} particles, {ch['constraints']} "
         f"constraints, {ch['frame_ms']:.2f} ms per frame; the frame after a change over a plain frame: "
         f"spawn a box {ch['spawn_ratio']:.3f}, remove it {ch['remove_ratio']:.3f} (rows moving "
         f"{ch['remove_moving_ratio']:.3f}), an XPBD box {ch['spawn_xpbd_ratio']:.3f} and "
         f"{ch['remove_xpbd_ratio']:.3f}, a spring tearing {ch['tear_ratio']:.3f}; the calls: "
         f"build.box {ch['spawn_call_ms']:.2f} ms, remove {ch['remove_call_ms']:.2f} ms; canonical scene: "
         f"{ch['canonical_calls_per_frame']} kernel calls per frame in "
         f"{ch['canonical_foreign_calls']} foreign call(s)")
    pile = bench_pile()
    results["pile"] = pile
    echo(f"\nthe pile: {pile['bodies']} boxes, {pile['particles']} particles, 60 Hz, 8 substeps: "
         f"{pile['frame_ms']:.2f} ms per frame ({pile['frames_per_s']:.0f} frames/s); without body "
         f"contacts {pile['off_ms']:.2f} ms (ratio {pile['ratio']:.2f}); body contacts "
         f"{pile['ns_per_particle_substep']:.1f} ns per particle per substep")
    pile3d = bench_pile3d()
    results["pile3d"] = pile3d
    echo(f"\nthe 3D pile: {pile3d['bodies']} mixed 3D bodies, {pile3d['particles']} particles, 60 Hz, "
         f"8 substeps: {pile3d['frame_ms']:.2f} ms per frame ({pile3d['frames_per_s']:.1f} frames/s, target "
         f">= {PILE3D_FPS_TARGET:.0f}: {_met(pile3d['frames_per_s'] >= PILE3D_FPS_TARGET)}); "
         f"without body contacts {pile3d['off_ms']:.2f} ms (ratio {pile3d['ratio']:.2f}, target <= "
         f"{PILE3D_RATIO_TARGET}: {_met(pile3d['ratio'] <= PILE3D_RATIO_TARGET)}); body contacts "
         f"{pile3d['ns_per_particle_substep']:.1f} ns per particle per substep")
    many = bench_many(rounds=rounds)
    results["many"] = many
    echo(f"\nmany worlds: {many['worlds']} worlds of one {many['particles']}-particle spring box, "
         f"60 Hz, {many['substeps']} substeps (world-frames per second)")
    for c in many["calls"]:
        echo(f"  {c['frames']:>3} frame(s) a call: loop of step() {c['loop_per_s']:,.0f}, step_many "
             f"{c['many_per_s']:,.0f} ({c['many_vs_loop']:.2f}x), threads=2 {c['many2_per_s']:,.0f} "
             f"({c['many2_vs_loop']:.2f}x)")
    echo(f"  memory per world: {many['virtual_mib_per_world']:,.0f} MiB of address space, "
         f"{many['resident_kib_per_world']:,.0f} KiB resident (default capacity); "
         f"{many['small_virtual_mib_per_world']:,.1f} MiB and {many['small_resident_kib_per_world']:,.0f} "
         "KiB with capacity=4096")
    walkers = bench_walkers(rounds=rounds)
    if walkers is None:
        echo("\nsoft robots: skipped (pip install \"pysoft[rl]\" for gymnasium)")
    else:
        results["walkers"] = walkers
        echo("")
        for line in describe_walkers(walkers):
            echo(line)
    body = bench_small_body(rounds)
    results["small_body"] = body
    echo(f"\none {body['particles']}-particle body, {body['substeps']} substeps: "
         f"{body['frame_us']:.1f} us per frame")
    echo(f"\nkernels ({10_000} rows, dim 2): ns per row")
    echo(f"{'kernel':>18} {'C':>8} {'NumPy':>8} {'ratio':>7}")
    for k in bench_kernels(rounds=max(1, rounds // 2)):
        results["kernels"].append(k)
        echo(f"{k['kernel']:>18} {k['c_ns']:>8.2f} {k['numpy_ns']:>8.2f} {k['ratio']:>7.1f}")
    if with_peers:
        results["peers"] = bench_peers(rounds=max(1, rounds // 2))
        echo("\npeers on the canonical scene (10k particles), in the same rounds as World.step:")
        for line in peers.describe(results["peers"]) or ["(none installed: pip install pysoft[peers])"]:
            echo(line)
        flex = bench_peers_3d()
        if flex:
            results["peers_3d"] = flex
            echo(f"\nMuJoCo's flex on the 3D tet cubes ({flex['particles']} particles, 60 Hz, 8 substeps): "
                 f"{flex['mujoco_frames_per_s']:.2f} frames/s against pysoft's "
                 f"{flex['pysoft_frames_per_s']:.1f}: "
                 f"pysoft {flex['pysoft_over_mujoco']:.1f}x faster"
                 + ("" if flex["landed"] else f" (its cubes did not land: lowest {flex['lowest']:.3f} m, "
                    f"fastest {flex['fastest']:.3f} m/s: the figure does not count)"))
    _write(results, json_path, echo)
    return results


def _write(results: dict[str, Any], json_path: str | None, echo: Callable[[str], Any]) -> None:
    """The figures to ``json_path`` (if given)."""
    if json_path:
        with open(json_path, "w") as fh:
            json.dump(results, fh, indent=2)
        echo(f"\nfigures written to {json_path}")
