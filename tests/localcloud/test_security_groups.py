"""The user's own security groups measured on the local cloud's real Neutron (issue 42, item 3): groups
the test makes in its project, read by the preflight's probe (cluster/cloud_probe.py, openstacksdk)
as the program runs it, judged by cluster/preflight_groups.py; and a real `pulumi preview` of the dev
stack naming the open one in ocp:masters.additionalSecurityGroupIds stops before any resource."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from cluster.addresses import plan_addresses
from cluster.cloud_facts import PROBE_COMMAND, PROBE_NETWORKS
from cluster.config import load_config
from cluster.preflight_groups import group_problems, parse_groups
from tests.conftest import ROOT, stack_config, with_section
from tests.localcloud.conftest import sdk
from tests.localcloud.engine import Stack, needs, structured
from tests.localcloud.openstack_stack import PLUGINS, openstack_stack

MISSING = "5b0c6f2e-8a43-4d1e-9f6a-2c7d8e9f0a1b"  # no group here
# Each a group the test makes: (name, [(protocol, low, high, ethertype, prefix), ...]).
GROUPS = {
    "open": [
        ("tcp", 22, 22, "IPv4", "0.0.0.0/1"), ("tcp", 22, 22, "IPv4", "128.0.0.0/2"), ("tcp", 22, 22, "IPv4", "192.0.0.0/3"),
        ("udp", 8080, 8080, "IPv6", "2000::/3"),
    ],
    "narrow": [
        ("tcp", 22, 22, "IPv4", "11.0.0.0/9"), ("tcp", 22, 22, "IPv4", "10.0.0.0/8"), ("tcp", 443, 443, "IPv4", "0.0.0.0/0"),
        ("tcp", 8443, 8443, "IPv6", "2a01:4f8:c0c::/48"), ("icmp", None, None, "IPv4", "0.0.0.0/0"),
    ],
}
MAKE = """
result = {}
for name, rules in groups.items():
    group = tenant.network.create_security_group(name=f"ocp-exposure-{name}")
    for protocol, low, high, ethertype, prefix in rules:
        tenant.network.create_security_group_rule(
            security_group_id=group.id, direction="ingress", protocol=protocol, port_range_min=low, port_range_max=high,
            ethertype=ethertype, remote_ip_prefix=prefix)
    result[name] = group.id
"""
DELETE = "for ref in refs: tenant.network.delete_security_group(ref, ignore_missing=True)"


@pytest.fixture(scope="module")
def groups(cloud) -> Iterator[dict[str, str]]:
    made = sdk(cloud, MAKE, groups=GROUPS)
    yield made  # type: ignore[misc]
    sdk(cloud, DELETE, refs=list(made.values()))  # type: ignore[union-attr]


def _config(groups: dict[str, str], *names: str) -> dict[str, str]:
    return with_section(stack_config("dev"), "masters", additionalSecurityGroupIds=[groups.get(name, MISSING) for name in names])


def test_the_probe_reads_each_groups_rules_and_the_preflight_refuses_the_open_one(cloud_env, groups):
    asked = {"networks": [], "subnets": [], "groups": [groups["open"], groups["narrow"], MISSING]}
    environment = {**cloud_env, "OS_CLOUD": "openstack", "OCP_PYTHON": sys.executable, PROBE_NETWORKS: json.dumps(asked)}
    done = subprocess.run(["bash", "-c", PROBE_COMMAND], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120)
    read = parse_groups(done.stdout)
    assert read is not None and set(read) == set(asked["groups"]), done.stdout[-2000:] + done.stderr[-2000:]
    assert read[MISSING] is None
    # Neutron's own two egress rules are read too, and not counted.
    assert len(json.loads(done.stdout)["groups"][groups["open"]]["rules"]) == len(GROUPS["open"]) + 2
    config = load_config(_config(groups, "open", "narrow", "missing"))
    assert plan_addresses(config) is not None
    found = list(group_problems(config, read, "", 'in cloud "openstack"'))
    assert [line.split(": ", 1)[0] for line in found] == ["ocp:masters.additionalSecurityGroupIds[0]", "ocp:masters.additionalSecurityGroupIds[2]"]
    assert (
        f"security group {groups['open']} (ocp-exposure-open) opens to the world tcp 22 from 0.0.0.0/1, 128.0.0.0/2, 192.0.0.0/3 "
        "(3,702,258,688 public IPv4 addresses, more than a /8 (16,777,216)); udp 8080 from 2000::/3 (3,702,258,688 public IPv4 "
        "addresses (IPv4 clients through 2000::/3: Teredo, 6to4), more than a /8 (16,777,216); 536,801,278 /32s of public IPv6 "
        "space, more than one /32)"
    ) in found[0]
    assert f"security group {MISSING} does not exist" in found[1]


@pytest.fixture(scope="module")
def stack(cloud, cloud_env, groups, tmp_path_factory) -> Iterator[Stack]:
    yield from openstack_stack("dev", tmp_path_factory.mktemp("dev-groups"), cloud, cloud_env)


@pytest.mark.skipif(needs(*PLUGINS) is not None, reason=str(needs(*PLUGINS)))
def test_a_real_preview_naming_an_open_group_stops_before_any_resource(stack, groups):
    masters = structured(stack.base["ocp:masters"])
    for names, refused in ((("open",), True), (("narrow",), False)):
        config = {**stack.base, "ocp:masters": json.dumps({**masters, "additionalSecurityGroupIds": [groups[n] for n in names]})}
        stack.write_config(config)
        try:
            done = stack.pulumi("preview")
        finally:
            stack.write_config(stack.base)
        said = done.stdout + done.stderr
        if refused:
            assert done.returncode != 0
            assert f"ocp:masters.additionalSecurityGroupIds[0]: security group {groups['open']} (ocp-exposure-open) opens to the world tcp 22" in said
        else:
            assert done.returncode == 0, said[-4000:]
            assert "opens to the world" not in said
