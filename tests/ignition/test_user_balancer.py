"""ocp:loadBalancer: UserManaged on the nodes this program configures (standalone OpenStack,
libvirt): no keepalived, haproxy or API VIP redirect anywhere, CoreDNS and the resolv.conf
handling as before, its records still naming the VIPs (the user's balancer's addresses)."""

from __future__ import annotations

import json

import pytest

from cluster.addresses import plan_addresses
from cluster.config import load_config
from ignition.networking import (
    COREFILE,
    HAPROXY_CFG,
    KEEPALIVED_CONF,
    KEEPALIVED_RUN,
    KEEPALIVED_RUN_CONFIG,
    MANIFESTS,
    PREPENDER_PATH,
    PREPENDER_SERVICE,
    REDIRECT_CONFIG,
    REDIRECT_SCRIPT,
    REDIRECT_UNIT,
    node_additions,
    node_images,
)
from tests.conftest import ignition_validate, run, stack_config, with_section
from tests.ignition.test_networking import IDENTITY, PAYLOAD, resolve, standalone_config
from tools.plan import node_outputs

# Everything this program's VIP handling puts on a node.
VIP_FILES = {
    KEEPALIVED_CONF,
    KEEPALIVED_RUN,
    KEEPALIVED_RUN_CONFIG,
    f"{MANIFESTS}/keepalived.yaml",
    HAPROXY_CFG,
    f"{MANIFESTS}/haproxy.yaml",
    REDIRECT_SCRIPT,
    REDIRECT_CONFIG,
}


def user_managed(config: dict[str, str]) -> dict[str, str]:
    """A stack with the user's own balancer (and no floating IPs, which the config then refuses)."""
    config = {**config, "ocp:loadBalancer": "UserManaged"}
    if "ocp:openstack" in config:
        config = with_section(config, "openstack", apiFloatingIp="none", ingressFloatingIp="none")
    return config


def test_no_node_gets_keepalived_haproxy_or_the_redirect_and_every_node_keeps_its_dns():
    managed = standalone_config()
    config = load_config(user_managed(stack_config("standalone")))
    plan = plan_addresses(config)
    assert plan == plan_addresses(managed)  # the same addresses, VIPs included
    for node in plan.nodes:
        additions = node_additions(config, plan, node, IDENTITY)
        paths = {item.path for item in additions.files}
        assert not paths & VIP_FILES, node.name
        assert [unit.name for unit in additions.units] == [PREPENDER_PATH, PREPENDER_SERVICE], node.name
        assert REDIRECT_UNIT not in {unit.name for unit in additions.units}
        assert {path for path in paths if path.startswith(MANIFESTS)} == {f"{MANIFESTS}/coredns.yaml"}
        # What stays is what the managed cluster's node gets, byte for byte.
        before = {item.path: item for item in node_additions(managed, plan, node, IDENTITY).files}
        assert all(before[item.path] == item for item in additions.files), node.name
        corefile = next(item.contents.decode() for item in additions.files if item.path == COREFILE)
        assert resolve(corefile, "api.ocp4.osd2019.local.") == "10.0.0.5"
        assert resolve(corefile, "api-int.ocp4.osd2019.local.") == "10.0.0.5"
        assert resolve(corefile, "console-openshift-console.apps.ocp4.osd2019.local.") == "10.0.0.7"


def test_nodes_need_only_the_coredns_image():
    config = load_config(user_managed(stack_config("standalone")))
    plan = plan_addresses(config)
    for node in (plan.bootstrap, plan.masters[0], plan.workers[0]):
        assert node_images(config, node, IDENTITY) == {"coredns": (PAYLOAD["coredns"], "payload")}


@pytest.mark.parametrize("stack", ["standalone", "kvm"])
def test_every_nodes_ignition_is_valid_and_fetches_its_role_through_the_api_vip(stack, tmp_path):
    """The whole Ignition of every node, as the program makes it: valid, free of the VIP
    handling, and the pointer still `http://<API VIP>:22624/config/<role>`, which the user's
    balancer fronts."""
    nodes = node_outputs(run(user_managed(stack_config(stack)), stack=stack))
    assert len(nodes) == 6
    api_vip = {"standalone": "10.0.0.5", "kvm": "192.168.126.5"}[stack]
    for node in nodes:
        assert node.ignition is not None
        paths = {entry["path"] for entry in node.ignition["storage"]["files"]}
        units = {unit["name"] for unit in node.ignition.get("systemd", {}).get("units", [])}
        assert not paths & VIP_FILES and REDIRECT_UNIT not in units, node.hostname
        assert {COREFILE, f"{MANIFESTS}/coredns.yaml"} <= paths and PREPENDER_SERVICE in units, node.hostname
        result = ignition_validate(json.dumps(node.ignition), tmp_path, f"{node.hostname}.ign")
        assert result.returncode == 0, f"{node.hostname}: {result.stdout}{result.stderr}"
        if "bootstrap" not in node.hostname:
            role = "master" if "master" in node.hostname else "worker"
            merge = json.loads(node.user_data)["ignition"]["config"]["merge"]
            assert merge == [{"source": f"http://{api_vip}:22624/config/{role}"}], node.hostname
