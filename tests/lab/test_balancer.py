"""The user's own balancer in the lab (harness/lab/balancer.py): the standalone stack with
`ocp:loadBalancer: UserManaged`, its nodes running stand-ins only, a real haproxy holding the
VIPs, driven through the bootstrap serving, the masters coming up, bootkube done and the
bootstrap's removal (docs/lab.md, "Your own balancer")."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.lab.balancer import PHASES, BalancerRun, haproxy_config, load_balancer_plan, run_balancer_lab
from tests.lab.conftest import need_lab

# The scenario's own budget (the whole lab's is tests/lab/test_scenarios.py's).
WALL_LIMIT_S = 30
API_POOLS = ("api", "machine-config", "machine-config-http")
INGRESS_POOLS = ("ingress-http", "ingress-https")
BOOTSTRAP = "ocp4-bootstrap"
MASTERS = ["ocp4-master-0", "ocp4-master-1", "ocp4-master-2"]
ROUTERS = ["ocp4-worker-0", "ocp4-worker-1"]


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    return load_balancer_plan("standalone", None, tmp_path_factory.mktemp("balancer") / "plan")


@pytest.fixture(scope="module")
def balancer_run(plan, tmp_path_factory) -> BalancerRun:
    need_lab()
    return run_balancer_lab(plan, tmp_path_factory.mktemp("balancer-run"))


def test_no_node_of_the_plan_runs_keepalived_or_haproxy(plan):
    assert plan.vip_files == {}
    assert {pool.name for pool in plan.pools} == {*API_POOLS, *INGRESS_POOLS}


def test_the_balancers_haproxy_config_is_valid(plan, tmp_path: Path):
    config = tmp_path / "haproxy.cfg"
    config.write_text(haproxy_config(plan, tmp_path / "stats.sock"))
    checked = subprocess.run(["haproxy", "-c", "-f", str(config)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    text = config.read_text()
    assert "    bind 10.0.0.5:6443\n" in text and "    bind 10.0.0.7:443\n" in text
    assert "    option redispatch 1\n" in text


def test_the_run_drove_every_phase_and_left_nothing_behind(balancer_run: BalancerRun):
    assert balancer_run.error is None
    assert list(balancer_run.phases) == list(PHASES)
    assert balancer_run.leftovers == []
    assert balancer_run.wall_s < WALL_LIMIT_S


def test_every_frontend_answers_through_every_phase(balancer_run: BalancerRun):
    for name, phase in balancer_run.phases.items():
        assert phase.requests > 0, name
        assert phase.failed == 0, (name, phase.failures)
        assert set(phase.answered_by) == {*API_POOLS, *INGRESS_POOLS}, name


def test_the_bootstrap_serves_alone_then_beside_the_masters_then_not_at_all(balancer_run: BalancerRun):
    phases = balancer_run.phases
    for pool in API_POOLS:
        assert phases["bootstrap"].answered_by[pool] == [BOOTSTRAP], pool
        assert set(phases["masters"].answered_by[pool]) & set(MASTERS), pool
        assert phases["bootstrap-done"].answered_by[pool] == MASTERS, pool
        assert phases["removed"].answered_by[pool] == MASTERS, pool
    for pool in INGRESS_POOLS:
        for phase in phases.values():
            assert phase.answered_by[pool] == ROUTERS, pool


def test_no_node_holds_or_answers_on_a_vip(balancer_run: BalancerRun):
    assert balancer_run.nodes_holding_a_vip == []
    assert balancer_run.vip_macs_are_the_balancers
    assert balancer_run.answers_without_the_balancer == 0
