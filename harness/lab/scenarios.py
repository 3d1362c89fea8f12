"""The scenarios: a fault injected into a running lab, what the client and the holders saw.

Every scenario after the bring-up starts from a settled lab (one holder per VIP, every
running keepalived at its full priority) and ends settled again, after repairing what it
broke. Figures count from the fault (CLOCK_MONOTONIC):

- moved: until the VIP is seen (`ip -4 addr`, every 50 ms) on a node that did not hold it;
- answers: until the first request started after the fault took effect succeeds through the VIP;
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

from cluster.networking import MCS_HTTP_PORT
from harness.lab.client import Probe, Sample, first_lasting_success, first_success
from harness.lab.clock import LabTimeout, wait_until
from harness.lab.services import HAPROXY, KEEPALIVED, STANDINS, NodeServices
from harness.lab.standins import API, HEALTHY, MCS, ROUTER, STOPPED, UNHEALTHY
from harness.lab.topology import NICS, OVS_BRIDGE, Testbed
from ignition.networking import GARP_MASTER_DELAY_S

# After the VIP answers again: how long to go on counting failures.
TAIL = 2.0

# Longest any one step may take before the scenario gives up on it (and reports so).
STEP_TIMEOUT = 30.0
# How long requests go on after a backend dies: haproxy's checks (inter 1s fall 2) and then some.
BACKEND_WATCH = 6.0


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
            self.result.holder_before = _only(self.bed.holders.current(self.vip))
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
        holder = _only(next((h for seen, h in reversed(self.bed.holders.history(self.vip)) if seen < since), frozenset()))
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
        result.holder_after = _only(self.bed.holders.current(self.vip))
        history = self.bed.holders.history(self.vip)
        result.path = _path(history, result.fault_at, result.settled_at)
        result.two_holders_s = round(two_holders(history, result.fault_at, result.settled_at), 2)
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


def _only(holders: frozenset[str]) -> str | None:
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


def two_holders(history: list[tuple[float, frozenset[str]]], start: float, end: float) -> float:
    """Seconds within [start, end] during which two or more nodes held the VIP."""
    total = 0.0
    for (seen, holders), (until, _) in zip(history, [*history[1:], (end, frozenset())], strict=True):
        if len(holders) >= 2:
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


def bring_up(bed: Testbed) -> Result:
    """The bootstrap starts, then the rest (masters boot from its MCS, so never before it
    serves); the API VIP goes to the bootstrap (masters' APIs and MCSs still down), the
    masters' come up, and the VIP stays on the bootstrap (100 beats a master's 85)."""
    bootstrap = [bed.nodes[node.name] for node in bed.plan.of_role("bootstrap")]
    masters = [bed.nodes[node.name] for node in bed.plan.of_role("master")]
    for node in bed.nodes.values():
        node.start(STANDINS)
        for standin in node.standin_services:
            master_control_plane = bootstrap and standin in (API, MCS) and node.node.role == "master"
            node.standins.set(standin, STOPPED if master_control_plane else HEALTHY)

    def start(nodes) -> None:
        for node in nodes:
            for service in node.services:
                if not node.running(service):
                    node.start(service)

    def start_the_rest() -> None:
        # As on real nodes: the masters boot from the bootstrap's machine config server, so
        # their keepalived starts only once the bootstrap serves (and holds the API VIP).
        start(bootstrap)
        if bootstrap:
            names = {node.node.name for node in bootstrap}
            wait_until(lambda: bool(bed.holders.current("api") & names), 30, "the bootstrap to hold the API VIP")
        start(bed.nodes.values())

    with Observation(bed, "bring-up", "api", baseline=False) as observation:
        observation.fault(start_the_rest)
        observation.wait_moved()
        observation.wait_answers()
        if bootstrap:
            apis_up = time.monotonic()
            for master in masters:
                master.standins.set(API, HEALTHY)
                master.standins.set(MCS, HEALTHY)
            ready = observation.wait_healthy(masters, "every master at its full priority")
            if ready is not None:
                observation.result.figures["masters_ready_s"] = round(ready - apis_up, 2)
            # Long enough for a master that outranked the bootstrap to take the VIP.
            time.sleep(takeover_budget(bed.plan.advert_int()))
    return observation.finish()


def bootstrap_done(bed: Testbed) -> Result:
    """bootkube is done: the bootstrap's API and MCS stop, its keepalived runs on (the server
    is deleted later). The VIP must move to a master at once, not wait for the deletion."""
    bootstrap = bed.plan.of_role("bootstrap")
    if not bootstrap:
        return Result("bootstrap-done", "api", notes=["the stack has no bootstrap"], settled=True)
    node = bed.nodes[bootstrap[0].name]

    def stop_serving() -> None:
        node.standins.set(API, STOPPED)
        node.standins.set(MCS, STOPPED)

    with Observation(bed, "bootstrap-done", "api") as observation:
        observation.fault(stop_serving)
        observation.wait_moved()
        observation.wait_answers()
        time.sleep(TAIL)
        # Then the server goes (pulumi up with bootstrap.enabled false): nothing may move.
        deleted = time.monotonic()
        node.stop(KEEPALIVED)
        node.stop(STANDINS)
        time.sleep(bed.plan.advert_int())
    result = observation.finish()
    later = [holders for seen, holders in bed.holders.history("api") if seen >= deleted]
    result.figures["moves_after_deletion"] = float(len(later))
    return result


def address_moves(bed: Testbed) -> Result:
    """OVN-Kubernetes moves the API VIP holder's address from its NIC to br-ex while clients
    run (the NIC's addresses, the VIP with them, are flushed): keepalived-run must follow."""
    with Observation(bed, "address-moves", "api") as observation:
        holder = observation.holder
        services = bed.nodes[holder]
        starts = services.keepalived.starts
        observation.fault(lambda: bed.move_address(holder))
        observation.wait_moved()
        observation.wait_answers()
        followed = observation._wait(
            lambda: services.keepalived.starts > starts and services.keepalived.interface == OVS_BRIDGE,
            f"keepalived on {holder} to run on {OVS_BRIDGE}",
        )
        if followed is not None:
            observation.result.figures["keepalived_on_br_ex_s"] = round(followed - observation.result.fault_at, 2)
        time.sleep(TAIL)
    result = observation.finish()
    nic = NICS[bed.plan_node(holder).role]
    result.notes.append(f"{holder}: {nic} -> {OVS_BRIDGE}; keepalived on {bed.nodes[holder].keepalived.interface}")
    return result


def holder_killed(bed: Testbed) -> Result:
    """SIGKILL keepalived, haproxy and the API on the API VIP's holder: no priority 0."""
    with Observation(bed, "holder-killed", "api") as observation:
        node = bed.nodes[observation.holder]
        observation.fault(lambda: node.kill(KEEPALIVED, HAPROXY, STANDINS))
        observation.wait_moved()
        observation.wait_answers()
        time.sleep(TAIL)
    node.restore()
    return observation.finish()


def api_unhealthy(bed: Testbed) -> Result:
    """The holder's API answers /readyz with 500 while its keepalived runs on."""
    with Observation(bed, "api-unhealthy", "api") as observation:
        node = bed.nodes[observation.holder]
        observation.fault(lambda: node.standins.set(API, UNHEALTHY))
        # haproxy keeps the VIP answering through the other masters: the move is what counts.
        observation.wait_moved()
        time.sleep(TAIL)
    node.restore()
    return observation.finish()


def link_cut(bed: Testbed) -> Result:
    """The holder's cable is pulled at the switch, and plugged back after the takeover."""
    with Observation(bed, "link-cut", "api") as observation:
        holder = observation.holder
        observation.fault(lambda: bed.set_link(holder, up=False))
        observation.wait_moved()
        observation.wait_answers()
        time.sleep(TAIL)
        returned = time.monotonic()
        bed.set_link(holder, up=True)
        # As long as a takeover takes: a split brain would show and heal in that time.
        time.sleep(takeover_budget(bed.plan.advert_int()))
    observation.allow_handover_after(returned)
    result = observation.finish()
    history = bed.holders.history("api")
    result.figures["two_holders_after_return_s"] = round(two_holders(history, returned, result.settled_at), 2)
    return result


def backend_dies(bed: Testbed) -> Result:
    """Another master's API stops while the holder stays: haproxy must route around it."""
    with Observation(bed, "backend-dies", "api") as observation:
        victim = next(node.name for node in bed.plan.of_role("master") if node.name != observation.holder)
        observation.result.notes.append(f"{victim}'s API stopped")
        observation.expect_no_outage()
        observation.fault(lambda: bed.nodes[victim].standins.set(API, STOPPED))
        # haproxy's health checks take the dead backend out within seconds: watch that long.
        time.sleep(BACKEND_WATCH)
    bed.nodes[victim].restore()
    return observation.finish()


def new_node(bed: Testbed) -> Result:
    """A node created after the bootstrap is gone fetches its first config,
    `http://<API VIP>:22624/config/worker`, as its pointer config says. Only the holder's own
    MCS can answer: OVN-Kubernetes' rules reject every connection a node opens to an MCS (the
    lab's nodes have them), which the scenario shows first from the holder itself. Then the
    holder's MCS stops while the new node keeps fetching: the VIP moves to a master whose MCS
    listens, and the fetches succeed again, answered by that master."""
    holder = _only(bed.holders.current("api"))
    if holder is None:
        return Result("new-node", "api", notes=["no single holder of the API VIP to start from"])
    others = [node.ip for node in bed.plan.of_role("master") if node.name != holder]
    # What the old design did from a node: keepalived's curl of the local MCS, haproxy's
    # connections to every master's MCS (itself and the others), a client on the holder via the VIP.
    own = bed.plan_node(holder).ip
    tried = [f"http://127.0.0.1:{MCS_HTTP_PORT}/healthz", f"http://{own}:{MCS_HTTP_PORT}/healthz"]
    tried += [f"http://{ip}:{MCS_HTTP_PORT}/healthz" for ip in others[:1]]
    tried.append(bed.fetch_urls["mcs"])
    refused = sum(1 for url in tried if not bed.connects(holder, url))
    newcomer = bed.add_node("new-worker", bed.plan.spare_worker)
    with Observation(bed, "new-node", "api", target="mcs", source=newcomer) as observation:
        node = bed.nodes[observation.holder]
        time.sleep(1.0)  # a second of fetches answered by the holder first
        observation.fault(lambda: node.standins.set(MCS, STOPPED))
        observation.wait_moved()
        # The holder's priority drops (not to 0): every master of equal priority times out at
        # once and takes the VIP for a moment, and the new node keeps the last gratuitous ARP it
        # heard, maybe a loser's (seen: two masters' bursts 0.3 ms apart), until the winner's
        # second burst a second later. Answered means answered from then on.
        observation.wait_answers(hold=GARP_MASTER_DELAY_S)
        time.sleep(TAIL)
    node.restore()
    result = observation.finish()
    result.figures["node_connections_to_mcs_refused"] = float(refused)
    result.figures["node_connections_to_mcs_tried"] = float(len(tried))
    served = [(sample.start, sample.detail.split()[1]) for sample in observation.samples if sample.ok]
    # Fetches started while the stand-in was being stopped may still have been answered by it.
    before = [name for start, name in served if start < result.fault_at]
    after = [name for start, name in served if start >= observation.in_force_at]
    result.figures["fetches_before"] = float(len(before))
    result.figures["fetches_after"] = float(len(after))
    result.notes.append(
        f"/config/worker answered by {', '.join(sorted(set(before))) or 'nobody'} before the fault, "
        f"by {', '.join(sorted(set(after))) or 'nobody'} after"
    )
    result.figures["answered_only_by_the_holder"] = float(
        set(before) == {result.holder_before}
        and set(after) == {result.holder_after}
        and result.holder_after != result.holder_before
    )
    return result


def keepalived_restart(bed: Testbed) -> Result:
    """The keepalived container on the API VIP holder dies (SIGKILL: no priority 0, its VIP
    stays) and the kubelet starts it again at once: the VIP it left is removed before keepalived
    starts, so the node never makes a second holder."""
    with Observation(bed, "keepalived-restart", "api") as observation:
        holder = observation.holder
        node = bed.nodes[holder]
        log = node.workdir / f"{KEEPALIVED}.log"
        before = log.stat().st_size

        def restart() -> None:
            node.kill(KEEPALIVED)
            node.start(KEEPALIVED)

        observation.fault(restart)
        observation.wait_moved()
        observation.wait_answers()
        time.sleep(TAIL)
    result = observation.finish()
    with log.open() as text:
        text.seek(before)
        result.figures["stale_vips_removed"] = float(text.read().count("removed VIP "))
    # 1: the restarted keepalived runs (pid files of the killed one must not stop it).
    result.figures["keepalived_running"] = float(node.running(KEEPALIVED) and node.keepalived.healthy())
    return result


def ingress_moves(bed: Testbed) -> Result:
    """The router on the Ingress VIP's holder stays up but is no longer ready (its health
    endpoint and port 80 answer 500): the VIP moves to another router node."""
    with Observation(bed, "ingress", "ingress") as observation:
        node = bed.nodes[observation.holder]
        observation.fault(lambda: node.standins.set(ROUTER, UNHEALTHY))
        observation.wait_moved()
        observation.wait_answers()
        label = bed.vip_label("ingress", next(iter(bed.holders.current("ingress")), observation.holder))
        time.sleep(TAIL)
    node.restore()
    result = observation.finish()
    result.vip_label = label
    roles = sorted({node.role for node in bed.plan.candidates("ingress")})
    result.notes.append(f"Ingress VIP on the {' and '.join(roles)}s")
    return result


@dataclass(frozen=True)
class Scenario:
    name: str
    run: Callable[[Testbed], Result]
    needs: tuple[str, ...]  # scenarios that set the stage, run first when this one runs alone


SCENARIOS = {
    scenario.name: scenario
    for scenario in (
        Scenario("bring-up", bring_up, ()),
        Scenario("bootstrap-done", bootstrap_done, ("bring-up",)),
        Scenario("address-moves", address_moves, ("bring-up", "bootstrap-done")),
        Scenario("holder-killed", holder_killed, ("bring-up", "bootstrap-done")),
        Scenario("api-unhealthy", api_unhealthy, ("bring-up", "bootstrap-done")),
        Scenario("link-cut", link_cut, ("bring-up", "bootstrap-done")),
        Scenario("backend-dies", backend_dies, ("bring-up", "bootstrap-done")),
        Scenario("new-node", new_node, ("bring-up", "bootstrap-done")),
        Scenario("keepalived-restart", keepalived_restart, ("bring-up", "bootstrap-done")),
        Scenario("ingress", ingress_moves, ("bring-up",)),
    )
}
