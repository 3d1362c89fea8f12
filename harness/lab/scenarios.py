"""The scenarios: a fault injected into a running lab, observed (harness/lab/observation.py).

Every scenario after the bring-up starts from a settled lab (one holder per VIP, every
running keepalived at its full priority) and ends settled again, after repairing what it
broke.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from cluster.networking import MCS_HTTP_PORT
from harness.lab.clock import wait_until
from harness.lab.observation import Observation, Result, sole_holder, takeover_budget, two_holders
from harness.lab.services import HAPROXY, KEEPALIVED, STANDINS
from harness.lab.standins import API, HEALTHY, MCS, ROUTER, STOPPED, UNHEALTHY
from harness.lab.topology import NICS, OVS_BRIDGE, Testbed, url_host
from ignition.networking import GARP_MASTER_DELAY_S

# After the VIP answers again: how long to go on counting failures.
TAIL = 2.0
# How long requests go on after a backend dies: haproxy's checks (inter 1s fall 2) and then some.
BACKEND_WATCH = 6.0


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
        observation.hold_window_until_the_new_holder_answers()
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
    holder = sole_holder(bed.holders.current("api"))
    if holder is None:
        return Result("new-node", "api", notes=["no single holder of the API VIP to start from"])
    others = [url_host(node.ip) for node in bed.plan.of_role("master") if node.name != holder]
    # What the old design did from a node: keepalived's curl of the local MCS, haproxy's
    # connections to every master's MCS (itself and the others), a client on the holder via the VIP.
    own = url_host(bed.plan_node(holder).ip)
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
        observation.hold_window_until_the_new_holder_answers()
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
