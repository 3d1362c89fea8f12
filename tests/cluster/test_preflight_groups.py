"""The user's own security groups on the nodes, measured by the preflight (cluster/preflight_groups.py):
the probe's line as cluster/cloud_probe.py prints it, read and judged by cluster.preflight.problems.
On the local cloud's real Neutron: tests/localcloud/test_security_groups.py."""

from __future__ import annotations

import dataclasses

import pytest

from cluster.addresses import plan_addresses
from cluster.cloud_facts import UNLIMITED
from cluster.cloud_probe import answer
from cluster.config import load_config
from cluster.preflight import Quota, problems
from cluster.preflight_groups import group_keys, parse_groups
from tests.cluster.test_preflight import facts
from tests.conftest import stack_config, with_section

OPEN, NARROW, GONE = "0e4d2c1b-7f6a-4b3c-8d9e-1a2b3c4d5e6f", "7c1d9e2f-3a4b-4c5d-8e6f-0a1b2c3d4e5f", "5b0c6f2e-8a43-4d1e-9f6a-2c7d8e9f0a1b"


def rule(id_: str, protocol: str | None, low: int | None, high: int | None, prefix: str | None, **more) -> dict:
    return {
        "id": id_, "direction": "ingress", "ethertype": "IPv6" if prefix and ":" in prefix else "IPv4", "protocol": protocol,
        "port_range_min": low, "port_range_max": high, "remote_ip_prefix": prefix, "remote_group_id": None,
        "remote_address_group_id": None, **more,
    }


GROUPS = {
    OPEN: {"id": OPEN, "name": "jump", "rules": [
        rule("r1", "tcp", 22, 22, "0.0.0.0/1"),
        rule("r2", "tcp", 22, 22, "128.0.0.0/2"),
        rule("r3", "tcp", 22, 22, "192.0.0.0/3"),
        rule("r4", "tcp", 443, 443, "0.0.0.0/0"),  # the world's port
    ]},
    NARROW: {"id": NARROW, "name": "office", "rules": [
        rule("n1", "tcp", 22, 22, "203.0.113.0/24"),
        rule("n2", None, None, None, "10.0.0.0/8"),
        rule("n3", "udp", 30000, 32767, "11.0.0.0/9"),
        rule("n4", "tcp", 8443, 8443, "2001:db8:1::/48"),
        rule("n5", "tcp", 8443, 8443, "2a01:4f8:c0c::/48"),
        rule("n6", "icmp", None, None, None),  # no prefix: anyone, ICMP
        rule("n7", None, None, None, None, remote_group_id="6d2e"),  # a group's members
        rule("n8", None, None, None, None, direction="egress"),
    ]},
    GONE: None,
}
LINE = answer(["standard-attr-tag"], None, {}, {}, GROUPS)
QUOTAS = {name: Quota(UNLIMITED) for name in ("instances", "cores", "ram", "ports", "security_groups", "security_group_rules", "volumes", "gigabytes", "floating_ips", "server_groups", "server_group_members")}


def verdict(config: dict[str, str], groups=None, failure: str = "") -> list[str]:
    c = load_config(config)
    read = dataclasses.replace(facts(QUOTAS), security_groups=groups, probe_failure=failure)
    return [p for p in problems(c, plan_addresses(c), read) if "security group" in p]


def test_every_key_that_names_a_group_of_the_users_is_read():
    config = with_section(with_section(stack_config("dev"), "masters", additionalSecurityGroupIds=[OPEN]), "workers", additionalSecurityGroupIds=[NARROW])
    config = with_section(config, "openstack", additionalSecurityGroupIds=[GONE], additionalNetworks=[{"network": "storage", "securityGroups": [NARROW]}])
    assert group_keys(load_config(config)) == (
        ("ocp:openstack.additionalSecurityGroupIds[0]", GONE),
        ("ocp:masters.additionalSecurityGroupIds[0]", OPEN),
        ("ocp:workers.additionalSecurityGroupIds[0]", NARROW),
        ("ocp:openstack.additionalNetworks[0].securityGroups[0]", NARROW),
    )


def test_a_group_open_to_the_world_or_missing_stops_the_preflight_and_a_narrow_one_passes():
    config = with_section(with_section(stack_config("dev"), "masters", additionalSecurityGroupIds=[OPEN, NARROW]), "workers", additionalSecurityGroupIds=[GONE])
    assert verdict(config, parse_groups(LINE)) == [
        f"ocp:masters.additionalSecurityGroupIds[0]: security group {OPEN} (jump) opens to the world tcp 22 from 0.0.0.0/1, "
        "128.0.0.0/2, 192.0.0.0/3 (3,702,258,688 public IPv4 addresses, more than a /8 (16,777,216)): only TCP 6443, 80, 443 "
        f"and ICMP may be open that wide on the nodes. Narrow its rules to your clients' networks (`openstack security group rule list {OPEN}`), "
        "or name another group",
        f"ocp:workers.additionalSecurityGroupIds[0]: security group {GONE} does not exist in cloud \"openstack\" (or this project "
        "cannot see it): name one from `openstack security group list`",
    ]


@pytest.mark.parametrize(
    ("rules", "refused"),
    [
        ([rule("a", "tcp", 22, 22, "0.0.0.0/1")], True),
        ([rule("a", "udp", 1, 65535, "::/0")], True),
        ([rule("a", "tcp", 8080, 8080, "2000::/3")], True),
        ([rule("a", None, None, None, None)], True),  # every protocol from anyone (Neutron's default egress, as ingress)
        ([rule("a", "tcp", 8080, 8080, "2a01:4f8:c0c::/48")], False),
        ([rule("a", "tcp", 22, 22, "11.0.0.0/9"), rule("b", "tcp", 22, 22, "11.128.0.0/9")], False),  # a /8
        ([rule("a", "tcp", 22, 22, "11.0.0.0/9"), rule("b", "tcp", 1, 1024, "12.0.0.0/8")], True),  # added up
        ([rule("a", "tcp", 6443, 6443, "0.0.0.0/0"), rule("b", "tcp", 80, 80, "::/0")], False),
        ([rule("a", "tcp", 22, 22, "172.16.0.0/12"), rule("b", "tcp", 22, 22, "192.168.0.0/16")], False),
    ],
)
def test_rules_of_a_group_are_added_up_per_protocol_and_port(rules, refused):
    config = with_section(stack_config("dev"), "masters", additionalSecurityGroupIds=[OPEN])
    groups = parse_groups(answer([], None, None, None, {OPEN: {"id": OPEN, "name": "g", "rules": rules}}))
    assert bool(verdict(config, groups)) is refused


def test_groups_the_probe_could_not_read_are_said_and_not_asked_are_not_judged():
    config = with_section(stack_config("dev"), "masters", additionalSecurityGroupIds=[OPEN])
    [said] = verdict(config, None, "no openstacksdk in /usr/bin/python3")
    assert said.startswith(f"ocp:masters.additionalSecurityGroupIds[0]: the rules of security group {OPEN} could not be read in cloud \"openstack\" (no openstacksdk")
    # A probe line without groups (the offline plan's described cloud): nothing to judge.
    assert parse_groups(answer([], None)) is None and verdict(config, None) == []
    assert verdict(stack_config("dev"), parse_groups(LINE)) == []
