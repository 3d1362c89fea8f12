"""What the running cluster adds to a node's port stays there through day 2 (issue 35, finding 4):
the real engine and the real OpenStack plugin (pulumi-openstack 5.5.3, built here) run the
program's own `node_port` against a cloud of ports (tests/e2e/neutron.py), in a network namespace
that has only loopback. Between runs the test does to the cloud what the cluster's controllers do:
cloud-network-config-controller appends an EgressIP to the port's allowed_address_pairs, the cloud
controller manager attaches an `lb-sg-*` group. Then `pulumi refresh` and `pulumi up`, and an edit
of ocp:openstack.additionalSecurityGroupIds, must leave both on the port. And a node's port on an
additional network (finding 5) is made as its own port is, which the real plugin sends as such."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from harness import netns
from tests.conftest import ROOT, stack_config, with_section
from tools import toolchain

PASSPHRASE = "e2e-only-passphrase"
OPENSTACK = ("openstack", "5.5.3")
CLOUD_PORT = 18999
EGRESS_IP = {"ip_address": "10.0.3.17", "mac_address": "fa:16:3e:00:00:01"}
LB_GROUP = "lb-sg-2f4c1a7e-default-router"
NETWORK = "5b0c6f2e-8a43-4d1e-9f6a-2c7d8e9f0a1b"
ADDED, OTHER = "0e4d2c1b-7f6a-4b3c-8d9e-1a2b3c4d5e6f", "7c1d9e2f-3a4b-4c5d-8e6f-0a1b2c3d4e5f"

PROGRAM = f"""
import json, sys
sys.path.insert(0, {str(ROOT)!r})
import pulumi
import pulumi_openstack as openstack
from cluster.addresses import plan_addresses
from cluster.config import load_config
from components.openstack.common import ClusterContext, Subnet
from components.openstack.machines import additional_network_ports, node_port

