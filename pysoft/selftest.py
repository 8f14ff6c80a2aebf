"""``python -m pysoft selftest``: a check, in a few seconds, that an installed pysoft works.

It needs no tests directory and no compiler, so it runs from an installed wheel. It prints
one line per check with its figure, then ``selftest: N checks passed`` or ``selftest:
FAILED ...``; :func:`selftest` returns the exit status (0 only when no check failed).

* **C core**: ``pysoft._core`` loaded. A missing core fails the selftest when
  ``PYSOFT_REQUIRE_C=1`` is set; otherwise the selftest says so, skips the checks that
  need the core and runs the rest on the NumPy twins.
* **compile flags**: the core reports ``-ffp-contract=off`` and no ``-ffast-math``: the
  C kernels' bitwise parity with their twins depends on these flags.
* **parity**: a small scene (an XPBD box, a spring and shape-matched box, a gas ball, a
  spring box and a spring rope pinned at one end, on a floor and a tilted box) stepped
  60 frames on backend "c" and on backend "python": positions and velocities
  ``np.array_equal``.
* **spring period** (each backend): a 1 kg mass on an undamped 100 N/m spring, no gravity,
  released 0.1 m from rest: the period from its zero crossings over 200 frames is
  2 pi sqrt(m / k) within 1 %.
* **free fall** (each backend): the drop after 1 s under g = 9.81 m/s^2 is g t^2 / 2
  within 1e-9 m (velocity Verlet, which is exact for constant acceleration).
"""

from __future__ import annotations

import importlib
import math
import os
import time
from collections.abc import Callable
from functools import partial

import numpy as np

import pysoft
from pysoft import _native, build

# What each check is held to (module constants, so a test can tighten one to see it fail).
PERIOD_TOLERANCE = 0.01  # relative error of the spring's period
FALL_TOLERANCE = 1e-9  # m, the free fall's error
PARITY_FRAMES = 60

G = 9.81  # m/s^2
DT = 1.0 / 60.0
SUBSTEPS = 8
MASS, STIFFNESS, REST, AMPLITUDE = 1.0, 100.0, 1.0, 0.1  # the spring oscillator (SI units)

# A check returns (passed, figure); passed is None when the check was skipped.
Outcome = tuple[bool | None, str]


def _require_c() -> bool:
    return os.environ.get("PYSOFT_REQUIRE_C", "") not in ("", "0")


def _backends() -> tuple[str, ...]:
    return ("c", "python") if _native.AVAILABLE else ("python",)


def check_core() -> Outcome:
    if _native.AVAILABLE:
        core = importlib.import_module(_native.MODULE)  # the build this CPU loaded
        return True, f"loaded ({core.__file__})"
    if _require_c():
        return False, f"missing and PYSOFT_REQUIRE_C is set ({_native.IMPORT_ERROR})"
    return None, f"missing ({_native.IMPORT_ERROR}): checking the NumPy twins only"


def check_compile_flags() -> Outcome:
    if not _native.AVAILABLE:
        return None, "no C core"
    flags = _native.compile_flags()
    ok = "-ffp-contract=off" in flags.split() and "-ffast-math" not in flags
    return ok, flags


def scene(backend: str) -> pysoft.World:
    """The parity scene: a few bodies of every model falling onto a floor and onto each other
    (4 substeps, so that the NumPy twins run its 60 frames in about a second and a half)."""
    w = pysoft.World(dim=2, substeps=4, backend=backend)
    w.add_collider(pysoft.Plane(normal=(0.0, 1.0), offset=0.0), restitution=0.2, friction=0.6)
    w.add_collider(pysoft.Box(center=(1.8, 0.2), half_extents=(0.3, 0.05), angle=0.4))
    build.box(w, center=(-1.0, 0.35), size=(0.6, 0.6), cells=(2, 2), model="xpbd")
    build.box(w, center=(-1.0, 1.0), size=(0.6, 0.6), model="springs+shape_matching")
    build.ball(w, center=(0.2, 0.6), radius=0.35)
    build.box(w, center=(0.15, 1.5), size=(0.5, 0.5), model="springs")
    build.rope(w, start=(1.0, 1.2), end=(2.2, 1.4), segments=8, model="springs", pin=("start",))
    return w


def run_scene(backend: str) -> tuple[np.ndarray, np.ndarray]:
    """Positions and velocities of :func:`scene` after ``PARITY_FRAMES`` frames."""
    w = scene(backend)
    for _ in range(PARITY_FRAMES):
        w.step()
    return w.positions.copy(), w.velocities.copy()


