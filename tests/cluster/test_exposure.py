"""The world measured, not spelt (issue 42, item 3): cluster/exposure.py counts the public space a
source list admits, and the program refuses a key whose sources, added up, open a port other than
TCP 6443, 80, 443 to more than a /8 of it, before any resource (the pack's side:
tests/policy/test_guard.py)."""

from __future__ import annotations

import pulumi
import pytest

from cluster.exposure import network, public_addresses, too_wide, world_port
from tests.conftest import run_recording, stack_config, with_section

DEV = stack_config("dev")
EVERY_UNICAST = ["0.0.0.0/1", "128.0.0.0/2", "192.0.0.0/3"]


def wide(*sources: str) -> list[str]:
    return too_wide([network(source) for source in sources])


@pytest.mark.parametrize(
    "sources",
    [EVERY_UNICAST, ["0.0.0.0/1"], ["0.0.0.0/0"], ["128.0.0.0/2"], ["11.0.0.0/9", "11.128.0.0/9", "12.0.0.0/24"], ["::/0"], ["2000::/3"], ["2a01::/31"]],
)
def test_the_world_and_more_than_a_slash_8_of_it_are_too_wide(sources):
    assert wide(*sources) != []


@pytest.mark.parametrize(
    "sources",
    [
        ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"],  # private
        ["100.64.0.0/10", "169.254.0.0/16", "224.0.0.0/4", "240.0.0.0/4", "127.0.0.0/8", "0.0.0.0/8"],
        ["11.0.0.0/9"],  # a /9 of public space
        ["11.0.0.0/8"],  # a /8: the widest allowed
        ["10.0.0.0/7"],  # 10/8 private, 11/8 public
        ["2001:db8:1::/48"],
        ["2a01:4f8:c0c::/48"],
        ["2a01:4f8::/32"],
        ["fc00::/7", "fe80::/10", "ff00::/8"],  # ULA, link-local, multicast
        [],
    ],
)
def test_private_space_and_up_to_a_slash_8_of_public_space_pass(sources):
    assert wide(*sources) == []


def test_what_is_counted():
    counted = public_addresses([network(cidr) for cidr in EVERY_UNICAST])
    # 224/3 is multicast and reserved; of the rest, 0/8, 10/8, 100.64/10, 127/8, 169.254/16,
    # 172.16/12, 192.0.0/24, 192.0.2/24, 192.168/16, 198.18/15, 198.51.100/24, 203.0.113/24 go.
    assert counted == {4: 3_702_258_688, 6: 0}
    assert counted == public_addresses([network("0.0.0.0/0")])
    assert wide(*EVERY_UNICAST) == ["3,702,258,688 public IPv4 addresses, more than a /8 (16,777,216)"]
    # ::/0 holds the translators' and tunnels' prefixes: IPv4's world through them, and every /32 but the tunnels'.
    assert wide("::/0") == [
        "3,702,258,688 public IPv4 addresses (IPv4 clients through ::/0: NAT64/SIIT, Teredo, 6to4), more than a /8 (16,777,216)",
        "536,801,278 /32s of public IPv6 space, more than one /32",
    ]
    # Overlapping sources count once.
    assert public_addresses([network("11.0.0.0/9"), network("11.0.0.0/10")]) == {4: 2**23, 6: 0}


@pytest.mark.parametrize(
    ("protocol", "low", "high", "world"),
    [("tcp", 6443, 6443, True), ("tcp", 80, 80, True), ("tcp", 443, 443, True), ("icmp", 0, 65535, True),
     ("tcp", 22, 22, False), ("udp", 443, 443, False), ("tcp", 80, 443, False), (None, 443, 443, False)],
)
def test_the_ports_open_to_the_world(protocol, low, high, world):
    assert world_port(protocol, low, high) is world


def _refusal(**openstack) -> str:
    recorded, error = run_recording(with_section(DEV, "openstack", **openstack))
    assert isinstance(error, pulumi.RunError), error
    assert recorded.resources == []
    return str(error)


@pytest.mark.parametrize("sources", [EVERY_UNICAST, ["0.0.0.0/1"], ["0.0.0.0/0"]])
def test_node_ports_open_to_the_world_stop_the_program_before_any_resource(sources):
    message = _refusal(nodePortAllowedCidrs=sources)
    [line] = [line.strip() for line in message.splitlines() if "nodePortAllowedCidrs" in line]
    assert line.startswith(f"ocp:openstack.nodePortAllowedCidrs: [{', '.join(sources)}] admits ")
    assert line.endswith(
        "public IPv4 addresses, more than a /8 (16,777,216) to TCP 30000-32767 and UDP 30000-32767: only TCP 6443, 80, 443 and "
        "ICMP may be open that wide (the policy pack refuses it too). Name your clients' networks, e.g. nodePortAllowedCidrs: "
        "[203.0.113.0/24], or leave nodePortAllowedCidrs out (the machine network only)"
    )


