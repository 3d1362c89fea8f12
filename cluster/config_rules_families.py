"""The rules across keys about address families (dual-stack, IPv6), as openshift-install's
validation has them (pkg/types/validation, pkg/asset/installconfig/openstack/validation at the
pinned release), plus what this program's own parts need. Pure Python; cluster/config_rules.py
runs them with the rest.

- Every network list (ocp:machineNetwork, clusterNetwork, serviceNetwork) holds the same families
  in the same order: the first is the primary family of nodes, pods and services alike (the
  installer refuses a list without the other family, and IPv6-first lists only together).
- ocp:apiVip and ocp:ingressVip, when written, name one address per family, in that order.
- Dual-stack and IPv6 need a network you bring (ocp:openstack.existingNetwork) with one subnet per
  family; single-stack IPv6 takes no external network and so no floating IP; libvirt is IPv4 only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# What to write for a family a list lacks (upstream's examples; IPv6 pods take a /64 each).
EXAMPLES = {
    "machineNetwork": {4: "10.0.0.0/16", 6: "fd00:10::/64"},
    "clusterNetwork": {4: '{cidr: 10.128.0.0/14, hostPrefix: 23}', 6: "{cidr: fd01::/48, hostPrefix: 64}"},
    "serviceNetwork": {4: "172.30.0.0/16", 6: "fd02::/112"},
    "apiVip": {4: "10.0.0.5", 6: "fd00:10::5"},
}
# Kubernetes takes no IPv6 service network wider than a /108 (the installer: "should be /112").
WIDEST_IPV6_SERVICES = 108
# Nodes that run their own CoreDNS list every node slot once per family in their user_data: with
# two families 400 reserved worker slots keep a master within Nova's budget (docs/networking.md).
DUAL_STACK_MAX_WORKER_SLOTS = 400


def _names(families: Iterable[int]) -> str:
    return " and ".join(f"IPv{family}" for family in families)


def _shown(networks: Iterable[Any]) -> str:
    return ", ".join(str(network) for network in networks)


def _lists_agree(c: Any) -> Iterable[str]:
    families = c.families
    stack = "dual-stack" if len(families) == 2 else f"IPv{families[0]} only"
    lists = {
        "clusterNetwork": tuple(entry.cidr for entry in c.cluster_networks),
        "serviceNetwork": tuple(c.service_networks),
    }
    for key, networks in lists.items():
        theirs = tuple(network.version for network in networks)
        if theirs == families:
            continue
        if sorted(theirs) == sorted(families):
            yield (
                f"ocp:{key}: lists {_names(theirs)} and ocp:machineNetwork {_names(families)}: list every network's "
                f"families in the same order (the first is the primary family of nodes, pods and services): write "
                f"{key}: [{_shown(sorted(networks, key=lambda n: families.index(n.version)))}]"
            )
            continue
        wanted = [next((n for n in networks if n.version == family), None) for family in families]
        example = ", ".join(str(n) if n is not None else EXAMPLES[key][family] for n, family in zip(wanted, families))
        yield (
            f"ocp:{key}: {_shown(networks)} is {_names(theirs)} and ocp:machineNetwork ({_shown(c.machine_networks)}) is "
            f"{stack}: the installer needs the same families in every network list (\"dual-stack IPv4/IPv6 requires an "
            f"IPv6 network in this list\"): write {key}: [{example}]"
        )


def _ipv6_services(c: Any) -> Iterable[str]:
    for network in c.service_networks:
        if network.version == 6 and network.prefixlen < WIDEST_IPV6_SERVICES:
            yield (
                f"ocp:serviceNetwork: {network} is wider than a /{WIDEST_IPV6_SERVICES}, which Kubernetes refuses for IPv6 "
                "services (the installer: \"subnet size for IPv6 service network should be /112\"): write e.g. fd02::/112"
            )


def _vips_per_family(c: Any) -> Iterable[str]:
    families = c.families
    for key, vips in (("apiVip", c.api_vips), ("ingressVip", c.ingress_vips)):
        if not vips or tuple(vip.version for vip in vips) == families:
            continue
        example = [str(vip) for vip in vips]
        defaults = {4: {"apiVip": "10.0.0.5", "ingressVip": "10.0.0.7"}, 6: {"apiVip": "fd00:10::5", "ingressVip": "fd00:10::7"}}
        shown = [next((v for v in example if (":" in v) == (family == 6)), defaults[family][key]) for family in families]
        yield (
            f"ocp:{key}: {_shown(vips)} is {_names(vip.version for vip in vips)} and ocp:machineNetwork "
            f"({_shown(c.machine_networks)}) is {_names(families)}: write one address per family of machineNetwork, in "
            f"its order, e.g. {key}: [{', '.join(shown)}], or leave {key} out for the 5th (API) and 7th (Ingress) host"
        )


def _libvirt_ipv4_only(c: Any) -> Iterable[str]:
    if c.platform == "libvirt" and c.families != (4,):
        yield (
            f"ocp:machineNetwork: {_shown(c.machine_networks)} has an IPv6 network, and libvirt stacks are IPv4 only: the "
            "program's libvirt network gives each node its planned address by a DHCP reservation for its MAC, which "
            "libvirt's DHCPv6 cannot make (it matches a client's DUID, which is not known before the node boots). "
            "Write one IPv4 network, e.g. machineNetwork: 10.0.0.0/16, or install on OpenStack with a network you bring"
        )


def planned_floating_ips(c: Any) -> list[str]:
    """The keys of the floating IPs an OpenStack stack plans (API, Ingress, the bootstrap's and its helper's)."""
    openstack = c.openstack
    planned = (
        ("ocp:openstack.apiFloatingIp", openstack.api_floating_ip != "none"),
        ("ocp:openstack.ingressFloatingIp", openstack.ingress_floating_ip != "none"),
        ("ocp:bootstrap.helper.floatingIp", c.bootstrap.enabled and c.bootstrap_floating_ip),
    )
    return [key for key, wanted in planned if wanted]


def _openstack_families(c: Any) -> Iterable[str]:
    if c.platform != "openstack" or c.openstack is None or c.families == (4,):
        return
    openstack, families = c.openstack, c.families
    stack = "dual-stack" if len(families) == 2 else "IPv6 only"
    existing = openstack.existing_network
    if existing is None:
        yield (
            f"ocp:machineNetwork: {_shown(c.machine_networks)} is {stack}, which needs a network you bring: the installer "
            "installs dual-stack and IPv6 on OpenStack only on a network made beforehand (one IPv4 and one IPv6 subnet, "
            "the IPv6 one on a router for its advertisements), and this program makes IPv4 subnets only. Make it and name "
            "it in ocp:openstack.existingNetwork (networkId, and subnetId with one subnet per family, in machineNetwork's order)"
        )
    elif len(existing.subnet_ids) != len(families):
        yield (
            f"ocp:openstack.existingNetwork.subnetId: names {len(existing.subnet_ids)} subnet(s) and ocp:machineNetwork "
            f"({_shown(c.machine_networks)}) {len(families)} famil{'ies' if len(families) > 1 else 'y'}: name one subnet "
            f"per family, in machineNetwork's order, e.g. subnetId: [{', '.join(f'subnet-v{f}' for f in families)}]"
        )
    if families == (6,):
        if openstack.external_network is not None:
            yield (
                "ocp:openstack.externalNetwork: an IPv6-only cluster takes no external network (the installer: \"Cannot "
                "set external network on Single Stack IPv6 cluster\"): its routers and floating IPs are IPv4, and the "
                "nodes have no IPv4 address to map. Remove it, and reach the VIPs over IPv6 routing"
            )
        chosen = planned_floating_ips(c)
        if chosen:
            yield (
                f"{', '.join(chosen)}: floating IPs are IPv4, and an IPv6-only cluster has no IPv4 address for them to map "
                "to (the installer refuses an external network there): write none (bootstrap.helper.floatingIp: false), "
                "and run Pulumi where it reaches the machine network"
            )
    if families == (6, 4) and openstack.mode == "standalone":
        yield (
            f"ocp:machineNetwork: {_shown(c.machine_networks)} lists IPv6 first, and standalone mode installs with platform: "
            "none, where the installer takes dual-stack only with IPv4 as the primary family (\"IPv4 addresses must be "
            "listed before IPv6 addresses\"; it allows IPv6 first on platform: openstack): list IPv4 first in "
            "machineNetwork, clusterNetwork, serviceNetwork and the VIPs, or use mode: integrated"
        )
    if existing is not None and existing.router and families[0] == 6:
        yield (
            "ocp:openstack.existingNetwork.router: the router's gateway and floating IPs are IPv4, and the primary family "
            "of ocp:machineNetwork is IPv6: leave router out, and route the subnets yourself"
        )
    yield from _sources_of_the_families(c)


def _sources_of_the_families(c: Any) -> Iterable[str]:
    """Sources of a family no node has an address in would open nothing: a typo, or a missing family."""
    openstack, families = c.openstack, set(c.families)
    for key in ("apiAllowedCidrs", "ingressAllowedCidrs", "nodePortAllowedCidrs"):
        name = {"apiAllowedCidrs": "api_allowed_cidrs", "ingressAllowedCidrs": "ingress_allowed_cidrs"}.get(key, "node_port_allowed_cidrs")
        stray = [source for source in getattr(openstack, name) if source.version not in families]
        if stray and name in openstack.model_fields_set:
            yield (
                f"ocp:openstack.{key}: {_shown(stray)} is IPv{stray[0].version}, and no node has an address of that family "
                f"(ocp:machineNetwork {_shown(c.machine_networks)}): remove it"
            )
    cidr = openstack.ssh_allowed_cidr
    if cidr is not None and cidr.version not in families:
        yield (
            f"ocp:openstack.sshAllowedCidr: {cidr} is IPv{cidr.version}, and the bootstrap and its helper have no address "
            f"of that family (ocp:machineNetwork {_shown(c.machine_networks)}): write a source of its families"
        )


def _ipv4_only_sources(c: Any) -> Iterable[str]:
    """An IPv4-only stack: IPv6 sources open nothing (no node has an IPv6 address)."""
    if c.platform != "openstack" or c.openstack is None or c.families != (4,):
        return
    yield from _sources_of_the_families(c)


def _slots_of_two_families(c: Any) -> Iterable[str]:
    if len(c.families) == 2 and not c.integrated and c.workers.max_count > DUAL_STACK_MAX_WORKER_SLOTS:
        yield (
            f"ocp:workers.maxCount: {c.workers.max_count} reserved worker slots with two address families: every node's "
            f"CoreDNS lists each slot in both families, and past {DUAL_STACK_MAX_WORKER_SLOTS} a master's user_data "
            f"outgrows what Nova takes: write maxCount: {DUAL_STACK_MAX_WORKER_SLOTS} or less"
        )


FAMILY_CHECKS = (
    _lists_agree,
    _ipv6_services,
    _vips_per_family,
    _libvirt_ipv4_only,
    _openstack_families,
    _ipv4_only_sources,
    _slots_of_two_families,
)
