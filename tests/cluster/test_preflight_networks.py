"""cluster.preflight's network, image and quota verdicts, pure: ocp:openstack.existingNetwork and the
extra networks as the probe read them, images several share a name, and the network, subnet and
router the stack makes, from facts given by hand."""

from __future__ import annotations

import dataclasses
import json

import pytest

from cluster.addresses import plan_addresses
from cluster.cloud_facts import PROBE_NETWORKS, GlanceImage, Network, Subnet, machine_api_images, parse_probe
from cluster.cloud_probe import NETWORKS_VARIABLE, answer
from cluster.config import load_config
from cluster.preflight import (
    CloudFacts,
    Existing,
    Flavor,
    Image,
    Quota,
    boot_images,
    footprint,
    image_warnings,
    mtu_problem,
    network_warnings,
    problems,
    wanted,
)
from cluster.preflight_networks import derived_families
from tests.conftest import stack_config, with_section

OURS, THEIRS = "project-ours", "project-theirs"
NET, STORAGE, VLAN, L2 = (f"{n}1111111-2222-4333-8444-555555555555" for n in "abcd")
SUBNET, STORAGE_SUBNET, ELSEWHERE = (f"{n}1111111-2222-4333-8444-666666666666" for n in "abc")
NETWORKS = {
    "nodes": (Network(NET, "nodes", True, (SUBNET,), 1450, OURS),),
    NET: (Network(NET, "nodes", True, (SUBNET,), 1450, OURS),),
    "storage": (Network(STORAGE, "storage", True, (STORAGE_SUBNET,), 9000, OURS),),
    "vlan": (Network(VLAN, "vlan", False, (), 1500, THEIRS),),
    "l2": (Network(L2, "l2", True, (), 1500, OURS),),
    VLAN: (Network(VLAN, "vlan", False, (), 1500, THEIRS),),
}
SUBNETS = {
    "nodes-v4": (Subnet(SUBNET, "nodes-v4", NET, "10.0.0.0/16"),),
    SUBNET: (Subnet(SUBNET, "nodes-v4", NET, "10.0.0.0/16"),),
    "storage-v4": (Subnet(STORAGE_SUBNET, "storage-v4", STORAGE, "10.9.0.0/24"),),
}


def facts(networks=None, subnets=None, **changes) -> CloudFacts:
    base = CloudFacts(
        cloud="openstack",
        flavors={"master": Flavor(4, 16384, 40), "worker": Flavor(2, 8192, 40)},
        images={"rhcos": Image(True, ("image-1",))},
        external_networks={"external": True},
        floating_ips={},
        compute_zones=("nova",),
        volume_zones=("nova",),
        volume_types=(),
        network_extensions=("ip_allocation", "standard-attr-tag"),
        quotas={},
        project=OURS,
        networks={**NETWORKS, **(networks or {})},
        subnets={**SUBNETS, **(subnets or {})},
    )
    return dataclasses.replace(base, **changes)


def verdict(stack: str = "dev", cloud: CloudFacts | None = None, **openstack) -> list[str]:
    config = load_config(with_section(stack_config(stack), "openstack", **openstack))
    return problems(config, plan_addresses(config), cloud or facts())


def test_a_network_without_a_subnet_needs_neutrons_ip_allocation_for_nova_to_boot_on_it():
    """Nova takes a port without an address only where Neutron shows its ip_allocation `none` (the
    segments plugin's extension): else "Port ... requires a FixedIP", seen against the local cloud."""
    without = facts(network_extensions=("standard-attr-tag",))
    assert verdict(cloud=without, additionalNetworks=[{"network": "l2", "portSecurity": False}]) == [
        'ocp:openstack.additionalNetworks[0].network: network "l2" has no subnet, and Nova boots a server on a port without an '
        "address only where Neutron shows the port's ip_allocation (its ip_allocation extension, which the segments service "
        'plugin brings) in cloud "openstack": Nova would refuse every node ("requires a FixedIP"). Give the network a subnet, '
        "or ask the cloud's operators to enable the segments plugin"
    ]
    assert verdict(cloud=without, additionalNetworks=[{"network": "storage"}]) == []  # a subnet: addresses as ever


def test_a_given_subnets_dhcp_pool_must_hold_none_of_the_planned_addresses():
    pooled = {"nodes-v4": (Subnet(SUBNET, "nodes-v4", NET, "10.0.0.0/16", (("10.0.0.2", "10.0.0.25"), ("10.0.200.0", "10.0.200.99"))),)}
    found = verdict(cloud=facts(subnets=pooled), existingNetwork={"networkId": "nodes", "subnetId": "nodes-v4"})
    assert len(found) == 1 and found[0].startswith(
        'ocp:openstack.existingNetwork.subnetId: subnet "nodes-v4" hands out 10.0.0.2-10.0.0.25 by DHCP, which holds addresses '
        "this stack plans for itself: 10.0.0.5 (the API VIP), 10.0.0.7 (the Ingress VIP), 10.0.0.10 (ocp4-bootstrap) and 6 more. "
    ), found
    clear = {"nodes-v4": (Subnet(SUBNET, "nodes-v4", NET, "10.0.0.0/16", (("10.0.200.0", "10.0.200.99"),)),)}
    assert verdict(cloud=facts(subnets=clear), existingNetwork={"networkId": "nodes", "subnetId": "nodes-v4"}) == []


