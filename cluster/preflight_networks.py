"""The preflight's network checks: ocp:openstack.existingNetwork and the extra networks, each read
by name or ID (cluster/cloud_probe.py), held against what Neutron and OVN-Kubernetes take. Pure Python.

Neutron refuses security groups on a port of a network without port security
(PortSecurityAndIPRequiredForSecurityGroups): a node's port on an extra network carries groups
unless its entry says portSecurity: false, and its own port on existingNetwork always does. On a
network without a subnet it takes them (the program names no fixed IP, so Neutron checks for none),
and the port has groups but no address: a warning. A member's port on another project's network may
carry groups, but no fixed address, address pairs nor port_security_enabled (Neutron's default
policy: the network's owner or an admin); all seen against the local cloud.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from ipaddress import ip_address, ip_network
from typing import Any

from cluster import address_layout
from cluster.addresses import AddressPlan
from cluster.cloud_facts import GENEVE_OVERHEAD, MINIMUM_NETWORK_MTU, CloudFacts, Network, Subnet, where
from cluster.config import ClusterConfig
from cluster.preflight_floating_ips import floating_ips_routed

# Neutron's extension that shows a port's ip_allocation, which Nova reads to boot on a port without an address.
IP_ALLOCATION = "ip_allocation"
GROUPS_REFUSED = "Neutron would refuse the node's security groups on its ports (PortSecurityAndIPRequiredForSecurityGroups)"


def mtu_problem(key: str, name: str, mtu: int | None) -> str | None:
    """Why OVN-Kubernetes cannot run over a node network of this MTU, or None (also for an unknown MTU)."""
    if mtu is None or mtu >= MINIMUM_NETWORK_MTU:
        return None
    return (
        f'{key}: network "{name}" has MTU {mtu}, and OVN-Kubernetes needs at least {MINIMUM_NETWORK_MTU} on the nodes\' '
        f"network: its Geneve overlay takes {GENEVE_OVERHEAD} bytes of it and pods need IPv6's minimum of 1280. Ask the "
        f"network's owner to raise it (`openstack network set --mtu {MINIMUM_NETWORK_MTU} {name}`) or name a network with a larger MTU"
    )


def resolved(found: Mapping[str, tuple[Network, ...]] | Mapping[str, tuple[Subnet, ...]] | None) -> dict[str, Network | Subnet]:
    """Each name or ID that names one network (or subnet), with it: what the components may use by ID."""
    return {ref: matches[0] for ref, matches in (found or {}).items() if len(matches) == 1}


def network_problems(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    openstack = config.openstack
    assert openstack is not None
    wants = bool(openstack.existing_network or openstack.extra_networks)
    if not wants:
        return
    if facts.networks is None or facts.subnets is None:
        # In integrated mode the extensions' message says the same of the same probe.
        if not config.integrated:
            key = "ocp:openstack.existingNetwork" if openstack.existing_network else openstack.keyed_extra_networks()[0][0]
            yield (
                f"{key}: reading the networks {where(facts)} failed ({facts.probe_failure or 'no reason given'}): the preflight runs "
                f"`OS_CLOUD={facts.cloud} venv/bin/python -m cluster.cloud_probe` in the project (run it to see), which needs "
                f"openstacksdk in the program's venv (pip install -r requirements.txt) and \"{facts.cloud}\" in clouds.yaml"
            )
        return
    yield from _existing_network(config, plan, facts, facts.networks, facts.subnets)
    for key, entry in openstack.keyed_extra_networks():
        network, problem = _one(key, "network", entry.network, facts.networks.get(entry.network, ()), facts)
        if problem:
            yield problem
        elif network is not None and entry.port_security and entry.groups != "none":
            yield from _needs_groups(key, network)
        if network is not None and not network.subnets and facts.network_extensions is not None and IP_ALLOCATION not in facts.network_extensions:
            yield (
                f'{key}: network "{network.name or network.id}" has no subnet, and Nova boots a server on a port without an '
                f"address only where Neutron shows the port's ip_allocation (its {IP_ALLOCATION} extension, which the "
                f"segments service plugin brings) {where(facts)}: Nova would refuse every node (\"requires a FixedIP\"). Give "
                "the network a subnet, or ask the cloud's operators to enable the segments plugin"
            )
        elif network is not None and not entry.port_security and network.port_security and _not_ours(network, facts):
            name = network.name or network.id
            yield (
                f'{key}: network "{name}" belongs to project {network.project} and has port security on: portSecurity: false '
                "turns it off on each port, which Neutron's default policy allows only the network's owner or an admin. Ask "
                f"its owner to turn it off on the network (`openstack network set --disable-port-security {name}`), or write "
                "portSecurity: true"
            )
    yield from _unfiltered(config, facts)[0]
    yield from floating_ips_routed(config, facts)[0]


def _unfiltered(config: ClusterConfig, facts: CloudFacts) -> tuple[list[str], list[str]]:
    """(problems, warnings) of the extra networks that would leave a master unfiltered: one without a
    subnet on the masters (nothing holds its ports to an address, RHCOS gives the NIC an IPv6 link-local
    one, and the node's groups admit the machine network by address), or the node's groups on one whose
    subnets overlap the machine network (they admit anything there with such an address to etcd, the
    machine config server and Geneve). A cluster that runs already keeps its ports: a warning."""
    problems: list[str] = []
    warnings: list[str] = []
    running = facts.existing.cluster
    for key, entry in config.openstack.keyed_extra_networks() if config.openstack and facts.networks else ():
        found = facts.networks.get(entry.network, ()) if facts.networks else ()
        if len(found) != 1:
            continue  # none, or several: network_problems names them
        network = found[0]
        name = network.name or network.id
        entry_key = key.removesuffix(".network")
        # Port security off on the network, on in the entry: Neutron refuses the entry first (network_problems),
        # and with portSecurity: false written the masters are off it by default.
        refused_anyway = not network.port_security and entry.port_security and entry.groups != "none"
        if not network.subnets and "masters" in entry.on() and not entry.unfiltered_master_ports and not refused_anyway:
            shown = "additionalNetworkIds puts it on every node" if "additionalNetworkIds" in key else "its pools name the masters"
            text = (
                f'{key}: network "{name}" has no subnet, and {shown}: nothing holds a port there to an address (RHCOS gives '
                "the NIC an IPv6 link-local one) while the node's groups admit the machine network by address, so anything on "
                f'"{name}" could reach the masters\' machine config server and etcd'
            )
            fix = (
                "list it under ocp:openstack.additionalNetworks with pools: [workers]"
                if "additionalNetworkIds" in key
                else f"write {entry_key}.pools: [workers]; or, if the masters must be on it, say so: unfilteredMasterPorts: true"
            )
            if running:
                warnings.append(
                    f"{text}. This cluster's masters keep the ports they have; new stacks are refused this. To close it, {fix} "
                    "(the masters' ports there are then deleted: Nova unplugs them, nothing reboots)"
                )
            else:
                problems.append(f"{text}: {fix}")
        if entry.unfiltered_master_ports and network.subnets and entry.port_security and network.port_security:
            problems.append(
                f'{entry_key}.unfilteredMasterPorts: network "{name}" has a subnet and its ports port security: they are '
                "filtered (by the entry's groups), so there is nothing to say: remove it"
            )
        overlapping = sorted({cidr for cidr in network.cidrs for machine in config.machine_networks if _overlaps(cidr, machine)})
        if entry.port_security and entry.groups == "node" and overlapping:
            text = (
                f'{key}: network "{name}" has subnet {", ".join(overlapping)}, which overlaps ocp:machineNetwork, and its ports '
                "carry the node's groups, which admit the machine network by address: anything on it with such an address would "
                "reach etcd, the machine config server and Geneve"
            )
            fix = (
                f"give {entry_key} groups of its own (securityGroups: [IDs]) or securityGroups: none, or name a network whose "
                "subnets lie outside the machine network"
            )
            if running:
                warnings.append(f"{text}. This cluster's ports stay as they are; new stacks are refused this. To close it, {fix}")
            else:
                problems.append(f"{text}: {fix}")
    return problems, warnings


def _overlaps(cidr: str, machine: Any) -> bool:
    try:
        network = ip_network(cidr, strict=False)
    except ValueError:
        return False
    return network.version == machine.version and network.overlaps(machine)


def _pools_clear(config: ClusterConfig, plan: AddressPlan, key: str, ref: str, subnet: Subnet, family: int = 0) -> Iterable[str]:
    """The subnet's DHCP pools hold none of the planned addresses: Neutron would hand them to any port
    (and the installer refuses VIPs inside them). `family`: which of the machine networks the subnet holds."""
    network = plan.networks[family]
    planned = {
        plan.api_vips[family]: "the API VIP",
        plan.ingress_vips[family]: "the Ingress VIP",
        **address_layout.reserved_addresses(network, config.cluster_name, config.workers.max_count),
    }
    planned.pop(address_layout.gateway(network), None)  # the subnet's own gateway, wherever it is
    for first, last in subnet.pools:
        start, end = ip_address(first), ip_address(last)
        inside = sorted(address for address in planned if start <= address <= end)
        if inside:
            shown = ", ".join(f"{address} ({planned[address]})" for address in inside[:3]) + (f" and {len(inside) - 3} more" if len(inside) > 3 else "")
            yield (
                f'{key}: subnet "{ref}" hands out {first}-{last} by DHCP, which holds addresses this stack plans for itself: '
                f"{shown}. Ask its owner to keep the pool clear of them (`openstack subnet set --no-allocation-pool "
                f"--allocation-pool start=...,end=...`), or move the VIPs (ocp:apiVip, ocp:ingressVip) and lower "
                "ocp:workers.maxCount (the nodes take the 10th host on, workers from the 30th)"
            )


# How Neutron gives a port its address on an IPv6 subnet (ipv6_address_mode): the one asked for
# (dhcpv6-stateful), or one it derives from the port's MAC (EUI-64: slaac, dhcpv6-stateless), which it
# then shows in the port's fixed_ips and refuses a port to ask for (AllocationOnAutoAddressSubnet).
PLANNED_IPV6_MODE = "dhcpv6-stateful"
DERIVED_IPV6_MODES = ("slaac", "dhcpv6-stateless")
STATEFUL_SUBNET = (
    f"`openstack subnet create --ip-version 6 --ipv6-address-mode {PLANNED_IPV6_MODE} --ipv6-ra-mode {PLANNED_IPV6_MODE} ...`"
)


def derived_families(config: ClusterConfig, facts: CloudFacts) -> frozenset[int]:
    """The machine networks (by place) whose subnet of ocp:openstack.existingNetwork Neutron gives ports
    addresses derived from their MACs, as the preflight read them (a name two subnets have: the one on
    the network, as _existing_network takes it): the program asks no address there and reads the port's
    instead. Empty where none was read (skipPreflight: each subnet is taken as dhcpv6-stateful)."""
    existing = config.openstack.existing_network if config.openstack else None
    if existing is None or not facts.subnets:
        return frozenset()
    networks = (facts.networks or {}).get(existing.network_id, ())
    derived = set()
    for family, ref in enumerate(existing.subnet_ids[: len(config.machine_networks)]):
        found = facts.subnets.get(ref, ())
        if len(networks) == 1 and len(found) > 1:
            found = tuple(each for each in found if each.network == networks[0].id) or found
        if config.machine_networks[family].version == 6 and len(found) == 1 and found[0].ipv6_address_mode in DERIVED_IPV6_MODES:
            derived.add(family)
    return frozenset(derived)


def _ipv6_mode(config: ClusterConfig, family: int, key: str, ref: str, mode: str | None) -> Iterable[str]:
    """An IPv6 subnet's address mode against what this program does with the family's addresses. Upstream
    installs dual-stack on slaac, dhcpv6-stateless and dhcpv6-stateful (installer's
    docs/user/openstack/deploy_dual_stack_cluster.md; its validation, pkg/asset/installconfig/openstack/
    validation, reads no mode), IPv6 alone on dhcpv6-stateful (deploy_single_stack_ipv6_cluster.md: slaac
    is not supported, its DNS does not work)."""
    if mode == PLANNED_IPV6_MODE:
        return
    ask = f"Ask its owner for a {PLANNED_IPV6_MODE} subnet ({STATEFUL_SUBNET})"
    if mode not in DERIVED_IPV6_MODES:
        yield (
            f'{key}: IPv6 subnet "{ref}" has address mode {mode or "none"}: nothing gives a node its address there. {ask}; '
            f"integrated mode also takes slaac and dhcpv6-stateless for the second family of a dual-stack network (IPv4 first)"
        )
        return
    derived = (
        f'{key}: IPv6 subnet "{ref}" has address mode {mode}, where Neutron derives each port\'s address from its MAC '
        "(and refuses a port the one asked for)"
    )
    if not config.integrated:
        yield (
            f"{derived}, while standalone mode (ocp:openstack.mode) writes every node's IPv6 address into the nodes at first "
            "boot, those not made yet included: each keepalived's IPv6 VRRP source and peers, keepalived-run's interface "
            "and CoreDNS's names, in user_data no node reads again. "
            f"{ask}, or install in integrated mode (ocp:openstack.mode: integrated), which takes {mode}"
        )
    elif family == 0:
        yield (
            f"{derived}, and IPv6 is the primary family (the first of ocp:machineNetwork), whose planned addresses this "
            "program uses before the nodes exist: the bootstrap helper's address and certificate, `openshift-install "
            "gather bootstrap`'s hosts, the `nodes` output the CSR approver judges by. "
            f"{ask}, the mode upstream's single-stack IPv6 guide uses (it does not support slaac); {mode} is taken for the "
            "second family of a dual-stack network (IPv4 first)"
        )


def _given_subnet(
    config: ClusterConfig, plan: AddressPlan, network: Network, network_ref: str, family: int, key: str, ref: str, subnet: Subnet | None
) -> Iterable[str]:
    """One subnet of existingNetwork against the machine network of its family (`family`: its place in both lists)."""
    if subnet is None:
        return
    planned = config.machine_networks[family]
    if subnet.network and subnet.network != network.id:
        yield (
            f'{key}: subnet "{ref}" ({subnet.id}) is on network {subnet.network}, not on network '
            f'"{network_ref}" ({network.id}): name one of its subnets (`openstack subnet list --network {network.id}`)'
        )
        return
    if subnet.cidr is not None and subnet.cidr != str(planned):
        written = [str(n) for n in config.machine_networks]
        written[family] = subnet.cidr
        shown = written[0] if len(written) == 1 else f"[{', '.join(written)}]"
        yield (
            f'ocp:machineNetwork: {planned} is not the CIDR of subnet "{ref}" ({subnet.cidr}), '
            f"where the nodes' addresses and the VIPs are planned: write machineNetwork: {shown}"
        )
        return
    if planned.version == 6 and subnet.cidr is not None:  # None: not read
        mode_problems = list(_ipv6_mode(config, family, key, ref, subnet.ipv6_address_mode))
        yield from mode_problems
        if mode_problems or subnet.ipv6_address_mode in DERIVED_IPV6_MODES:
            # Derived: Neutron hands out no address from the pools there (each port's is its MAC's), and no port
            # may ask for one: the VIPs' planned addresses (fd00:10::5, no EUI-64 interface ID) are nobody's.
            return
    yield from _pools_clear(config, plan, key, ref, subnet, family)


def _not_ours(network: Network, facts: CloudFacts) -> bool:
    """Another project's network, to a member (an admin may do on it what its owner may)."""
    return bool(facts.project and network.project and network.project != facts.project and not facts.admin)


def _one(key: str, kind: str, ref: str, found: tuple[Any, ...], facts: CloudFacts) -> tuple[Any, str | None]:
    """The one thing `ref` names, or the problem: none, or several of that name."""
    if not found:
        listing = "`openstack network list`" if kind == "network" else "`openstack subnet list`"
        return None, f'{key}: {kind} "{ref}" does not exist {where(facts)}: name one from {listing}'
    if len(found) > 1:
        ids = ", ".join(each.id for each in found)
        return None, f'{key}: {len(found)} {kind}s are named "{ref}" {where(facts)} ({ids}): write the ID of the one meant'
    return found[0], None


def _advice(key: str) -> tuple[str, str]:
    """(what the entry gives its ports, what to write instead), for an entry by its key."""
    if "additionalNetworkIds" in key:
        return (
            "additionalNetworkIds gives its ports the node's security groups",
            "list it under ocp:openstack.additionalNetworks with portSecurity: false instead (its ports carry no groups, and go to the workers only)",
        )
    return "the entry has portSecurity true (the default), so its ports carry security groups", "write portSecurity: false for it (its ports carry no groups, and go to the workers only)"


def _needs_groups(key: str, network: Network) -> Iterable[str]:
    """An extra network whose ports would carry security groups Neutron refuses there."""
    entry, instead = _advice(key)
    if not network.port_security:
        yield f'{key}: network "{network.name or network.id}" has port security off, and {entry}: {GROUPS_REFUSED}: {instead}'


def network_warnings(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> list[str]:
    """What Neutron takes but the cluster would not want: an extra network without a subnet whose
    ports carry security groups. Neutron makes such a port (the program names no fixed IP, so Neutron
    does not check for one: seen against the local cloud), with no address and the node's groups,
    whose rules admit traffic by address: whatever else the network carries is dropped."""
    warnings = _unfiltered(config, facts)[1] + floating_ips_routed(config, facts)[1]
    for key, entry in config.openstack.keyed_extra_networks() if config.openstack and facts.networks else ():
        found = facts.networks.get(entry.network, ()) if facts.networks else ()
        if len(found) == 1 and found[0].port_security and not found[0].subnets and entry.port_security and entry.groups != "none":
            what, instead = _advice(key)
            warnings.append(
                f'{key}: network "{found[0].name or found[0].id}" has no subnet, and {what}: Neutron makes such a port with no '
                f"address, and the groups' rules, which admit traffic by address, drop whatever else the network carries: {instead}, "
                "unless that is meant"
            )
    return warnings


def _existing_network(
    config: ClusterConfig, plan: AddressPlan, facts: CloudFacts, networks: Mapping[str, tuple[Network, ...]], subnets: Mapping[str, tuple[Subnet, ...]]
) -> Iterable[str]:
    openstack = config.openstack
    assert openstack is not None
    existing = openstack.existing_network
    if existing is None:
        return
    network_key, subnet_key = "ocp:openstack.existingNetwork.networkId", "ocp:openstack.existingNetwork.subnetId"
    network, problem = _one(network_key, "network", existing.network_id, networks.get(existing.network_id, ()), facts)
    if problem:
        yield problem
    read = []
    for family, ref in enumerate(existing.subnet_ids[: len(config.machine_networks)]):
        key = subnet_key if len(existing.subnet_ids) == 1 else f"{subnet_key}[{family}]"
        found = subnets.get(ref, ())
        if network is not None and len(found) > 1:  # a name several subnets have: the one on that network, where one is
            found = tuple(each for each in found if each.network == network.id) or found
        subnet, problem = _one(key, "subnet", ref, found, facts)
        if problem:
            yield problem
        read.append((family, key, ref, subnet))
    if network is None:
        return
    name = network.name or network.id
    for family, key, ref, subnet in read:
        yield from _given_subnet(config, plan, network, existing.network_id, family, key, ref, subnet)
    if not network.port_security:
        yield (
            f'{network_key}: network "{name}" has port security off, and the nodes\' ports on it carry the cluster\'s '
            "security groups, which Neutron refuses there (PortSecurityAndIPRequiredForSecurityGroups): ask its owner to "
            "enable port security on it (`openstack network set --enable-port-security`), or name another network"
        )
    if _not_ours(network, facts):
        tags = (
            ", and in integrated mode the program tags it <infraID>-primaryClusterNetwork as the installer does"
            if config.integrated
            else ""
        )
        yield (
            f'{network_key}: network "{name}" belongs to project {network.project}, not to this stack\'s ({facts.project}): the '
            f"nodes' ports on it take fixed addresses and address pairs{tags}, which Neutron's default policy allows only the "
            "network's owner or an admin. Ask the cloud's admin to create it in your project"
        )
    problem = mtu_problem(network_key, name, network.mtu)
    if problem:
        yield problem