def check_parity() -> Outcome:
    if not _native.AVAILABLE:
        return None, "no C core to compare the NumPy twins with"
    (c_pos, c_vel), (py_pos, py_vel) = run_scene("c"), run_scene("python")
    n = len(c_pos)
    if np.array_equal(c_pos, py_pos) and np.array_equal(c_vel, py_vel):
        return True, (f"{n} particles, {PARITY_FRAMES} frames: c and python positions and "
                      f"velocities bitwise equal (lowest y = {c_pos[:, 1].min():.4f} m)")
    if c_pos.shape != py_pos.shape:
        return False, f"c has {n} particles, python {len(py_pos)}"
    differ = int(np.count_nonzero((c_pos != py_pos).any(axis=1) | (c_vel != py_vel).any(axis=1)))
    gap = float(np.abs(c_pos - py_pos).max())
    return False, (f"{differ} of {n} particles differ between c and python after {PARITY_FRAMES} "
                   f"frames (largest position difference {gap:.3g} m)")


def check_spring_period(backend: str) -> Outcome:
    w = pysoft.World(dim=2, gravity=(0.0, 0.0), dt=DT, substeps=SUBSTEPS, backend=backend)
    anchor = w.add_particle((0.0, 0.0), pinned=True)
    bob = w.add_particle((REST + AMPLITUDE, 0.0), mass=MASS)
    w.add_spring(anchor, bob, stiffness=STIFFNESS, damping=0.0, rest_length=REST)
    frames = 200  # 3.3 s, more than 5 periods
    x = np.empty(frames + 1)
    x[0] = AMPLITUDE
    position = w.particle(bob).position
    for i in range(1, frames + 1):
        w.step()
        x[i] = position[0] - REST
    t = np.arange(frames + 1) * DT
    k = np.flatnonzero(np.sign(x[:-1]) * np.sign(x[1:]) < 0)  # sign changes after frame k
    crossings = t[k] + DT * x[k] / (x[k] - x[k + 1])  # linear between frames
    expected = 2.0 * math.pi * math.sqrt(MASS / STIFFNESS)
    if len(crossings) < 4:
        return False, f"{len(crossings)} zero crossings in {frames} frames, expected about 10"
    measured = 2.0 * float(crossings[-1] - crossings[0]) / (len(crossings) - 1)
    error = abs(measured - expected) / expected
    return error <= PERIOD_TOLERANCE, (
        f"T = {measured:.5f} s, 2 pi sqrt(m/k) = {expected:.5f} s (m = {MASS:g} kg, "
        f"k = {STIFFNESS:g} N/m): {100 * error:.3f} % off (limit {100 * PERIOD_TOLERANCE:g} %)")


def check_free_fall(backend: str) -> Outcome:
    w = pysoft.World(dim=2, gravity=(0.0, -G), dt=DT, substeps=SUBSTEPS, integrator="verlet",
                     backend=backend)
    start = 10.0
    p = w.particle(w.add_particle((0.0, start)))
    frames = 60
    for _ in range(frames):
        w.step()
    t = frames * SUBSTEPS * (DT / SUBSTEPS)
    drop, expected = start - float(p.position[1]), 0.5 * G * t * t
    error = abs(drop - expected)
    return error <= FALL_TOLERANCE, (
        f"fell {drop:.9f} m in {t:g} s, g t^2 / 2 = {expected:.9f} m: {error:.1e} m off "
        f"(limit {FALL_TOLERANCE:g} m)")


def checks() -> list[tuple[str, Callable[[], Outcome]]]:
    """Every check, by name, in the order they run."""
    out: list[tuple[str, Callable[[], Outcome]]] = [
        ("C core", check_core), ("compile flags", check_compile_flags), ("parity", check_parity)]
    for backend in _backends():
        out.append((f"spring period ({backend})", partial(check_spring_period, backend)))
        out.append((f"free fall ({backend})", partial(check_free_fall, backend)))
    return out


def selftest() -> int:
    """Run every check, print one line each and a summary; 0 if none failed, else 1."""
    start = time.perf_counter()
    passed: list[str] = []
    failed: list[str] = []
    skipped: list[str] = []
    for name, check in checks():
        try:
            ok, figure = check()
        except Exception as exc:  # a check that raises has failed; say why and go on
            ok, figure = False, f"raised {type(exc).__name__}: {exc}"
        status = "ok" if ok else "skip" if ok is None else "FAIL"
        print(f"{status:<4} {name}: {figure}", flush=True)
        (passed if ok else skipped if ok is None else failed).append(name)
    elapsed = time.perf_counter() - start
    total = len(passed) + len(failed) + len(skipped)
    if failed:
        print(f"selftest: FAILED {len(failed)} of {total} checks ({', '.join(failed)}) "
              f"in {elapsed:.1f} s")
        return 1
    extra = f", {len(skipped)} skipped" if skipped else ""
    print(f"selftest: {len(passed)} checks passed{extra} in {elapsed:.1f} s")
    return 0