def test_networks_that_fit_pass():
    assert verdict(existingNetwork={"networkId": "nodes", "subnetId": "nodes-v4"}) == []
    assert verdict(existingNetwork={"networkId": NET, "subnetId": SUBNET}, additionalNetworks=[{"network": "storage"}]) == []
    # A network without port security or without a subnet carries ports without groups.
    assert verdict(additionalNetworks=[{"network": "vlan", "portSecurity": False}, {"network": "l2", "portSecurity": False}]) == []


def test_port_security_off_needs_portsecurity_false():
    assert verdict(additionalNetworks=[{"network": "storage"}, {"network": "vlan", "pools": ["workers"]}]) == [
        'ocp:openstack.additionalNetworks[1].network: network "vlan" has port security off, and the entry has portSecurity '
        "true (the default), so its ports carry security groups: Neutron would refuse the node's security groups on its "
        "ports (PortSecurityAndIPRequiredForSecurityGroups): write portSecurity: false for it (its ports carry no groups, and go to the workers only)"
    ]
    # additionalNetworkIds has no portSecurity to write: the entry moves to additionalNetworks.
    (problem,) = verdict(additionalNetworkIds=[VLAN])
    assert problem.startswith(
        'ocp:openstack.additionalNetworkIds[0]: network "vlan" has port security off, and additionalNetworkIds gives its '
        "ports the node's security groups: Neutron would refuse"
    )
    assert problem.endswith("list it under ocp:openstack.additionalNetworks with portSecurity: false instead (its ports carry no groups, and go to the workers only)")
    # securityGroups: none asks for no groups: nothing for Neutron to refuse.
    assert verdict(additionalNetworks=[{"network": "vlan", "securityGroups": "none", "pools": ["workers"]}]) == []


def test_a_network_without_a_subnet_with_groups_is_warned_of():
    assert verdict(additionalNetworks=[{"network": "l2", "pools": ["workers"]}]) == []
    config = load_config(
        with_section(stack_config("dev"), "openstack", additionalNetworks=[{"network": "storage"}, {"network": "l2", "pools": ["workers"]}])
    )
    assert network_warnings(config, plan_addresses(config), facts()) == [
        'ocp:openstack.additionalNetworks[1].network: network "l2" has no subnet, and the entry has portSecurity true (the '
        "default), so its ports carry security groups: Neutron makes such a port with no address, and the groups' rules, "
        "which admit traffic by address, drop whatever else the network carries: write portSecurity: false for it (its "
        "ports carry no groups, and go to the workers only), unless that is meant"
    ]
    quiet = load_config(with_section(stack_config("dev"), "openstack", additionalNetworks=[{"network": "l2", "portSecurity": False}]))
    assert network_warnings(quiet, plan_addresses(quiet), facts()) == []


def test_a_name_matching_no_network_or_two():
    twins = (Network(STORAGE, "data", True, (STORAGE_SUBNET,), 1500, OURS), Network(L2, "data", True, (), 1500, OURS))
    found = verdict(cloud=facts({"data": twins, "nowhere": ()}), additionalNetworks=[{"network": "data"}, {"network": "nowhere"}])
    assert found == [
        f'ocp:openstack.additionalNetworks[0].network: 2 networks are named "data" in cloud "openstack" ({STORAGE}, {L2}): '
        "write the ID of the one meant",
        'ocp:openstack.additionalNetworks[1].network: network "nowhere" does not exist in cloud "openstack": name one from '
        "`openstack network list`",
    ]


def test_the_existing_network_and_subnet():
    missing = facts({"gone": ()}, {"gone-v4": ()})
    assert verdict(cloud=missing, existingNetwork={"networkId": "gone", "subnetId": "gone-v4"}) == [
        'ocp:openstack.existingNetwork.networkId: network "gone" does not exist in cloud "openstack": name one from `openstack network list`',
        'ocp:openstack.existingNetwork.subnetId: subnet "gone-v4" does not exist in cloud "openstack": name one from `openstack subnet list`',
    ]
    assert verdict(existingNetwork={"networkId": "nodes", "subnetId": "storage-v4"}) == [
        f'ocp:openstack.existingNetwork.subnetId: subnet "storage-v4" ({STORAGE_SUBNET}) is on network {STORAGE}, not on '
        f'network "nodes" ({NET}): name one of its subnets (`openstack subnet list --network {NET}`)'
    ]
    narrow = facts(subnets={"nodes-v4": (Subnet(SUBNET, "nodes-v4", NET, "10.0.0.0/24"),)})
    assert verdict(cloud=narrow, existingNetwork={"networkId": "nodes", "subnetId": "nodes-v4"}) == [
        'ocp:machineNetwork: 10.0.0.0/16 is not the CIDR of subnet "nodes-v4" (10.0.0.0/24), where the nodes\' addresses '
        "and the VIPs are planned: write machineNetwork: 10.0.0.0/24"
    ]
    # A subnet name two networks have: the one on the network named.
    twins = facts(subnets={"v4": (Subnet(ELSEWHERE, "v4", STORAGE, "10.0.0.0/16"), Subnet(SUBNET, "v4", NET, "10.0.0.0/16"))})
    assert verdict(cloud=twins, existingNetwork={"networkId": "nodes", "subnetId": "v4"}) == []
    assert verdict(cloud=twins, existingNetwork={"networkId": "l2", "subnetId": "v4"})[0] == (
        f'ocp:openstack.existingNetwork.subnetId: 2 subnets are named "v4" in cloud "openstack" ({ELSEWHERE}, {SUBNET}): '
        "write the ID of the one meant"
    )


