"""The lab (harness.lab) runs once per test session: every shape of the standalone stack side by side.

Tests that need it skip, saying why, only when the machine cannot run it (not root, or a
command missing)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from harness.lab import report
from harness.lab.nodes import SHAPES
from harness.lab.runner import LabFailed, LabRun, run_shapes, unavailable


@dataclass(frozen=True)
class LabSession:
    runs: dict[str, LabRun]  # by shape
    wall_s: float


def need_lab() -> None:
    reason = unavailable()
    if reason:
        pytest.skip(f"the lab cannot run here: {reason}")


# The session's lab, once it ran: its figures close the test report.
_RAN: list[LabSession] = []


@pytest.fixture(scope="session")
def lab_session() -> LabSession:
    need_lab()
    started = time.monotonic()
    try:
        runs = run_shapes(["--stack=standalone"], list(SHAPES))
    except LabFailed as error:
        pytest.fail(str(error))
    _RAN.append(LabSession(dict(zip(SHAPES, runs, strict=True)), time.monotonic() - started))
    return _RAN[0]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for session in _RAN:
        terminalreporter.write_sep("-", f"lab figures: the standalone stack's shapes side by side, {session.wall_s:.0f} s")
        terminalreporter.write_line(report.as_text(list(session.runs.values())))


@pytest.fixture(params=list(SHAPES))
def lab_run(request: pytest.FixtureRequest, lab_session: LabSession) -> LabRun:
    return lab_session.runs[request.param]
