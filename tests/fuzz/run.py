"""Run the fuzz targets with atheris: ``python tests/fuzz/run.py [--seconds 60] [TARGET ...]``.

Targets: every kernel of the registry (by name) and ``restore``; none named: all of
them, one after another, each in its own process for ``--seconds``. A finding (an
uncaught exception of a target, or a crash) stops that target, and libFuzzer writes
the input that caused it to ``tests/fuzz/findings/`` (replay it with
``python tests/fuzz/run.py --replay FILE TARGET``). Needs the ``fuzz`` extra (atheris).
"""

from __future__ import annotations

import argparse
import pathlib
import re
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
FINDINGS = HERE / "findings"


def targets() -> list[str]:
    sys.path.insert(0, str(HERE))
    from harness import _kernels

    return [*sorted(_kernels.REGISTRY), "restore"]


def child(name: str, seconds: int) -> None:
    import atheris

    with atheris.instrument_imports(include=["pysoft", "harness"]):
        sys.path.insert(0, str(HERE))
        import harness
    target = harness.restore_target(harness.seeds()) if name == "restore" else harness.kernel_target(name)
    FINDINGS.mkdir(exist_ok=True)
    atheris.Setup([sys.argv[0], f"-max_total_time={seconds}", "-rss_limit_mb=4096",
                   f"-artifact_prefix={FINDINGS}/{name}-", "-print_final_stats=1"], target)
    atheris.Fuzz()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*")
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--replay", help="replay one saved input through TARGET")
    args = parser.parse_args()
    if args.child:
        child(args.targets[0], args.seconds)
        return 0
    if args.replay:
        sys.path.insert(0, str(HERE))
        import harness

        name = args.targets[0]
        target = harness.restore_target(harness.seeds()) if name == "restore" else harness.kernel_target(name)
        target(pathlib.Path(args.replay).read_bytes())
        print("no finding")
        return 0
    failed = 0
    for name in args.targets or targets():
        r = subprocess.run([sys.executable, __file__, "--child", "--seconds", str(args.seconds), name],
                           capture_output=True, text=True)
        runs = re.search(r"stat::number_of_executed_units: (\d+)", r.stderr)
        status = "no finding" if r.returncode == 0 else f"FINDING (exit {r.returncode})"
        print(f"{name:>20}: {runs.group(1) if runs else '?':>8} inputs in {args.seconds} s: {status}",
              flush=True)
        if r.returncode:
            failed += 1
            print("\n".join(r.stderr.splitlines()[-25:]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
