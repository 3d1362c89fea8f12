"""Lab runs: one end to end (namespaces, the scenarios, the clean-up, and the check that
nothing is left behind: namespaces, links in the host's namespace, processes), or several
side by side, each in a process of its own."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from harness import netns
from harness.lab.nodes import LabPlan
from harness.lab.observation import Result, takeover_budget, two_holders
from harness.lab.scenarios import SCENARIOS
from harness.lab.topology import Testbed
from tools.plan import ROOT

# Each command the lab runs, and the Debian package that has it.
REQUIRED = {
    "ip": "iproute2",
    "ss": "iproute2",
    "keepalived": "keepalived",
    "haproxy": "haproxy",
    "nft": "nftables",
    "curl": "curl",
    "openssl": "openssl",
    "sh": "dash",
}
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived while a lab ran: it was cleaned up, then this was raised."""


class LabFailed(RuntimeError):
    """A lab could not run at all (see the message); `code` is the exit status to give."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


@dataclass
class LabRun:
    label: str
    advert_int: float
    nodes: dict[str, str]  # name: role
    results: list[Result] = field(default_factory=list)
    vips: dict[str, str] = field(default_factory=dict)  # the VIPs the scenarios observed: api, ingress
    # While no fault was being injected or healed (from the bring-up's end on): two holders
    # of a VIP, and holder changes (flapping). Both should be nil.
    split_brain_s: float = 0.0
    quiet_moves: int = 0
    wall_s: float = 0.0
    leftovers: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def budget_s(self) -> float:
        return takeover_budget(self.advert_int)

    def result(self, scenario: str) -> Result:
        return next(result for result in self.results if result.scenario == scenario)

    def of_role(self, role: str) -> list[str]:
        return [name for name, each in self.nodes.items() if each == role]

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "budget_s": self.budget_s}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LabRun:
        fields = {key: value for key, value in data.items() if key != "budget_s"}
        return cls(**{**fields, "results": [Result(**result) for result in data["results"]]})


def unavailable() -> str | None:
    """Why a lab cannot run here, all in one message; None when it can."""
    problems = [reason] if (reason := netns.unavailable()) else []
    missing = [command for command in REQUIRED if shutil.which(command) is None]
    if missing:
        packages = " ".join(sorted({REQUIRED[command] for command in missing}))
        problems.append(f"not installed: {', '.join(missing)} (Debian packages: {packages})")
    return "; ".join(problems) or None


def order(names: list[str]) -> list[str]:
    """The scenarios to run for `names` (all when empty), with the ones they need, in order."""
    wanted = set(names or SCENARIOS)
    needed = wanted.union(*(SCENARIOS[name].needs for name in wanted))
    return [name for name in SCENARIOS if name in needed]


def run_lab(plan: LabPlan, workdir: Path, names: list[str]) -> LabRun:
    """Run the scenarios `names` (all when empty; reported are only those) on `plan`'s nodes.

    A failure ends the run early with `error` set; SIGINT/SIGTERM end it too, and raise
    Interrupted once everything is cleaned up."""
    run = LabRun(plan.label, plan.advert_int(), {node.name: node.role for node in plan.nodes})
    run.vips = {name: str(plan.vip(name)) for name in ("api", "ingress") if plan.candidates(name)}
    started = time.monotonic()
    lab: netns.Lab | None = None
    interrupted: Interrupted | None = None
    try:
        with _signals_interrupt() as shield, netns.lab("olab") as lab:
            bed: Testbed | None = None
            ran: list[Result] = []
            try:
                bed = Testbed(lab, plan, workdir)
                for name in order(names):
                    ran.append(SCENARIOS[name].run(bed))
                    if not names or name in names:
                        run.results.append(ran[-1])
            except Interrupted as signal_error:
                interrupted = signal_error
                run.error = str(signal_error)
            except Exception as error:  # noqa: BLE001 - reported in the run, after the clean-up
                run.error = f"{type(error).__name__}: {error}"
            finally:
                shield()
                if bed is not None:
                    bed.close()
                    run.split_brain_s, run.quiet_moves = _unrest(bed, ran)
    finally:
        if lab is not None:
            run.leftovers = lab.leftovers()
        run.wall_s = round(time.monotonic() - started, 1)
    if interrupted is not None:
        raise Interrupted(f"{interrupted}; cleaned up, left behind: {', '.join(run.leftovers) or 'nothing'}")
    return run


def _quiet_times(results: list[Result]) -> list[tuple[float, float]]:
    """The stretches of the run when no fault was being injected or healed."""
    windows = sorted((result.fault_at, result.settled_at) for result in results if result.fault_at)
    quiet, cursor = [], windows[0][1] if windows else time.monotonic()
    for start, end in [*windows[1:], (time.monotonic(), time.monotonic())]:
        if start > cursor:
            quiet.append((cursor, start))
        cursor = max(cursor, end)
    return quiet


def _unrest(bed: Testbed, results: list[Result]) -> tuple[float, int]:
    """Seconds two nodes held one VIP, and how often a holder changed, while all was quiet."""
    quiet = _quiet_times(results)
    seconds, moves = 0.0, 0
    for vip in bed.urls:
        history = bed.holders.history(vip)
        seconds += sum(two_holders(history, start, end) for start, end in quiet)
        moves += sum(1 for seen, _ in history if any(start < seen <= end for start, end in quiet))
    return round(seconds, 2), moves


@contextmanager
def _signals_interrupt() -> Iterator[Callable[[], None]]:
    """SIGINT and SIGTERM raise Interrupted, once; after that, or once the clean-up starts
    (call the function yielded), they are ignored until the end: nothing cuts it short."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None  # signal handlers live in the main thread only
        return

    def shield() -> None:
        for each in SIGNALS:
            signal.signal(each, signal.SIG_IGN)

    def interrupt(number: int, _frame: FrameType | None) -> None:
        shield()
        raise Interrupted(f"interrupted by {signal.Signals(number).name}")

    previous = {each: signal.signal(each, interrupt) for each in SIGNALS}
    try:
        yield shield
    finally:
        for each, handler in previous.items():
            signal.signal(each, handler)


def run_shapes(arguments: list[str], shapes: list[str]) -> list[LabRun]:
    """Several labs side by side: `python -m harness.lab ARGUMENTS --shape SHAPE --json` for
    each shape, each in a session of its own (their messages go to this one's stderr).
    SIGINT or SIGTERM here is passed on as SIGTERM (each lab cleans up after itself), then
    raises Interrupted; a lab that could not run at all raises LabFailed."""
    command = [sys.executable, "-m", "harness.lab", *arguments, "--json"]
    children: list[subprocess.Popen[str]] = []
    outputs: list[str] = []
    try:
        with _signals_interrupt() as shield:
            try:
                for shape in shapes:
                    child = subprocess.Popen(
                        [*command, f"--shape={shape}"],
                        stdout=subprocess.PIPE,
                        text=True,
                        cwd=ROOT,
                        start_new_session=True,
                    )
                    children.append(child)
                outputs = [child.communicate()[0] for child in children]
            finally:
                shield()
                for child in children:
                    if child.poll() is None:
                        child.terminate()
                for child in children:
                    child.wait()
    except Interrupted:
        raise Interrupted("interrupted: every lab cleaned up after itself") from None
    runs = []
    for shape, child, output in zip(shapes, children, outputs, strict=True):
        if child.returncode not in (0, 1):  # 1: it ran, with an error or leftovers to report
            raise LabFailed(f"the lab of shape {shape} could not run (exit {child.returncode})", child.returncode)
        runs += [LabRun.from_dict(run) for run in json.loads(output)]
    return runs