def test_another_projects_network_is_refused_to_a_member():
    shared = facts({"shared": (Network(NET, "shared", True, (SUBNET,), 1450, THEIRS),)})
    (problem,) = verdict(cloud=shared, existingNetwork={"networkId": "shared", "subnetId": SUBNET})
    assert problem == (
        f'ocp:openstack.existingNetwork.networkId: network "shared" belongs to project {THEIRS}, not to this stack\'s ({OURS}): '
        "the nodes' ports on it take fixed addresses and address pairs, and in integrated mode the program tags it "
        "<infraID>-primaryClusterNetwork as the installer does, which Neutron's default policy allows only the network's "
        "owner or an admin. Ask the cloud's admin to create it in your project"
    )
    (problem,) = verdict("standalone", cloud=shared, existingNetwork={"networkId": "shared", "subnetId": SUBNET})
    assert "take fixed addresses and address pairs, which Neutron's default policy allows only" in problem and "tags" not in problem
    # An admin may.
    assert verdict(cloud=dataclasses.replace(shared, admin=True), existingNetwork={"networkId": "shared", "subnetId": SUBNET}) == []


def test_port_security_off_on_a_port_of_another_projects_network():
    theirs = facts({"provider": (Network(STORAGE, "provider", True, (STORAGE_SUBNET,), 1500, THEIRS),)})
    assert verdict(cloud=theirs, additionalNetworks=[{"network": "provider", "portSecurity": False}]) == [
        f'ocp:openstack.additionalNetworks[0].network: network "provider" belongs to project {THEIRS} and has port security '
        "on: portSecurity: false turns it off on each port, which Neutron's default policy allows only the network's owner "
        "or an admin. Ask its owner to turn it off on the network (`openstack network set --disable-port-security provider`), "
        "or write portSecurity: true"
    ]
    # With groups, a port on it is any member's to make; off on the network already, the port has none to turn off.
    assert verdict(cloud=theirs, additionalNetworks=[{"network": "provider"}]) == []
    assert verdict(additionalNetworks=[{"network": "vlan", "portSecurity": False}]) == []


def test_the_existing_network_needs_port_security():
    off = facts({"flat": (Network(NET, "flat", False, (SUBNET,), 1500, OURS),)})
    assert verdict("standalone", cloud=off, existingNetwork={"networkId": "flat", "subnetId": SUBNET}) == [
        'ocp:openstack.existingNetwork.networkId: network "flat" has port security off, and the nodes\' ports on it carry '
        "the cluster's security groups, which Neutron refuses there (PortSecurityAndIPRequiredForSecurityGroups): ask its "
        "owner to enable port security on it (`openstack network set --enable-port-security`), or name another network"
    ]


def test_mtu_under_what_ovn_kubernetes_needs():
    small = facts({"small": (Network(NET, "small", True, (SUBNET,), 1300, OURS),)})
    expected = (
        'ocp:openstack.existingNetwork.networkId: network "small" has MTU 1300, and OVN-Kubernetes needs at least 1380 on '
        "the nodes' network: its Geneve overlay takes 100 bytes of it and pods need IPv6's minimum of 1280. Ask the "
        "network's owner to raise it (`openstack network set --mtu 1380 small`) or name a network with a larger MTU"
    )
    assert verdict(cloud=small, existingNetwork={"networkId": "small", "subnetId": SUBNET}) == [expected]
    # The lead's call for the network the stack makes, once its MTU is known.
    assert mtu_problem("ocp:openstack.existingNetwork.networkId", "small", 1300) == expected
    assert mtu_problem("k", "n", 1380) is None and mtu_problem("k", "n", None) is None
    # An extra network carries no Geneve: its MTU is its own business.
    assert verdict(cloud=small, additionalNetworks=[{"network": "small"}]) == []


def test_a_probe_that_failed_leaves_the_networks_unread():
    unread = facts(networks=None, subnets=None, probe_failure="no openstacksdk")
    unread = dataclasses.replace(unread, networks=None, subnets=None)
    (problem,) = verdict("standalone", cloud=unread, additionalNetworks=[{"network": "storage"}])
    assert problem.startswith('ocp:openstack.additionalNetworks[0].network: reading the networks in cloud "openstack" failed (no openstacksdk): ')
    # In integrated mode the probe's failure is said once, with the tag extension.
    found = verdict(cloud=dataclasses.replace(unread, network_extensions=None), additionalNetworks=[{"network": "storage"}])
    assert len(found) == 1 and "reading Neutron's extensions" in found[0]


