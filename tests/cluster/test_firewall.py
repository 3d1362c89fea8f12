"""The firewall matrix and its exposure table, as pure functions (the resources: tests/components/test_openstack.py)."""

from __future__ import annotations

import subprocess
import sys
from ipaddress import IPv4Network

import pytest

from cluster.addresses import plan_addresses
from cluster.config import load_config
from cluster.config_rules_openstack import OPENED_BY
from cluster.firewall import WORLD, exposure_table, security_groups
from tests.conftest import ROOT, stack_config, with_helper, with_section

MACHINE = IPv4Network("10.0.0.0/16")


def groups_of(config_dict):
    config = load_config(config_dict)
    return config, plan_addresses(config), security_groups(config, plan_addresses(config))


SHAPES = {
    "dev": stack_config("dev"),
    "compact": with_section(stack_config("dev"), "workers", count=0),
    "restricted": with_section(
        stack_config("dev"),
        "openstack",
        apiAllowedCidrs=["198.51.100.0/24", "10.0.0.0/16"],
        ingressAllowedCidrs=[],
        nodePortAllowedCidrs=["192.0.2.0/28"],
    ),
    "helper inside": with_section(
        with_section(with_helper(stack_config("dev")), "bootstrap", helper={"floatingIp": False}), "openstack", sshAllowedCidr=None
    ),
    "no bootstrap": with_section(stack_config("dev"), "bootstrap", enabled=False),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_every_rule_beyond_the_machine_network_says_why(shape):
    _, _, groups = groups_of(SHAPES[shape])
    for group, rules in groups.items():
        for rule in rules:
            beyond = not rule.source.subnet_of(MACHINE)
            assert bool(rule.why) == beyond, (group, rule)


@pytest.mark.parametrize("shape", SHAPES)
def test_rule_keys_are_unique_in_each_group(shape):
    # Each key names one resource: two rules with one key would be one resource twice.
    _, _, groups = groups_of(SHAPES[shape])
    for rules in groups.values():
        keys = [rule.key for rule in rules]
        assert len(keys) == len(set(keys))


def test_restricted_sources_replace_the_world_and_the_machine_network_is_not_repeated():
    config, plan, _ = groups_of(SHAPES["restricted"])
    table = {(row.group, row.rule, row.source) for row in exposure_table(config, plan)}
    assert table == {
        ("master", "icmp", "0.0.0.0/0"),
        ("master", "tcp 6443", "198.51.100.0/24"),
        ("master", "tcp 30000-32767", "192.0.2.0/28"),
        ("master", "udp 30000-32767", "192.0.2.0/28"),
        ("worker", "icmp", "0.0.0.0/0"),
        ("worker", "tcp 30000-32767", "192.0.2.0/28"),
        ("worker", "udp 30000-32767", "192.0.2.0/28"),
        ("bootstrap", "tcp 22", "192.168.122.0/24"),
    }


def test_a_helper_without_floating_ip_is_reached_from_the_machine_network_only():
    config, plan, groups = groups_of(SHAPES["helper inside"])
    assert {(r.ports, str(r.source)) for r in groups["helper"]} == {("tcp 8080", "10.0.0.10/32"), ("tcp 22", "10.0.0.0/16")}
    assert all(row.group not in ("helper", "bootstrap") for row in exposure_table(config, plan))
    # The master group admits SSH from the machine network to the bootstrap already: no group of its own.
    assert "bootstrap" not in groups


def test_the_bootstrap_admits_ssh_from_ssh_allowed_cidr_alone_for_the_gather():
    config, plan, groups = groups_of(SHAPES["restricted"])
    assert [(r.ports, str(r.source)) for r in groups["bootstrap"]] == [("tcp 22", "192.168.122.0/24")]
    # Not through the master group, which every master carries.
    assert not any(r.port_min == 22 and str(r.source) == "192.168.122.0/24" for r in groups["master"])


def test_no_bootstrap_no_helper_group():
    config, plan, groups = groups_of(SHAPES["no bootstrap"])
    assert set(groups) == {"master", "worker", "ingress"}
    assert all(row.group not in ("helper", "bootstrap") for row in exposure_table(config, plan))


def test_the_world_reaches_nothing_but_icmp_api_and_ingress_on_the_dev_stack():
    _, _, groups = groups_of(SHAPES["dev"])
    world = {(group, rule.ports) for group, rules in groups.items() for rule in rules if rule.source == WORLD}
    assert world == {
        ("master", "icmp"), ("master", "tcp 6443"), ("worker", "icmp"), ("ingress", "tcp 80"), ("ingress", "tcp 443")
    }


def test_libvirt_has_no_groups_and_an_empty_table():
    config = load_config(stack_config("kvm"))
    assert security_groups(config, plan_addresses(config)) == {}
    assert exposure_table(config, plan_addresses(config)) == []


def test_the_pure_core_imports_no_pulumi():
    code = (
        "import sys, cluster.config, cluster.addresses, cluster.firewall, cluster.stackfile, cluster.installer, "
        "cluster.day2, ignition.nodes; "
        "print(sorted(m for m in sys.modules if m == 'pulumi' or m.startswith('pulumi.') or m.startswith('pulumi_')))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_what_each_allowed_cidrs_key_opens_is_what_the_config_rules_measure():
    """cluster/config_rules_openstack.py OPENED_BY measures each key by the ports it opens here."""
    sources = {key: f"{11 + i}.0.0.0/24" for i, key in enumerate(OPENED_BY)}
    _, _, groups = groups_of(with_section(stack_config("dev"), "openstack", **{key: [cidr] for key, cidr in sources.items()}))
    for key, cidr in sources.items():
        opened = {(r.protocol, r.port_min, r.port_max) for rules in groups.values() for r in rules if str(r.source) == cidr}
        assert opened == set(OPENED_BY[key]), key
