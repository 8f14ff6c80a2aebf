"""Command line: ``python -m pysoft info | selftest | demo | sandbox | render | bench``."""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Sequence

from pysoft.scenes import SHOWCASE


def info() -> int:
    """Versions, the active backend and the C core's compile flags."""
    import cffi
    import esper
    import numpy

    import pysoft
    from pysoft import _native
    from pysoft._constants import MAX_THREADS

    print(f"pysoft {pysoft.__version__}")
    print(f"python {platform.python_version()} ({sys.executable})")
    print(f"numpy {numpy.__version__}, esper {getattr(esper, '__version__', '?')}, "
          f"cffi {cffi.__version__}")
    if _native.AVAILABLE:
        print(f"C core: loaded ({_native.MODULE}, the {_native.VARIANT} build, chosen for this CPU; "
              "PYSOFT_VARIANT=baseline picks the other)")
        print(f"compile flags: {_native.compile_flags()}")
        print("threads: World(threads=N) splits the gravity, spring, integrate, collide and scan "
              f"passes over up to {MAX_THREADS} (this machine has {os.cpu_count()} CPUs); default 1")
        print("default backend: c")
    else:
        print(f"C core: MISSING ({_native.IMPORT_ERROR})")
        print("default backend: python (the NumPy twins: the demo about 140x slower a frame); "
              "install a C compiler "
              "and reinstall pysoft to build the core")
    return 0


def demo(seconds: float, backend: str | None, frames_shown: int | None) -> int:
    """Soft bodies landing on each other and piling up, drawn in the terminal."""
    from pysoft import scenes
    from pysoft.draw import render

    world = scenes.demo(backend=backend)
    backend = world.backend
    fps = 60
    total = int(seconds * fps)
    animate = sys.stdout.isatty() and frames_shown is None and not os.environ.get("CI")
    shown = frames_shown if frames_shown is not None else (total if animate else 4)
    marks = {round(total * (i + 1) / shown) for i in range(min(shown, total))}
    t_sim = 0.0
    for frame in range(1, total + 1):
        t0 = time.perf_counter()
        world.step()
        t_sim += time.perf_counter() - t0
        if frame in marks:
            text = render(world)
            if animate:
                sys.stdout.write("\x1b[H\x1b[2J" + text + "\n")
                sys.stdout.flush()
                time.sleep(max(0.0, 1.0 / fps - (time.perf_counter() - t0)))
            else:
                print(f"t = {world.time:5.2f} s\n{text}\n")
    y = world.positions[:, 1]
    print(f"{world.store.particles.n} particles, {world.store.springs.n} springs, "
          f"{total} frames of {world.substeps} substeps ({backend} backend) in {t_sim:.2f} s "
          f"({1e3 * t_sim / total:.2f} ms per frame); lowest particle y = {y.min():.4f} m")
    return 0


RENDER_SCENES = tuple(SHOWCASE)  # the scenes of `render` and `sandbox --scene`: one registry


def render(scene: str, out: str, seconds: float, fps: int, size: tuple[int, int]) -> int:
    """Run ``scene`` headless and write ``out``: a PNG of its last frame, or a GIF/WebP of the
    run (with a progress bar). A 3D scene is seen from the front, above and to the right,
    fitted to its first frame."""
    from pysoft.draw import image as pimage

    world = SHOWCASE[scene]()
    camera = pimage.fit_camera(world, size, margin=0.1)
    if out.lower().endswith(".png"):
        for _ in range(round(seconds / world.dt)):
            world.step()
        pimage.save_png(world, out, camera=camera)
        print(f"{out}: {scene} at t = {world.time:.2f} s")
        return 0
    from tqdm import tqdm  # type: ignore[import-untyped]

    n = pimage.record(world, out, seconds, fps, camera=camera,
                      progress=lambda frames: tqdm(frames, desc=scene, unit="frame"))
    print(f"{out}: {scene}, {n} frames at {fps} fps ({seconds:g} s)")
    return 0


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--size must be WIDTHxHEIGHT, got {text!r}") from None
    if w <= 0 or h <= 0:
        raise argparse.ArgumentTypeError(f"--size must be positive, got {text!r}")
    return w, h