def test_what_the_probe_is_asked_and_what_it_answers():
    config = load_config(
        with_section(stack_config("dev"), "openstack", existingNetwork={"networkId": "nodes", "subnetId": "nodes-v4"}, additionalNetworkIds=[STORAGE], additionalNetworks=[{"network": "vlan", "portSecurity": False}])
    )
    want = wanted(config, plan_addresses(config))
    assert (want.networks, want.subnets, want.probe) == (("nodes", STORAGE, "vlan"), ("nodes-v4",), True)
    assert wanted(*(lambda c: (c, plan_addresses(c)))(load_config(stack_config("standalone")))).probe is False
    assert PROBE_NETWORKS == NETWORKS_VARIABLE
    line = answer(["router"], None, {"vlan": [{"id": VLAN, "name": "vlan", "portSecurity": False, "subnets": [], "mtu": 1500, "project": THEIRS}]}, {"nodes-v4": []})
    probe = parse_probe(line)
    assert probe.networks == {"vlan": (Network(VLAN, "vlan", False, (), 1500, THEIRS),)} and probe.subnets == {"nodes-v4": ()}
    assert parse_probe(answer(["router"], None)).networks is None
    broken = parse_probe(json.dumps({"extensions": [], "hosts": None, "networks": {"x": [{"name": "no id"}]}}))
    assert broken.networks is None and "networks, subnets or images it cannot have read" in broken.failure


def test_of_two_images_of_one_name_the_newest_active_is_booted_and_said():
    config = load_config(stack_config("dev"))
    plan = plan_addresses(config)
    twins = facts(images={"rhcos": Image(True, ("image-new", "image-old"))})
    assert problems(config, plan, twins) == []
    assert boot_images(twins) == {"rhcos": "image-new"}
    assert image_warnings(config, plan, twins) == [
        'ocp:masters.image: 2 active images are named "rhcos" in cloud "openstack": the servers boot the newest, image-new '
        "(not image-old). Delete or rename the others (`openstack image set --name <new name> <ID>`) to make it the only one"
    ]
    assert image_warnings(config, plan, facts()) == [] and boot_images(facts(images={"rhcos": None})) == {}


@pytest.mark.parametrize(
    "openstack, counts",
    [
        ({}, (1, 1, 1)),
        ({"existingNetwork": {"networkId": NET, "subnetId": SUBNET}}, (0, 0, 0)),
        ({"existingNetwork": {"networkId": NET, "subnetId": SUBNET, "router": True}}, (0, 0, 1)),
    ],
)
def test_the_network_subnet_and_router_the_stack_makes_count(openstack, counts):
    config = load_config(with_section(stack_config("standalone"), "openstack", **openstack))
    plan = plan_addresses(config)
    flavors = {"master": Flavor(4, 16384, 40), "worker": Flavor(2, 8192, 40)}
    made = footprint(config, plan, flavors)
    assert (made["networks"], made["subnets"], made["routers"]) == counts
    none_left = {name: Quota(0) for name in ("networks", "subnets", "routers")}
    found = problems(config, plan, facts(quotas=none_left))
    assert len(found) == sum(counts)
    if counts[2]:
        assert (
            'ocp:openstack.cloud: the stack needs 1 routers and the network quota in cloud "openstack" allows 0: raise it '
            "(`openstack quota set --routers 1 <project>`) or make the stack smaller"
        ) in found


def test_extra_networks_count_a_port_per_node_of_their_pools():
    config = load_config(
        with_section(stack_config("dev"), "openstack", additionalNetworks=[{"network": "storage", "pools": ["workers"]}, {"network": "vlan", "portSecurity": False}])
    )
    flavors = {"master": Flavor(4, 16384, 40), "worker": Flavor(2, 8192, 40)}
    plain = footprint(load_config(stack_config("dev")), plan_addresses(config), flavors)["ports"]
    # storage: 2 workers; vlan, without port security: 2 workers (the masters only where said; the bootstrap never).
    assert footprint(config, plan_addresses(config), flavors)["ports"] == plain + 2 + 2
    said = with_section(stack_config("dev"), "openstack", additionalNetworks=[{"network": "vlan", "portSecurity": False, "unfilteredMasterPorts": True}])
    assert footprint(load_config(said), plan_addresses(config), flavors)["ports"] == plain + 3 + 2
    # UserManaged: no VIP ports.
    given = with_section(stack_config("dev"), "openstack", existingNetwork={"networkId": NET, "subnetId": SUBNET}, apiFloatingIp="none", ingressFloatingIp="none")
    managed = load_config({**given, "ocp:loadBalancer": "UserManaged"})
    assert footprint(managed, plan_addresses(managed), flavors)["ports"] == 6
    assert footprint(managed, plan_addresses(managed), flavors, Existing(masters=3, workers=2, ports=5))["ports"] == 5


def test_a_router_to_a_given_network_holds_its_interfaces_port():
    flavors = {"master": Flavor(4, 16384, 40), "worker": Flavor(2, 8192, 40)}

    def ports(**given):
        config = load_config(with_section(stack_config("standalone"), "openstack", existingNetwork={"networkId": NET, "subnetId": SUBNET, **given}))
        return footprint(config, plan_addresses(config), flavors)["ports"]

    assert ports(router=True) == ports() + 1


V6_SUBNET = "d1111111-2222-4333-8444-666666666666"