@pytest.mark.parametrize("sources", [["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"], ["11.0.0.0/9"], ["203.0.113.0/24", "11.0.0.0/9"]])
def test_node_ports_from_private_space_or_a_slash_9_are_made(sources):
    recorded, error = run_recording(with_section(DEV, "openstack", nodePortAllowedCidrs=sources))
    assert error is None, error
    rules = {r.name for r in recorded.resources if r.type == "openstack:networking/secGroupRule:SecGroupRule"}
    for source in sources:
        assert f"ocp4-security-master-tcp-30000-32767-{source.replace('/', '_')}" in rules


def test_the_api_and_ingress_may_stay_open_to_the_world():
    """They open only TCP 6443, 80 and 443, which clients reach from anywhere."""
    recorded, error = run_recording(with_section(DEV, "openstack", apiAllowedCidrs=["0.0.0.0/0"], ingressAllowedCidrs=EVERY_UNICAST))
    assert error is None, error


def test_a_public_machine_network_counts_with_the_node_port_sources():
    """The machine network is always admitted beside them (cluster/firewall.py), and the pack adds it up too."""
    config = {**with_section(DEV, "openstack", nodePortAllowedCidrs=["12.0.0.0/8"]), "ocp:machineNetwork": "11.0.0.0/16"}
    recorded, error = run_recording(config)
    assert isinstance(error, pulumi.RunError) and recorded.resources == []
    assert "ocp:openstack.nodePortAllowedCidrs: [12.0.0.0/8] with ocp:machineNetwork 11.0.0.0/16 admits 16,842,752 public IPv4" in str(error)
    assert run_recording(with_section(DEV, "openstack", nodePortAllowedCidrs=["12.0.0.0/8"]))[1] is None


# Issue 49, item 6: IPv6 through which IPv4 clients arrive is measured as that IPv4.
@pytest.mark.parametrize(
    ("source", "carrier"),
    [
        ("64:ff9b::/96", "NAT64/SIIT"),  # RFC 6052: every IPv4 client behind the translator
        ("64:ff9b::/64", "NAT64/SIIT"),
        ("64:ff9b:1::/48", "NAT64/SIIT"),  # RFC 8215 local use: any embedding
        ("64:ff9b:1:2::/96", "NAT64/SIIT"),
        ("64:ff9b::800:0/101", "NAT64/SIIT"),  # 8.0.0.0/5 behind the translator
        ("2001::/32", "Teredo"),  # any IPv4 host behind any NAT: the one /32 no longer passes
        ("2001:0:1::/48", "Teredo"),
        ("2002::/16", "6to4"),
        ("2002:b00::/24", "6to4"),  # what was 256 /32s is one IPv4 host's site per /48: the world all the same
    ],
)
def test_translators_and_tunnels_carry_ipv4s_world(source, carrier):
    [why] = wide(source)
    assert why.startswith("3,702,258,688 public IPv4 addresses") or "public IPv4 addresses" in why
    assert f"(IPv4 clients through {source}: {carrier})" in why


@pytest.mark.parametrize(
    ("source", "ipv4"),
    [("64:ff9b::b00:0/104", 16_777_216), ("64:ff9b::a00:0/104", 0), ("64:ff9b::808:808/128", 1), ("64:ff9b:1:2::c633:6400/120", 0)],
)
def test_a_translators_slice_is_the_ipv4_it_maps_to(source, ipv4):
    """11.0.0.0/8 through the well-known prefix is a /8 of public IPv4 (allowed); 10.0.0.0/8 and the
    documentation range 198.51.100.0/24 through a local one are none."""
    assert public_addresses([network(source)]) == {4: ipv4, 6: 0}
    assert wide(source) == []


def test_the_translated_space_adds_up_with_ipv4_sources():
    """11.0.0.0/8 written as IPv4 and 12.0.0.0/8 through NAT64: two /8s of IPv4 clients, too wide together."""
    assert wide("11.0.0.0/8") == [] and wide("64:ff9b::c00:0/104") == []
    assert wide("11.0.0.0/8", "64:ff9b::c00:0/104") == [
        "33,554,432 public IPv4 addresses (IPv4 clients through 64:ff9b::c00:0/104: NAT64/SIIT), more than a /8 (16,777,216)"
    ]
