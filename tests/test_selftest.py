"""``python -m pysoft selftest``: passes on a working install, and fails when a check fails.

The failure tests break one thing each (a tolerance tightened below what the physics gives,
one ULP injected into the NumPy twins' result, a check that raises, the core taken away) and
check that the exit status is 1 and the summary names what failed. They shorten the parity
run to a few frames where parity is not what they test, to stay quick.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from pysoft import _native, selftest
from pysoft.__main__ import main

EVERY_CHECK = ("C core", "compile flags", "parity", "spring period (c)", "free fall (c)",
               "spring period (python)", "free fall (python)")


def _lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().out.strip().splitlines()


def test_selftest_passes_and_prints_one_line_per_check(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["selftest"]) == 0
    lines = _lines(capsys)
    assert [line.split(":", 1)[0] for line in lines[:-1]] == [f"ok   {name}" for name in EVERY_CHECK]
    assert re.fullmatch(r"selftest: 7 checks passed in \d+\.\d s", lines[-1])
    out = "\n".join(lines)
    assert "C core: loaded (" in out and "_core" in out
    if _native.VARIANT == "x86-64-v3":  # the path of the build this CPU loaded
        assert "_core_v3." in out
    assert "-ffp-contract=off" in out
    assert "bitwise equal" in out
    assert re.search(r"spring period \(c\): T = 0\.628\d\d s, 2 pi sqrt\(m/k\) = 0\.62832 s", out)
    assert re.search(r"free fall \(python\): fell 4\.905000000 m in 1 s", out)


def test_a_period_outside_the_tolerance_fails(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(selftest, "PARITY_FRAMES", 3)
    monkeypatch.setattr(selftest, "PERIOD_TOLERANCE", 1e-7)  # the measured period is ~2e-5 off
    assert main(["selftest"]) == 1
    lines = _lines(capsys)
    assert sum(line.startswith("FAIL spring period") for line in lines) == 2
    assert lines[-1].startswith(
        "selftest: FAILED 2 of 7 checks (spring period (c), spring period (python)) in ")


def test_one_ulp_between_the_backends_fails(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(selftest, "PARITY_FRAMES", 3)
    honest = selftest.run_scene

    def broken(backend: str) -> tuple[np.ndarray, np.ndarray]:
        pos, vel = honest(backend)
        if backend == "python":
            pos[5, 1] = np.nextafter(pos[5, 1], np.inf)
        return pos, vel

    monkeypatch.setattr(selftest, "run_scene", broken)
    assert main(["selftest"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^FAIL parity: 1 of \d+ particles differ between c and python after 3 frames",
                     out, flags=re.M)
    assert "selftest: FAILED 1 of 7 checks (parity)" in out


def test_a_check_that_raises_fails_and_the_rest_still_run(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(selftest, "PARITY_FRAMES", 3)

    def boom(backend: str) -> selftest.Outcome:
        raise RuntimeError(f"no gravity on {backend}")

    monkeypatch.setattr(selftest, "check_free_fall", boom)
    assert main(["selftest"]) == 1
    lines = _lines(capsys)
    assert "FAIL free fall (c): raised RuntimeError: no gravity on c" in lines
    assert "FAIL free fall (python): raised RuntimeError: no gravity on python" in lines
    assert len(lines) == len(EVERY_CHECK) + 1


def test_a_missing_core_fails_only_when_required(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(_native, "AVAILABLE", False)
    monkeypatch.setattr(_native, "IMPORT_ERROR", "No module named 'pysoft._core'")
    monkeypatch.setenv("PYSOFT_REQUIRE_C", "1")
    assert main(["selftest"]) == 1
    lines = _lines(capsys)
    assert lines[0] == ("FAIL C core: missing and PYSOFT_REQUIRE_C is set "
                        "(No module named 'pysoft._core')")
    assert lines[-1].startswith("selftest: FAILED 1 of 5 checks (C core)")

    monkeypatch.delenv("PYSOFT_REQUIRE_C")
    assert main(["selftest"]) == 0  # reported, and the NumPy twins are checked
    lines = _lines(capsys)
    assert [line.split(":", 1)[0] for line in lines[:-1]] == [
        "skip C core", "skip compile flags", "skip parity", "ok   spring period (python)",
        "ok   free fall (python)"]
    assert "checking the NumPy twins only" in lines[0]
    assert re.fullmatch(r"selftest: 2 checks passed, 3 skipped in \d+\.\d s", lines[-1])