def _has_display() -> bool:
    """A window can open: a display server is named and pygame-ce is installed."""
    named = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    if not (named or sys.platform in ("win32", "darwin")):
        return False
    if os.environ.get("SDL_VIDEODRIVER") == "dummy" or os.environ.get("CI"):
        return False
    try:
        import pygame  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``python -m pysoft COMMAND`` with ``argv`` (default: the process's
    arguments); returns the exit status. Commands: ``info``, ``selftest``, ``demo``,
    ``sandbox``, ``render``, ``bench`` (``--help`` on each lists its options)."""
    parser = argparse.ArgumentParser(prog="python -m pysoft", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="versions, backend and compile flags")
    sub.add_parser("selftest", help="a few seconds' check that this install works: the C core, "
                                    "C against NumPy bit for bit, analytic physics")
    p_demo = sub.add_parser("demo", help="soft bodies landing on each other: in a window where "
                                         "one can open, else in the terminal (or --gif)")
    p_demo.add_argument("--seconds", type=float, default=4.0, help="simulated time (s)")
    p_demo.add_argument("--backend", choices=("c", "python"), default=None,
                        help="default: c, or python where the C core is missing")
    p_demo.add_argument("--frames", type=int, default=None,
                        help="how many frames to print (default: animate on a terminal, "
                             "else 4 snapshots)")
    p_demo.add_argument("--gif", default=None, help="write the run to this GIF/WebP instead")
    p_demo.add_argument("--terminal", action="store_true",
                        help="draw in the terminal even where a window could open")
    p_box = sub.add_parser("sandbox", help="a pygame-ce window: grab, push and spawn soft bodies")
    p_box.add_argument("--scene", choices=RENDER_SCENES, default="demo")
    p_box.add_argument("--frames", type=int, default=None, help="run this many frames, then exit")
    p_box.add_argument("--size", type=_size, default=(960, 640), help="WIDTHxHEIGHT pixels")
    p_render = sub.add_parser("render", help="a scene as a PNG (last frame) or GIF/WebP (the run)")
    p_render.add_argument("scene", choices=RENDER_SCENES)
    p_render.add_argument("--out", required=True, help="run.gif, run.webp or frame.png")
    p_render.add_argument("--seconds", type=float, default=5.0)
    p_render.add_argument("--fps", type=int, default=20)
    p_render.add_argument("--size", type=_size, default=(480, 320), help="WIDTHxHEIGHT pixels")
    p_bench = sub.add_parser("bench", help="the benchmark (see the Benchmarks page of the docs)")
    p_bench.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    p_bench.add_argument("--rounds", type=int, default=5)
    p_bench.add_argument("--json", default=None, help="also write the figures to this file")
    p_bench.add_argument("--markdown", action="store_true",
                         help="also print the tables as Markdown (the docs' Benchmarks page)")
    p_bench.add_argument("--peers", action="store_true",
                         help="also time the other engines installed (pymunk) on the same scene")
    p_bench.add_argument("--models", action="store_true",
                         help="only the body-model scenes (the 3D XPBD tet cubes among them)")
    p_bench.add_argument("--walkers", action="store_true",
                         help="only the soft-robot environments' figures (needs the rl extra)")
    args = parser.parse_args(argv)
    if args.command == "info":
        return info()
    if args.command == "selftest":
        from pysoft.selftest import selftest

        return selftest()
    if args.command == "demo":
        if args.seconds <= 0 or (args.frames is not None and args.frames < 1):
            parser.error("--seconds must be > 0 and --frames >= 1")
        if args.gif is not None:
            if not args.gif.lower().endswith((".gif", ".webp")):
                parser.error("--gif must end in .gif or .webp")
            return render("demo", args.gif, args.seconds, 20, (480, 320))
        if not args.terminal and args.frames is None and _has_display():
            from pysoft.sandbox import Sandbox

            Sandbox("demo").run()
            return 0
        return demo(args.seconds, args.backend, args.frames)
    if args.command == "sandbox":
        if args.frames is not None and args.frames < 1:
            parser.error("--frames must be >= 1")
        from pysoft.sandbox import Sandbox

        ran = Sandbox(args.scene, args.size).run(args.frames)
        print(f"sandbox: {ran} frames")
        return 0
    if args.command == "render":
        if args.seconds <= 0 or args.fps < 1:
            parser.error("--seconds must be > 0 and --fps >= 1")
        if not args.out.lower().endswith((".png", ".gif", ".webp")):
            parser.error("--out must end in .png, .gif or .webp")
        return render(args.scene, args.out, args.seconds, args.fps, args.size)
    from pysoft import bench

    if args.walkers:
        walkers = bench.bench_walkers(rounds=args.rounds)
        if walkers is None:
            parser.error('--walkers needs gymnasium: pip install "pysoft[rl]"')
        print("\n".join(bench.describe_walkers(walkers)))
        return 0
    results = bench.run(tuple(args.sizes), args.rounds, args.json, with_peers=args.peers,
                        models_only=args.models)
    if args.markdown:
        print("\n" + bench.markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
