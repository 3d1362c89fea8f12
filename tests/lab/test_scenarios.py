"""The lab's targets, per scenario and shape of the standalone stack (docs/lab.md)."""

from __future__ import annotations

from ipaddress import ip_address

from harness.lab.runner import LabRun
from harness.lab.scenarios import SCENARIOS
from ignition.networking import GARP_MASTER_DELAY_S
from tests.lab.conftest import LabSession

WHOLE_LAB_LIMIT_S = 300
# The target is zero. A request whose TCP connection is open at the instant the VIP's MAC
# changes (a new holder's gratuitous ARP, a former holder coming back) reaches a node that
# has no such connection and is reset: 12 such requests in 36 shape-runs (docs/lab.md), never
# two in one scenario. One is tolerated so that CI is not a coin toss; two or more fail.
STRAY_REQUESTS = 1
# keepalived's mcs_listening check on a master: fall 2, every second, plus the interval's phase.
MCS_NOTICED_S = 3.0
# keepalived's second gratuitous ARP burst after taking a VIP (vrrp_garp_master_delay). Nodes
# of equal priority whose timers run out together all take the VIP for a moment and each sends
# its burst; Linux takes every gratuitous ARP, so a client keeps the last one, maybe a loser's,
# until the winner's second burst (a capture of the five-masters new-node scenario: two masters'
# bursts 0.3 ms apart, the new node's SYNs then to the loser's MAC). With the default of 5 s that
# was answers 5 s after the move in 3 of 8 runs and, once in CI, a first answer in between
# followed by 42 failures; with 1 s, answers 1 s after the move in 1 of 6.
GARP_REPEAT_S = float(GARP_MASTER_DELAY_S)


def no_stale_holder(result, lab_run: LabRun) -> None:
    """The holder that lost the VIP never held it beside another. The others, of equal priority
    (as OpenShift's keepalived templates give the masters), may all take it when their timers
    run out together (five-masters keepalived-restart: two for 0.08 s, once): the first
    advertisement each sends makes all but one back down, within an interval."""
    assert result.former_holder_beside_another_s == 0, result.path
    assert result.two_holders_s <= lab_run.advert_int, result.path


def test_the_dual_stack_shape_moves_the_ipv6_vips(lab_run: LabRun):
    """Its scenarios observe the IPv6 VIPs (VRRP version 3 beside the IPv4 instances); the others the IPv4 ones."""
    version = 6 if lab_run.label.endswith("/dual-stack") else 4
    assert {name: ip_address(vip).version for name, vip in lab_run.vips.items()} == {"api": version, "ingress": version}


def test_the_lab_ran_every_scenario_and_left_nothing_behind(lab_run: LabRun):
    assert lab_run.error is None
    assert [result.scenario for result in lab_run.results] == list(SCENARIOS)
    assert lab_run.leftovers == []


def test_every_scenario_ends_with_one_holder_per_vip(lab_run: LabRun):
    assert [result.scenario for result in lab_run.results if not result.settled] == []


def test_never_two_holders_after_convergence(lab_run: LabRun):
    assert lab_run.split_brain_s == 0


def test_a_vip_moves_only_when_a_fault_makes_it(lab_run: LabRun):
    assert lab_run.quiet_moves == 0


def test_bring_up_puts_the_api_vip_on_the_bootstrap_and_keeps_it_there(lab_run: LabRun):
    result = lab_run.result("bring-up")
    assert result.path == ["-", *lab_run.of_role("bootstrap")]
    assert result.answers_s is not None
    assert result.failed_outside == 0
    assert "masters_ready_s" in result.figures


def test_the_vip_leaves_the_bootstrap_when_it_stops_serving(lab_run: LabRun):
    """bootkube done (API and MCS stopped, keepalived still running): FAULT, priority 0, a
    master takes over within the takeover target; deleting the server later moves nothing."""
    result = lab_run.result("bootstrap-done")
    assert result.holder_before in lab_run.of_role("bootstrap")
    assert result.holder_after in lab_run.of_role("master")
    assert result.answers_s is not None and result.answers_s <= lab_run.budget_s
    # One stray, as elsewhere: a single TimeoutError 3.8-6 s after the fault, the VIP long on
    # its master (compact and five-masters of one CI run). Seen again at load 20-36, where
    # answered requests took up to 1.7 s: TCP and TLS past the client's 0.5 s, the CPU's doing
    # (TLS has a budget of its own since).
    assert result.failed_outside <= STRAY_REQUESTS
    assert result.figures["moves_after_deletion"] == 0