def dual_stack(stack: str = "dev", *, order: str = "ipv4-first", **keys) -> dict[str, str]:
    """The stack dual-stack (or IPv6 alone) on network "nodes" with its IPv4 subnet and "nodes-v6"."""
    v4 = {"machine": "10.0.0.0/16", "cluster": {"cidr": "10.128.0.0/14", "hostPrefix": 23}, "service": "172.30.0.0/16", "subnet": "nodes-v4"}
    v6 = {"machine": "fd00:10::/64", "cluster": {"cidr": "fd01::/48", "hostPrefix": 64}, "service": "fd02::/112", "subnet": "nodes-v6"}
    chosen = {"ipv4-first": (v4, v6), "ipv6-first": (v6, v4), "ipv6-only": (v6,)}[order]
    given = {"networkId": "nodes", "subnetId": [family["subnet"] for family in chosen]}
    config = with_section(stack_config(stack), "openstack", existingNetwork=given)
    if order == "ipv6-only":
        openstack = json.loads(config["ocp:openstack"])
        for key in ("externalNetwork", "apiFloatingIp", "ingressFloatingIp", "sshAllowedCidr"):
            openstack.pop(key, None)
        config["ocp:openstack"] = json.dumps(openstack)
        config["ocp:bootstrap"] = json.dumps({**json.loads(config["ocp:bootstrap"]), "helper": {"floatingIp": False}})
    config["ocp:machineNetwork"] = json.dumps([family["machine"] for family in chosen])
    config["ocp:clusterNetwork"] = json.dumps([family["cluster"] for family in chosen])
    config["ocp:serviceNetwork"] = json.dumps([family["service"] for family in chosen])
    config.update({f"ocp:{key}": json.dumps(value) for key, value in keys.items()})
    return config


def dual_verdict(v6: Subnet, stack: str = "dev", order: str = "ipv4-first", **keys) -> list[str]:
    """The stack dual-stack on network "nodes" with its IPv4 subnet and `v6`."""
    loaded = load_config(dual_stack(stack, order=order, **keys))
    return problems(loaded, plan_addresses(loaded), facts(subnets={"nodes-v6": (v6,)}))


STATEFUL = Subnet(V6_SUBNET, "nodes-v6", NET, "fd00:10::/64", (("fd00:10::1000", "fd00:10::1fff"),), "dhcpv6-stateful")


def test_a_given_ipv6_subnet_is_read_for_its_cidr_address_mode_and_pools():
    """Neutron assigns a port the IPv6 address asked for on a dhcpv6-stateful subnet; its CIDR is the second
    machine network's; its pools hold none of the planned IPv6 addresses."""
    fits = STATEFUL
    assert dual_verdict(fits) == []
    assert dual_verdict(dataclasses.replace(fits, ipv6_address_mode=None)) == [
        'ocp:openstack.existingNetwork.subnetId[1]: IPv6 subnet "nodes-v6" has address mode none: nothing gives a node its '
        "address there. Ask its owner for a dhcpv6-stateful subnet (`openstack subnet create --ip-version 6 "
        "--ipv6-address-mode dhcpv6-stateful --ipv6-ra-mode dhcpv6-stateful ...`); integrated mode also takes slaac and "
        "dhcpv6-stateless for the second family of a dual-stack network (IPv4 first)"
    ]
    assert dual_verdict(dataclasses.replace(fits, cidr="fd00:11::/64")) == [
        'ocp:machineNetwork: fd00:10::/64 is not the CIDR of subnet "nodes-v6" (fd00:11::/64), where the nodes\' addresses and '
        "the VIPs are planned: write machineNetwork: [10.0.0.0/16, fd00:11::/64]"
    ]
    pooled = dataclasses.replace(fits, pools=(("fd00:10::2", "fd00:10::ff"),))
    (problem,) = dual_verdict(pooled)
    assert problem.startswith(
        'ocp:openstack.existingNetwork.subnetId[1]: subnet "nodes-v6" hands out fd00:10::2-fd00:10::ff by DHCP, which holds '
        "addresses this stack plans for itself: fd00:10::5 (the API VIP), fd00:10::7 (the Ingress VIP), fd00:10::a (ocp4-bootstrap)"
    ), problem
    elsewhere = dataclasses.replace(fits, network=STORAGE)
    (problem,) = dual_verdict(elsewhere)
    assert problem.startswith(f'ocp:openstack.existingNetwork.subnetId[1]: subnet "nodes-v6" ({V6_SUBNET}) is on network {STORAGE}'), problem


@pytest.mark.parametrize("mode", ["slaac", "dhcpv6-stateless"])
def test_slaac_and_dhcpv6_stateless_are_taken_for_the_second_family_in_integrated_mode(mode):
    """Issue 50, item 8: upstream's dual-stack guide (installer docs/user/openstack/deploy_dual_stack_cluster.md) makes
    the IPv6 subnet slaac, stateless or stateful, and its validation reads no mode. Neutron derives each port's address
    there from its MAC and hands out none from the pools, so a pool over the planned addresses is no problem."""
    derived = dataclasses.replace(STATEFUL, ipv6_address_mode=mode)
    assert dual_verdict(derived) == []
    assert dual_verdict(dataclasses.replace(derived, pools=(("fd00:10::2", "fd00:10::ff"),))) == []
    loaded = load_config(dual_stack())
    assert derived_families(loaded, facts(subnets={"nodes-v6": (derived,)})) == {1}
    assert derived_families(loaded, facts(subnets={"nodes-v6": (STATEFUL,)})) == frozenset()
    assert derived_families(loaded, facts(subnets={}, networks={})) == frozenset()  # unread (skipPreflight): planned


