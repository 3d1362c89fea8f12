"""An observation of one fault in a running lab: what the client and the holders saw, and the
figures worked out from it. Figures count from the fault (CLOCK_MONOTONIC):

- moved: until the VIP is seen (`ip -4 addr`, every 50 ms) on a node that did not hold it;
- answers: until the first request started after the fault took effect succeeds through the VIP
  (for new-node: and every one in the second after it);
- failed: requests through the VIP that failed, and how many of them started after it
  answered again (outside the takeover window; for a fault that should cost nothing, all);
- two holders: time two or more nodes had the VIP between the fault and the settled end.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from types import TracebackType

from harness.lab.client import Probe, Sample, first_lasting_success, first_success
from harness.lab.clock import LabTimeout, wait_until
from harness.lab.services import KEEPALIVED, NodeServices
from harness.lab.topology import Testbed

# Longest any one step may take before the scenario gives up on it (and reports so).
STEP_TIMEOUT = 30.0


def takeover_budget(advert_int: float) -> float:
    """The target for a takeover from a silent holder: Master_Down_Interval (3 adverts plus
    skew, under one) and a second for the client to get through."""
    return 3 * advert_int + 1


@dataclass
class Result:
    scenario: str
    vip: str
    holder_before: str | None = None
    holder_after: str | None = None
    path: list[str] = field(default_factory=list)  # holders seen from the fault on, "+" joins two
    moved_s: float | None = None
    answers_s: float | None = None
    requests: int = 0
    failed: int = 0
    failed_outside: int | None = None  # None: the scenario has no takeover window
    two_holders_s: float = 0.0
    # Of those, the seconds the holder before the fault was one of them (a stale VIP it kept).
    former_holder_beside_another_s: float = 0.0
    settled: bool = False
    figures: dict[str, float] = field(default_factory=dict)  # the scenario's own
    vip_label: str | None = None  # the label the new holder took the VIP under (where measured)
    notes: list[str] = field(default_factory=list)
    fault_at: float = 0.0
    settled_at: float = 0.0


class Observation:
    """One scenario's measurement: the client's requests through one VIP (to `target`: the
    VIP's own URL, or another served through it) and its holders."""

    def __init__(
        self,
        bed: Testbed,
        scenario: str,
        vip: str,
        baseline: bool = True,
        target: str | None = None,
        source: str | None = None,
    ):
        self.bed, self.vip, self.baseline = bed, vip, baseline
        self.target = target or vip
        self.source = source  # the namespace requests come from; the client's when None
        self.result = Result(scenario, vip)
        self._probe: Probe | None = None
        self._samples: list[Sample] = []
        self._recovered_at: float | None = None
        self._in_force_at = 0.0
        self._second_window: tuple[float, float] | None = None

    def __enter__(self) -> Observation:
        self._probe = self.bed.probe(self.target, source=self.source)
        if self.baseline:
            self.result.holder_before = sole_holder(self.bed.holders.current(self.vip))
            started = time.monotonic()
            self._wait(
                lambda: first_success(self._live(), started) is not None, "a request through the VIP before the fault"
            )
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        assert self._probe is not None
        self._samples = self._probe.stop()
        # Kept beside the logs (--keep): every request, times relative to the fault.
        with (self.bed.workdir / f"{self.result.scenario}.requests.jsonl").open("w") as output:
            for sample in self._samples:
                relative = {
                    **asdict(sample),
                    "start": sample.start - self.result.fault_at,
                    "end": sample.end - self.result.fault_at,
                }
                output.write(json.dumps(relative) + "\n")

    @property
    def samples(self) -> list[Sample]:
        """Every request, once the observation ended."""
        return list(self._samples)

    @property
    def in_force_at(self) -> float:
        """When the fault's action returned: requests started from then on saw its effect."""
        return self._in_force_at

    @property
    def holder(self) -> str:
        """The one holder of the VIP before the fault (a settled lab has one)."""
        if self.result.holder_before is None:
            raise RuntimeError(f"no single holder of the {self.vip} VIP before {self.result.scenario}")
        return self.result.holder_before

    def _live(self) -> list[Sample]:
        assert self._probe is not None
        return self._probe.samples(self.target)

    def _wait(self, predicate: Callable[[], bool], what: str, timeout: float = STEP_TIMEOUT) -> float | None:
        try:
            return wait_until(predicate, timeout, what)
        except LabTimeout as error:
            self.result.notes.append(str(error))
            return None

    def fault(self, action: Callable[[], None]) -> None:
        """Inject it. Figures count from the start; requests that began before `action`
        returned may still have slipped through (a daemon not yet dead): they never count as
        the VIP answering again."""
        self.result.fault_at = time.monotonic()
        action()
        self._in_force_at = time.monotonic()

    def wait_moved(self) -> None:
        """Until a node that did not hold the VIP at the fault holds it."""
        before = {self.result.holder_before}

        def moved() -> float | None:
            return next(
                (
                    seen
                    for seen, holders in self.bed.holders.history(self.vip)
                    if seen >= self.result.fault_at and holders - before
                ),
                None,
            )

        if self._wait(lambda: moved() is not None, f"the {self.vip} VIP to move") is not None:
            self.result.moved_s = (moved() or 0.0) - self.result.fault_at

    def wait_answers(self, hold: float = 0.0) -> None:
        """Until a request started after the fault succeeds, and (`hold`) every one started in the
        `hold` seconds after it too: the end of the takeover window."""

        def answered() -> Sample | None:
            live = self._live()
            return first_lasting_success(live, self._in_force_at, hold) if hold else first_success(live, self._in_force_at)

        self._wait(lambda: answered() is not None, f"the {self.target} VIP to answer")
        success = answered()
        if success is not None:
            self._recovered_at = success.end
            self.result.answers_s = success.end - self.result.fault_at

    def expect_no_outage(self) -> None:
        """Every failure from the fault on counts as outside the window: there should be none."""
        self._recovered_at = self._in_force_at

    def allow_handover_after(self, since: float) -> None:
        """If the VIP moves again from `since` on, that is a takeover of its own: its failures,
        until a request through the new holder succeeds, count as inside a window. (A node
        whose link returns wins a tie of equal priorities on its higher address and takes the
        VIP back: keepalived has no "stay with the current holder" short of nopreempt.)"""
        holder = sole_holder(next((h for seen, h in reversed(self.bed.holders.history(self.vip)) if seen < since), frozenset()))
        moved = next(
            (seen for seen, holders in self.bed.holders.history(self.vip) if seen >= since and holders - {holder}),
            None,
        )
        if moved is None:
            return
        self.result.figures["moved_again_after_return_s"] = round(moved - since, 2)
        success = first_success(self._samples, moved)
        if success is not None:
            self._second_window = (since, success.end)

    def hold_window_until_the_new_holder_answers(self) -> None:
        """The takeover window lasts until a request through the VIP's new holder succeeds. Where
        the former holder serves on until it lets the VIP go (address-moves, keepalived-restart),
        a request through it ended the window early, and the ones in flight when the new holder's
        gratuitous ARP came, or sent while nobody held the VIP, counted as strays."""
        if self.result.moved_s is None:
            return
        success = first_success(self._samples or self._live(), self.result.fault_at + self.result.moved_s)
        if success is None:
            return
        self.result.figures["answers_after_move_s"] = round(success.end - self.result.fault_at, 2)
        if self._recovered_at is not None and success.end > self._recovered_at:
            self._second_window = (self._in_force_at, success.end)

    def _in_second_window(self, sample: Sample) -> bool:
        return self._second_window is not None and self._second_window[0] <= sample.start < self._second_window[1]

    def wait_healthy(self, nodes: list[NodeServices], what: str) -> float | None:
        return self._wait(lambda: all(node.keepalived.healthy() for node in nodes), what)

    def finish(self) -> Result:
        """Settle the lab (after the caller's repairs) and work out the figures."""
        result = self.result
        settled = settle(self.bed)
        result.settled = settled is not None
        result.settled_at = settled if settled is not None else time.monotonic()
        if settled is None:
            holders = {vip: sorted(self.bed.holders.current(vip)) for vip in self.bed.urls}
            keepalived = {name: node.keepalived.describe() for name, node in self.bed.nodes.items()}
            result.notes.append(f"did not settle: holders {holders}, keepalived {keepalived}")
        result.holder_after = sole_holder(self.bed.holders.current(self.vip))
        history = self.bed.holders.history(self.vip)
        result.path = _path(history, result.fault_at, result.settled_at)
        result.two_holders_s = round(two_holders(history, result.fault_at, result.settled_at), 2)
        if result.holder_before is not None:
            stale = two_holders(history, result.fault_at, result.settled_at, among=result.holder_before)
            result.former_holder_beside_another_s = round(stale, 2)
        result.requests = len(self._samples)
        failures = [sample for sample in self._samples if not sample.ok]
        result.failed = len(failures)
        if self._recovered_at is not None:
            outside = [sample for sample in failures if sample.start >= self._recovered_at and not self._in_second_window(sample)]
            result.failed_outside = len(outside)
            if outside:  # what they got and who held the VIP then: a rare failure must explain itself
                answers = Counter(" ".join(sample.detail.split()[:4]) for sample in outside)
                held = Counter(",".join(sorted(self.bed.holders.at(self.vip, sample.start))) or "nobody" for sample in outside)
                result.notes.append(
                    f"failed after recovery: {', '.join(f'{count} x {answer}' for answer, count in answers.most_common(3))}; "
                    f"VIP held by {', '.join(f'{holder} ({count})' for holder, count in held.most_common())}; "
                    f"first {outside[0].start - result.fault_at:.2f} s, last {outside[-1].start - result.fault_at:.2f} s after the fault"
                )
        for name in ("moved_s", "answers_s"):
            if (value := getattr(result, name)) is not None:
                setattr(result, name, round(value, 2))
        return result


def sole_holder(holders: frozenset[str]) -> str | None:
    return next(iter(holders)) if len(holders) == 1 else None


def _path(history: list[tuple[float, frozenset[str]]], start: float, end: float) -> list[str]:
    """The distinct holder sets from `start` to `end`, the one in force at `start` first."""
    path: list[str] = []
    for seen, holders in history:
        if seen > end:
            break
        name = "+".join(sorted(holders)) or "-"
        if seen <= start:
            path = [name]
        elif not path or path[-1] != name:
            path.append(name)
    return path


def two_holders(history: list[tuple[float, frozenset[str]]], start: float, end: float, among: str | None = None) -> float:
    """Seconds within [start, end] during which two or more nodes held the VIP (`among` one of them)."""
    total = 0.0
    for (seen, holders), (until, _) in zip(history, [*history[1:], (end, frozenset())], strict=True):
        if len(holders) >= 2 and (among is None or among in holders):
            total += max(0.0, min(until, end) - max(seen, start))
    return total


def settle(bed: Testbed, timeout: float = STEP_TIMEOUT) -> float | None:
    """Wait until every VIP has exactly one holder and every running keepalived is at its
    full priority, and that holds for one advertisement interval; the time it started to
    hold, or None when it did not within `timeout`."""
    since: list[float] = []

    def steady() -> bool:
        now = time.monotonic()
        ok = all(len(bed.holders.current(vip)) == 1 for vip in bed.urls) and all(
            node.keepalived.healthy() for node in bed.nodes.values() if node.running(KEEPALIVED)
        )
        if not ok:
            since.clear()
        elif not since:
            since.append(now)
        return bool(since) and now - since[0] >= bed.plan.advert_int()

    try:
        wait_until(steady, timeout, "the lab to settle")
    except LabTimeout:
        return None
    return since[0]