def test_keepalived_follows_the_address_to_br_ex(lab_run: LabRun):
    """The holder's address moves from its NIC to br-ex under load: keepalived-run restarts
    keepalived there, the VIP answers again within the target, no second holder."""
    result = lab_run.result("address-moves")
    assert result.settled
    assert "keepalived_on_br_ex_s" in result.figures
    assert result.answers_s is not None and result.answers_s <= lab_run.budget_s
    assert result.failed_outside <= STRAY_REQUESTS
    no_stale_holder(result, lab_run)


def test_no_node_reaches_an_mcs_under_ovn_kubernetes_rules(lab_run: LabRun):
    """What the old design needed (haproxy on a master connecting to the masters' MCS,
    keepalived's curl of the local one) is refused on the lab's nodes, as on a cluster."""
    figures = lab_run.result("new-node").figures
    assert figures["node_connections_to_mcs_tried"] == 4
    assert figures["node_connections_to_mcs_refused"] == 4


def test_a_new_node_gets_its_config_through_the_vip_from_whoever_holds_it(lab_run: LabRun):
    """A node created after the bootstrap is gone fetches /config/worker through the API VIP;
    the holder's MCS stops meanwhile: the VIP moves to a master whose MCS listens, and the
    fetches succeed again, each answered by the holder of the moment."""
    result = lab_run.result("new-node")
    assert result.holder_before in lab_run.of_role("master")
    assert result.holder_after in lab_run.of_role("master") and result.holder_after != result.holder_before
    assert result.figures["fetches_before"] > 0 and result.figures["fetches_after"] > 0
    assert result.figures["answered_only_by_the_holder"] == 1
    # The check notices a closed MCS after two failures a second apart (up to 3 s), then a
    # priority drop (not 0) waits out Master_Down_Interval.
    assert result.moved_s is not None and result.moved_s <= MCS_NOTICED_S + lab_run.budget_s
    assert result.answers_s is not None and result.answers_s <= result.moved_s + GARP_REPEAT_S + 1.0
    assert result.failed_outside <= STRAY_REQUESTS


def test_a_restarted_keepalived_leaves_no_stale_vip(lab_run: LabRun):
    result = lab_run.result("keepalived-restart")
    assert result.figures["stale_vips_removed"] >= 1
    assert result.figures["keepalived_running"] == 1
    no_stale_holder(result, lab_run)
    assert result.answers_s is not None and result.answers_s <= lab_run.budget_s
    assert result.failed_outside <= STRAY_REQUESTS


def test_hard_kill_takeover_within_target(lab_run: LabRun):
    result = lab_run.result("holder-killed")
    assert result.holder_after in lab_run.of_role("master") and result.holder_after != result.holder_before
    assert result.answers_s is not None and result.answers_s <= lab_run.budget_s
    assert result.failed_outside <= STRAY_REQUESTS


def test_unhealthy_api_loses_the_vip(lab_run: LabRun):
    result = lab_run.result("api-unhealthy")
    assert result.moved_s is not None
    assert result.holder_after in lab_run.of_role("master") and result.holder_after != result.holder_before


def test_link_cut_takeover_within_target(lab_run: LabRun):
    result = lab_run.result("link-cut")
    assert result.holder_after != result.holder_before
    assert result.answers_s is not None and result.answers_s <= lab_run.budget_s
    assert result.figures["two_holders_after_return_s"] == 0


def test_link_cut_fails_only_inside_the_takeover_window(lab_run: LabRun):
    assert lab_run.result("link-cut").failed_outside <= STRAY_REQUESTS


def test_dead_backend_costs_no_request(lab_run: LabRun):
    result = lab_run.result("backend-dies")
    assert result.path == [result.holder_before]
    assert result.failed <= STRAY_REQUESTS


def test_ingress_vip_moves_to_another_router_node(lab_run: LabRun):
    result = lab_run.result("ingress")
    routers = lab_run.of_role("worker") or lab_run.of_role("master")  # compact: the masters
    assert result.holder_before in routers and result.holder_after in routers
    assert result.holder_after != result.holder_before
    # As the MCO labels it, so that ovn-kubernetes does not take the VIP for a node address. IPv6
    # has no labels: deprecated (preferred_lft 0), the node never picks it as a source address.
    assert result.vip_label == ("deprecated" if lab_run.label.endswith("/dual-stack") else "vip")
    # FAULT within two checks a second apart, then priority 0: well inside the target. The
    # answers may wait for keepalived's second burst, as in new-node (GARP_REPEAT_S).
    assert result.moved_s is not None and result.moved_s <= lab_run.budget_s
    assert result.answers_s is not None and result.answers_s <= result.moved_s + GARP_REPEAT_S + 1.0
    assert result.failed_outside == 0


def test_whole_lab_within_five_minutes(lab_session: LabSession):
    assert lab_session.wall_s < WHOLE_LAB_LIMIT_S