@pytest.mark.parametrize("mode", ["slaac", "dhcpv6-stateless"])
def test_slaac_and_dhcpv6_stateless_are_refused_where_the_ipv6_address_is_planned_into_the_nodes(mode):
    """Standalone mode writes every node slot's IPv6 address into the nodes' first-boot files; an IPv6 primary family's
    planned addresses are used before the nodes exist. Each refusal names the key and what to write."""
    derived = dataclasses.replace(STATEFUL, ipv6_address_mode=mode)
    assert dual_verdict(derived, stack="standalone") == [
        f'ocp:openstack.existingNetwork.subnetId[1]: IPv6 subnet "nodes-v6" has address mode {mode}, where Neutron derives '
        "each port's address from its MAC (and refuses a port the one asked for), while standalone mode "
        "(ocp:openstack.mode) writes every node's IPv6 address into the nodes at first boot, those not made yet included: "
        "each keepalived's IPv6 VRRP source and peers, keepalived-run's interface and CoreDNS's names, in user_data no "
        "node reads again. Ask its owner for a dhcpv6-stateful subnet (`openstack subnet create --ip-version 6 "
        "--ipv6-address-mode dhcpv6-stateful --ipv6-ra-mode dhcpv6-stateful ...`), or install in integrated mode "
        f"(ocp:openstack.mode: integrated), which takes {mode}"
    ]
    for order, key in (("ipv6-only", "subnetId"), ("ipv6-first", "subnetId[0]")):
        (problem,) = dual_verdict(derived, order=order)
        assert problem == (
            f'ocp:openstack.existingNetwork.{key}: IPv6 subnet "nodes-v6" has address mode {mode}, where Neutron derives '
            "each port's address from its MAC (and refuses a port the one asked for), and IPv6 is the primary family (the "
            "first of ocp:machineNetwork), whose planned addresses this program uses before the nodes exist: the bootstrap "
            "helper's address and certificate, `openshift-install gather bootstrap`'s hosts, the `nodes` output the CSR "
            "approver judges by. Ask its owner for a dhcpv6-stateful subnet (`openstack subnet create --ip-version 6 "
            "--ipv6-address-mode dhcpv6-stateful --ipv6-ra-mode dhcpv6-stateful ...`), the mode upstream's single-stack IPv6 "
            f"guide uses (it does not support slaac); {mode} is taken for the second family of a dual-stack network (IPv4 first)"
        ), problem
        loaded = load_config(dual_stack(order=order))
        assert derived_families(loaded, facts(subnets={"nodes-v6": (derived,)})) == {0}  # refused above, before any port


def test_a_subnet_name_two_networks_have_is_the_one_on_the_given_network():
    """As the preflight takes it: of two subnets named "nodes-v6", the one on network "nodes" says the mode."""
    other = dataclasses.replace(STATEFUL, id="e1111111-2222-4333-8444-666666666666", network=STORAGE)
    loaded = load_config(dual_stack())
    slaac = dataclasses.replace(STATEFUL, ipv6_address_mode="slaac")
    assert derived_families(loaded, facts(subnets={"nodes-v6": (other, slaac)})) == {1}
    assert derived_families(loaded, facts(subnets={"nodes-v6": (dataclasses.replace(other, ipv6_address_mode="slaac"), STATEFUL)})) == frozenset()


# Issue 49, item 1: no unfiltered path to the control plane.
RUNNING = Existing(masters=3, workers=2, ports=12)


def test_a_network_without_a_subnet_stays_off_the_masters_unless_said():
    """No subnet: nothing holds the port to an address (RHCOS gives the NIC an IPv6 link-local one), while
    the node's groups admit the machine network by address. Before, l2 went to every master and the bootstrap."""
    assert verdict(additionalNetworks=[{"network": "l2"}]) == [
        'ocp:openstack.additionalNetworks[0].network: network "l2" has no subnet, and its pools name the masters: nothing holds a '
        "port there to an address (RHCOS gives the NIC an IPv6 link-local one) while the node's groups admit the machine network "
        'by address, so anything on "l2" could reach the masters\' machine config server and etcd: write '
        "ocp:openstack.additionalNetworks[0].pools: [workers]; or, if the masters must be on it, say so: unfilteredMasterPorts: true"
    ]
    assert verdict(additionalNetworks=[{"network": "l2", "unfilteredMasterPorts": True}]) == []
    assert verdict(additionalNetworks=[{"network": "l2", "portSecurity": False}]) == []  # workers only, by default


def test_a_running_cluster_keeps_its_masters_ports_on_a_network_without_a_subnet_and_is_told():
    config = load_config(with_section(stack_config("dev"), "openstack", additionalNetworks=[{"network": "l2"}]))
    cloud = facts(existing=RUNNING)
    assert problems(config, plan_addresses(config), cloud) == []
    [warning] = [w for w in network_warnings(config, plan_addresses(config), cloud) if "its pools name the masters" in w]
    assert warning.startswith('ocp:openstack.additionalNetworks[0].network: network "l2" has no subnet, and its pools name the masters')
    assert warning.endswith(
        "This cluster's masters keep the ports they have; new stacks are refused this. To close it, write "
        "ocp:openstack.additionalNetworks[0].pools: [workers]; or, if the masters must be on it, say so: unfilteredMasterPorts: "
        "true (the masters' ports there are then deleted: Nova unplugs them, nothing reboots)"
    )


def test_unfiltered_master_ports_said_of_a_filtered_network_is_refused():
    assert verdict(additionalNetworks=[{"network": "storage", "unfilteredMasterPorts": True}]) == [
        'ocp:openstack.additionalNetworks[0].unfilteredMasterPorts: network "storage" has a subnet and its ports port security: '
        "they are filtered (by the entry's groups), so there is nothing to say: remove it"
    ]