config = load_config(json.loads(open("settings.json").read()))
plan = plan_addresses(config)
cloud = openstack.Provider(
    "cloud", auth_url="http://127.0.0.1:{CLOUD_PORT}/v3", user_name="tester", password="secret", tenant_name="tester",
    user_domain_name="Default", project_domain_name="Default", region="RegionOne",
)
nodes = pulumi.ComponentResource("ocp:test:Nodes", "nodes", None, pulumi.ResourceOptions(providers=[cloud]))
cluster = ClusterContext(config, plan, pulumi.Output.from_input("ocp4-x7k2p"), pulumi.Output.from_input(()))
worker = plan.workers[0]
groups = ["sg-worker", *config.openstack.additional_security_group_ids]
port = node_port("ocp4-workers-worker-0", cluster, worker, Subnet("net-1", "subnet-1"), groups, [plan.ingress_vip], nodes)
additional_network_ports("ocp4-workers-worker-0", cluster, worker, groups, nodes)
pulumi.export("portId", port.id)
"""


PLUGIN = ROOT / ".toolchain" / "pulumi-home" / "plugins" / f"resource-openstack-v{OPENSTACK[1]}" / "pulumi-resource-openstack"


def _needs() -> str | None:
    for name in ("pulumi", "pulumi-language-python"):
        if toolchain.binary(name) is None:
            return toolchain.missing(name)
    if not PLUGIN.is_file():
        return toolchain.missing("pulumi-resource-openstack")
    return netns.unavailable()


pytestmark = pytest.mark.skipif(_needs() is not None, reason=str(_needs()))


class Run:
    """The program's project, its stack, the cloud: each `pulumi` command inside the namespace."""

    def __init__(self, lab: netns.Lab, namespace: str, work: Path):
        self.lab, self.namespace, self.work = lab, namespace, work
        self.project = work / "project"
        self.project.mkdir()
        (self.project / "Pulumi.yaml").write_text("name: nodeports\nruntime: python\n")
        (self.project / "__main__.py").write_text(PROGRAM)
        (work / "state").mkdir()
        self.env = {**toolchain.pulumi_env(work / "home", work / "state", ROOT / "venv"), "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE}
        self.cloud_file = work / "cloud.json"
        self.pulumi("plugin", "install", "resource", *OPENSTACK, "--file", str(PLUGIN))
        self.pulumi("stack", "init", "dev")

    def pulumi(self, *args: str) -> str:
        done = self.lab.run(self.namespace, ["pulumi", *args, "--non-interactive"], cwd=self.project, env=self.env, timeout=300)
        assert done.returncode == 0, f"pulumi {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done.stdout

    def up(self, settings: dict[str, str]) -> None:
        (self.project / "settings.json").write_text(json.dumps(settings))
        self.pulumi("up", "--yes", "--skip-preview")

    def preview_steps(self, settings: dict[str, str]) -> dict[str, str]:
        (self.project / "settings.json").write_text(json.dumps(settings))
        steps = json.loads(self.pulumi("preview", "--json", "--show-sames"))["steps"]
        return {step["urn"].rsplit("::", 1)[1]: step["op"] for step in steps if "::pulumi:providers:" not in step["urn"] and "::pulumi:pulumi:Stack::" not in step["urn"]}

    def cloud(self) -> dict:
        return json.loads(self.cloud_file.read_text())

    def port(self, network: str = "net-1") -> dict:
        (only,) = [port for port in self.cloud()["ports"].values() if port["network_id"] == network]
        return only

    def edit_port(self, **changes) -> None:
        """What a controller of the cluster does to the node's port, straight in the cloud."""
        state = self.cloud()
        port_id = self.port()["id"]
        for key, extend in changes.items():
            state["ports"][port_id][key] = state["ports"][port_id][key] + extend
        self.cloud_file.write_text(json.dumps(state))


@pytest.fixture
def run(tmp_path):
    with netns.lab("ports") as lab:
        namespace = lab.namespace("engine")
        running = Run(lab, namespace, tmp_path)
        lab.start(namespace, [sys.executable, "-m", "tests.e2e.neutron", str(CLOUD_PORT), str(running.cloud_file)], cwd=ROOT)
        deadline = time.monotonic() + 30
        while not running.cloud_file.exists():
            assert time.monotonic() < deadline, "the cloud of ports did not start"
            time.sleep(0.1)
        yield running


def settings(**openstack) -> dict[str, str]:
    return with_section(stack_config("dev"), "openstack", **openstack) if openstack else stack_config("dev")


def test_refresh_then_up_keeps_the_egress_ip_and_the_load_balancers_group(run):
    run.up(settings())
    made = run.port()
    assert made["allowed_address_pairs"] == [{"ip_address": "10.0.0.7"}] and made["security_groups"] == ["sg-worker"]
    run.edit_port(allowed_address_pairs=[EGRESS_IP], security_groups=[LB_GROUP])
    run.pulumi("refresh", "--yes", "--skip-preview")
    assert run.preview_steps(settings()) == {"nodes": "same", "ocp4-workers-worker-0-port": "same"}
    run.up(settings())
    kept = run.port()
    assert kept["allowed_address_pairs"] == [{"ip_address": "10.0.0.7"}, EGRESS_IP]
    assert kept["security_groups"] == ["sg-worker", LB_GROUP]


def test_an_edit_of_the_additional_groups_keeps_the_load_balancers_group(run):
    run.up(settings())
    run.edit_port(allowed_address_pairs=[EGRESS_IP], security_groups=[LB_GROUP])
    run.pulumi("refresh", "--yes", "--skip-preview")
    run.up(settings(additionalSecurityGroupIds=[ADDED]))
    assert sorted(run.port()["security_groups"]) == sorted(["sg-worker", LB_GROUP, ADDED])
    run.up(settings(additionalSecurityGroupIds=[OTHER]))
    assert sorted(run.port()["security_groups"]) == sorted(["sg-worker", LB_GROUP, OTHER])
    run.up(settings())
    port = run.port()
    assert sorted(port["security_groups"]) == sorted(["sg-worker", LB_GROUP])
    assert port["allowed_address_pairs"] == [{"ip_address": "10.0.0.7"}, EGRESS_IP]


def test_a_port_on_an_additional_network_is_made_as_the_nodes_own(run):
    run.up(settings(additionalNetworkIds=[NETWORK]))
    own, extra = run.port(), run.port(NETWORK)
    assert extra["name"] == own["name"] == "ocp4-x7k2p-worker-0"
    assert extra["tags"] == own["tags"] == ["openshiftClusterID=ocp4-x7k2p"]
    assert extra["security_groups"] == own["security_groups"] == ["sg-worker"]
    (made,) = [r["body"]["port"] for r in run.cloud()["requests"] if r["method"] == "POST" and r["body"].get("port", {}).get("network_id") == NETWORK]
    assert "fixed_ips" not in made and made.get("allowed_address_pairs", []) == []  # Neutron gives it an address of that network