INSIDE = "e1111111-2222-4333-8444-555555555555"


@pytest.mark.parametrize("cidr", ["10.0.200.0/24", "10.0.0.0/8"])
def test_node_groups_on_a_network_inside_the_machine_network_are_refused(cidr):
    """The node's groups admit 10.0.0.0/16 by address: on a shared network whose subnet lies inside (or
    around) it, anything there with such an address would reach etcd, the MCS and Geneve."""
    shared = {"shared": (Network(INSIDE, "shared", True, ("s1",), 1500, OURS, (cidr,)),)}
    assert verdict(cloud=facts(networks=shared), additionalNetworks=[{"network": "shared", "pools": ["workers"]}]) == [
        f'ocp:openstack.additionalNetworks[0].network: network "shared" has subnet {cidr}, which overlaps ocp:machineNetwork, and '
        "its ports carry the node's groups, which admit the machine network by address: anything on it with such an address "
        "would reach etcd, the machine config server and Geneve: give ocp:openstack.additionalNetworks[0] groups of its own "
        "(securityGroups: [IDs]) or securityGroups: none, or name a network whose subnets lie outside the machine network"
    ]
    assert verdict(cloud=facts(networks=shared), additionalNetworks=[{"network": "shared", "securityGroups": "none"}]) == []
    assert verdict(cloud=facts(networks=shared), additionalNetworks=[{"network": "shared", "securityGroups": [STORAGE]}]) == []
    running = facts(networks=shared, existing=RUNNING)
    config = load_config(with_section(stack_config("dev"), "openstack", additionalNetworks=[{"network": "shared"}]))
    assert problems(config, plan_addresses(config), running) == []
    [warning] = network_warnings(config, plan_addresses(config), running)
    assert "This cluster's ports stay as they are; new stacks are refused this. To close it, give" in warning


def test_a_network_outside_the_machine_network_takes_the_node_groups():
    apart = {"apart": (Network(INSIDE, "apart", True, ("s1",), 1500, OURS, ("10.9.0.0/24", "fd00:9::/64")),)}
    assert verdict(cloud=facts(networks=apart), additionalNetworks=[{"network": "apart"}]) == []


# Issue 50, finding 4: what Glance lists under a name, as the installer and the Machine API count it.
LISTED = (
    GlanceImage("image-new", "active", "private", OURS, "2026-11-02T00:00:00Z"),
    GlanceImage("image-queued", "queued", "private", OURS, "2026-11-01T00:00:00Z"),
    GlanceImage("image-public", "active", "public", THEIRS, "2026-10-01T00:00:00Z"),
)


def test_integrated_mode_lists_the_names_the_installer_and_the_machine_api_look_up():
    dev = load_config(with_section(stack_config("dev"), "workers", image="rhcos-workers"))
    assert wanted(dev, plan_addresses(dev)).listed_images == ("rhcos", "rhcos-workers")
    assert machine_api_images(dev) == [("ocp:masters.image", "rhcos"), ("ocp:workers.image", "rhcos-workers")]
    # Standalone: platform none has no Machine API on OpenStack, and the installer names no image.
    standalone = load_config(stack_config("standalone"))
    assert wanted(standalone, plan_addresses(standalone)).listed_images == () and machine_api_images(standalone) == []


def test_a_name_several_images_have_is_refused_in_integrated_mode_counting_queued_and_public_ones():
    """A new integrated cluster: the installer's validation (cloudinfo.go getImage, gophercloud images.IDFromName)
    gives up its checks on two matches, and machine-api-provider-openstack refuses "too many images with the name"
    on every machine of a MachineSet. Only one of the three is active and the project's own: the provider's
    active-only lookup saw one image and nothing was said before (issue 50, finding 4)."""
    config = load_config(stack_config("dev"))
    plan = plan_addresses(config)
    twins = facts(images={"rhcos": Image(True, ("image-new",))}, listed_images={"rhcos": LISTED})
    assert problems(config, plan, twins) == [
        'ocp:masters.image, ocp:workers.image: 3 images are named "rhcos" in cloud "openstack" as Glance lists them to this '
        "project (every status, public and shared ones too: image-new (active), image-queued (queued), image-public (active, "
        f"public, project {THEIRS}'s)). In integrated mode the installer finds the cluster's image (clusterOSImage) by that name "
        "and, finding several, skips every check it makes of the cloud, and the Machine API refuses the name on every machine a "
        'MachineSet makes ("too many images with the name"). Delete or rename the others (`openstack image set --name <new name> '
        "<ID>`; an image of another project only its owner can), or upload the image under a name no other image has and write that name"
    ]
    assert image_warnings(config, plan, twins) == []
    # One image under the name: nothing.
    single = facts(listed_images={"rhcos": LISTED[:1]})
    assert problems(config, plan, single) == [] and image_warnings(config, plan, single) == []


def test_on_a_running_integrated_cluster_the_name_is_warned_of_for_its_machinesets():
    config = load_config(stack_config("dev"))
    plan = plan_addresses(config)
    running = facts(images={"rhcos": Image(True, ("image-new",))}, listed_images={"rhcos": LISTED}, existing=Existing(masters=3, workers=2, ports=7))
    assert problems(config, plan, running) == []
    assert image_warnings(config, plan, running) == [
        'ocp:masters.image, ocp:workers.image: 3 images are named "rhcos" in cloud "openstack" as Glance lists them to this '
        f"project (image-new (active), image-queued (queued), image-public (active, public, project {THEIRS}'s)): the Machine "
        'API refuses the name on every machine a MachineSet makes ("too many images with the name"), so scaling up a MachineSet '
        "(this stack's example ones name it) fails; the servers this program makes boot the newest active one, image-new. Delete "
        "or rename the others (`openstack image set --name <new name> <ID>`; an image of another project only its owner can), or "
        "upload the image under a name no other image has and write that name (servers made from then on boot it; running ones keep theirs)"
    ]


def test_standalone_mode_keeps_booting_the_newest_active_image_of_a_name():
    config = load_config(stack_config("standalone"))
    plan = plan_addresses(config)
    twins = facts(images={"rhcos": Image(True, ("image-new", "image-old"))}, listed_images=None)
    assert problems(config, plan, twins) == [] and boot_images(twins) == {"rhcos": "image-new"}
    assert [w.split(": ")[0] for w in image_warnings(config, plan, twins)] == ["ocp:masters.image"]


# Issue 50, finding 7: floating IPs on a network given without a router of the stack's.
EXTERNAL_ID = "e1111111-2222-4333-8444-777777777777"
GIVEN = {"networkId": "nodes", "subnetId": "nodes-v4"}


def routed(*routers: tuple[str, str | None]) -> CloudFacts:
    subnet = Subnet(SUBNET, "nodes-v4", NET, "10.0.0.0/16", routers=tuple(routers))
    return facts(subnets={"nodes-v4": (subnet,)}, external_network_ids={"external": EXTERNAL_ID})


def test_floating_ips_on_a_given_network_need_a_router_to_the_external_network_on_its_subnet():
    """Neutron maps a floating IP to a port of a subnet only through a router with an interface there and its
    gateway on the floating IP's network (neutron/db/l3_db.py get_router_for_floatingip), and says so only at the
    association, halfway through `pulumi up`: the preflight refuses first, naming each key that plans one."""
    refused = verdict(cloud=routed(), existingNetwork=GIVEN)
    assert refused == [
        'ocp:openstack.apiFloatingIp, ocp:openstack.ingressFloatingIp: floating IPs on externalNetwork "external" reach a port on '
        'subnet "nodes-v4" only through a router with an interface on that subnet and its gateway on "external", and the subnet '
        'has none: Neutron would refuse each association ("External network ... is not reachable from subnet ...") halfway '
        "through `pulumi up`: write ocp:openstack.existingNetwork.router: true (this stack then makes one), ask the network's "
        'owner to attach a router whose gateway is on "external" (`openstack router add subnet <router> nodes-v4`), or plan '
        "none: apiFloatingIp: none, ingressFloatingIp: none, bootstrap.helper.floatingIp: false (clients then reach the VIPs on "
        "the network itself)"
    ]
    # The bootstrap's too, where it is asked for in so many words; a router elsewhere is named.
    asked = verdict(cloud=routed(("r-other", "f1111111-2222-4333-8444-777777777777")), existingNetwork=GIVEN, apiFloatingIp="none", ingressFloatingIp="none")
    assert asked == []  # unset, the bootstrap's is off on a network given without a router
    config = with_section(with_section(stack_config("dev"), "openstack", existingNetwork=GIVEN), "bootstrap", helper={"floatingIp": True})
    loaded = load_config(config)
    found = problems(loaded, plan_addresses(loaded), routed(("r-other", "")))
    assert found[0].startswith("ocp:openstack.apiFloatingIp, ocp:openstack.ingressFloatingIp, ocp:bootstrap.helper.floatingIp: ")
    assert "and the subnet has none (its routers' gateways are elsewhere: r-other)" in found[0]
    # A router there with its gateway on the external network, or one this stack makes: nothing.
    assert verdict(cloud=routed(("r-1", EXTERNAL_ID)), existingNetwork=GIVEN) == []
    assert verdict(cloud=routed(), existingNetwork={**GIVEN, "router": True}) == []
    # Routers not read (a cloud description without them): nothing held.
    assert verdict(cloud=facts(external_network_ids={"external": EXTERNAL_ID}), existingNetwork=GIVEN) == []


def test_another_projects_router_or_a_running_cluster_is_warned_not_refused():
    config = load_config(with_section(stack_config("dev"), "openstack", existingNetwork=GIVEN))
    plan = plan_addresses(config)
    hidden = routed(("r-hidden", None))
    assert problems(config, plan, hidden) == []
    assert network_warnings(config, plan, hidden) == [
        'ocp:openstack.apiFloatingIp, ocp:openstack.ingressFloatingIp: subnet "nodes-v4" has an interface of router r-hidden, '
        "which Neutron does not show this project (another project's): a floating IP on externalNetwork \"external\" maps there "
        'only if its gateway is on "external"'
    ]
    running = dataclasses.replace(routed(), existing=Existing(masters=3, workers=2, ports=7))
    assert problems(config, plan, running) == []
    assert [w.endswith("This cluster keeps the floating IPs it has; to add one, write ocp:openstack.existingNetwork.router: true (this stack then makes one), ask the network's owner to attach a router whose gateway is on \"external\" (`openstack router add subnet <router> nodes-v4`), or plan none: apiFloatingIp: none, ingressFloatingIp: none, bootstrap.helper.floatingIp: false (clients then reach the VIPs on the network itself)") for w in network_warnings(config, plan, running)] == [True]
