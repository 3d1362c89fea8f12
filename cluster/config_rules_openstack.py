"""The rules across keys that concern OpenStack alone: the external network, SSH to the bootstrap,
integrated mode's needs, floating IPs, the networks the nodes join, the user's balancer. Pure
Python; cluster/config_rules.py runs them with the rest."""

from __future__ import annotations

from collections.abc import Iterable
from ipaddress import IPv4Address
from typing import Any

from pydantic.alias_generators import to_camel, to_snake

from cluster.exposure import public_addresses, too_wide, world_port


def _external_network(c: Any) -> Iterable[str]:
    if c.platform != "openstack" or c.openstack is None or c.openstack.external_network is not None:
        return
    needs_external = [
        key
        for key, needed in (
            ("router (no existingNetwork, or existingNetwork.router)", c.openstack.routed_by_us()),
            ("apiFloatingIp", c.openstack.api_floating_ip != "none"),
            ("ingressFloatingIp", c.openstack.ingress_floating_ip != "none"),
            ("bootstrap.helper.floatingIp", c.bootstrap_floating_ip and c.bootstrap.enabled),
        )
        if needed
    ]
    if needs_external:
        yield (
            "ocp:openstack.externalNetwork is required for " + ", ".join(needs_external)
            + ": write the name of the external network, e.g. externalNetwork: external"
        )


def _helper_ssh(c: Any) -> Iterable[str]:
    reached_from_outside = c.bootstrap.enabled and c.bootstrap_floating_ip
    if c.platform == "openstack" and c.openstack is not None and reached_from_outside:
        if c.openstack.ssh_allowed_cidr is None:
            why = (
                "the bootstrap helper has a floating IP: `pulumi up` copies the bootstrap config onto it over SSH"
                if c.bootstrap.config_source == "helper"
                else "the bootstrap has a floating IP (ocp:bootstrap.helper.floatingIp, true by default but on a network given without a router): "
                "`openshift-install gather bootstrap` reaches it over SSH"
            )
            yield (
                f"ocp:openstack.sshAllowedCidr is required when {why} from outside the machine network. Write the "
                "address Pulumi runs from, e.g. sshAllowedCidr: 203.0.113.7/32 (or set ocp:bootstrap.helper.floatingIp "
                "false and run Pulumi inside the machine network)"
            )


def _ssh_cidr_narrow(c: Any) -> Iterable[str]:
    """SSH is no port for the world: a source admitting more than a /8 of public IPv4 space (a /32 of
    IPv6, or IPv4 clients through a translator or tunnel) is refused, measured as the other keys are
    (cluster/exposure.py): a stack file naming half the Internet would otherwise meet only the pack."""
    cidr = c.openstack.ssh_allowed_cidr if c.platform == "openstack" and c.openstack is not None else None
    wide = too_wide([cidr]) if cidr is not None else []
    if wide:
        yield (
            f"ocp:openstack.sshAllowedCidr: {cidr} admits SSH to the bootstrap (and its helper) from {', '.join(wide)}. "
            "Write the address Pulumi and `openshift-install gather bootstrap` run from, e.g. sshAllowedCidr: 203.0.113.7/32"
        )


# What each key opens beyond the machine network (cluster/firewall.py; tests/cluster/test_firewall.py
# holds them equal). sshAllowedCidr is measured alone above (SSH is never a port for the world).
OPENED_BY = {
    "apiAllowedCidrs": (("tcp", 6443, 6443),),
    "ingressAllowedCidrs": (("tcp", 80, 80), ("tcp", 443, 443)),
    "nodePortAllowedCidrs": (("tcp", 30000, 32767), ("udp", 30000, 32767)),
}


def _allowed_cidrs_measured(c: Any) -> Iterable[str]:
    """A key that opens a port clients need not reach from anywhere may not, added up, admit the
    world: measured (cluster/exposure.py), not spelt, so 0.0.0.0/1 is refused as 0.0.0.0/0 is."""
    if c.platform != "openstack" or c.openstack is None:
        return
    for key, opened in OPENED_BY.items():
        ports = [f"{protocol.upper()} {low}-{high}" for protocol, low, high in opened if not world_port(protocol, low, high)]
        sources = getattr(c.openstack, to_snake(key))
        # The machine network is always admitted too (cluster/firewall.py), as the pack counts it.
        wide = too_wide([*c.machine_networks, *sources]) if ports else []
        if wide:
            public = public_addresses(c.machine_networks)
            machine = f" with ocp:machineNetwork {', '.join(map(str, c.machine_networks))}" if public[4] or public[6] else ""
            yield (
                f"ocp:openstack.{key}: [{', '.join(map(str, sources))}]{machine} admits {' and '.join(wide)} to "
                f"{' and '.join(ports)}: only TCP 6443, 80, 443 and ICMP may be open that wide (the policy pack "
                f"refuses it too). Name your clients' networks, e.g. {key}: [203.0.113.0/24], or leave {key} out "
                "(the machine network only)"
            )


def _integrated_only(c: Any) -> Iterable[str]:
    if c.openstack is None or c.openstack.mode == "integrated":
        return
    if c.openstack.ca_bundle is not None:
        yield (
            "ocp:openstack.caBundle is for the cluster's own calls to the cloud (mode integrated); in "
            "standalone mode the cluster does not talk to OpenStack: remove it"
        )


def _what_integrated_mode_needs(c: Any) -> Iterable[str]:
    if c.openstack is None or c.openstack.mode != "integrated":
        return
    if c.user_managed_lb and c.openstack.existing_network is None:
        yield (
            "ocp:loadBalancer: UserManaged in integrated mode needs ocp:openstack.existingNetwork (the installer's "
            "controlPlanePort): your balancer fronts the VIPs on a subnet you bring; name its network and subnet there"
        )
    for name in sorted(c.networking.model_fields_set - {"router_nodes"}):
        yield (
            f"ocp:networking.{to_camel(name)} sets this program's own keepalived, haproxy or CoreDNS (standalone "
            "mode, libvirt); in integrated mode the machine-config-operator runs them: remove it"
        )
    for role in ("masters", "workers"):
        volume = getattr(c, role).root_volume
        if volume is not None and volume.type is None and not volume.types:
            yield (
                f"ocp:{role}.rootVolume.type is required in integrated mode (the installer refuses a root "
                "volume without one): name a volume type from `openstack volume type list` (or one per zone in types)"
            )


def _floating_ips(c: Any) -> Iterable[str]:
    if c.openstack is None:
        return
    chosen = {
        key: address
        for key, address in (("apiFloatingIp", c.openstack.api_floating_ip), ("ingressFloatingIp", c.openstack.ingress_floating_ip))
        if isinstance(address, IPv4Address)
    }
    for key, address in chosen.items():
        inside = next((n for n in c.machine_networks if n.version == address.version and address in n), None)
        if inside is not None:
            yield (
                f"ocp:openstack.{key}: {address} is in ocp:machineNetwork {inside}: a floating IP is an "
                "address of the external network (`openstack floating ip list`), or write 'create'"
            )
    if len(chosen) == 2 and chosen["apiFloatingIp"] == chosen["ingressFloatingIp"]:
        yield (
            f"ocp:openstack.ingressFloatingIp: {chosen['ingressFloatingIp']} is also apiFloatingIp: a floating IP "
            "maps to one port, so each VIP needs its own; write another address or 'create'"
        )


def _extra_networks(c: Any) -> Iterable[str]:
    if c.openstack is None:
        return
    seen: dict[str, str] = {}
    for key, entry in c.openstack.keyed_extra_networks():
        if entry.network in seen:
            yield (
                f"{key}: {entry.network} is also {seen[entry.network]}: a node gets one port per "
                "network; list it once (in additionalNetworks, with the pools it goes to)"
            )
        seen.setdefault(entry.network, key)
    existing = c.openstack.existing_network
    if existing is not None and existing.network_id in seen:
        yield (
            f"{seen[existing.network_id]}: {existing.network_id} is ocp:openstack.existingNetwork's "
            "network, which every node is on already: remove it from the extra networks"
        )


def _unfiltered_masters(c: Any) -> Iterable[str]:
    """A master's port without port security is open to anything on its network, the machine config
    server (22623, 22624 in standalone) and etcd included: only where the stack says so by name."""
    if c.openstack is None:
        return
    for index, entry in enumerate(c.openstack.additional_networks):
        key = f"ocp:openstack.additionalNetworks[{index}]"
        if not entry.port_security and "masters" in (entry.pools or ()) and not entry.unfiltered_master_ports:
            yield (
                f"{key}.pools: masters on {entry.network}, whose ports have no port security: anything on that network would "
                "reach every port of the control plane, the machine config server (which serves the worker config with the "
                "pull secret and the node-bootstrapper token) and etcd included. Write pools: [workers]; or, if the masters "
                f"must be on it unfiltered, say so: unfilteredMasterPorts: true"
            )
        if entry.unfiltered_master_ports and entry.pools is not None and "masters" not in entry.pools:
            yield f"{key}.unfilteredMasterPorts: pools has no masters, so no master has a port on {entry.network}: remove it"


def _existing_network_router(c: Any) -> Iterable[str]:
    existing = c.openstack.existing_network if c.openstack is not None else None
    if existing is not None and existing.router and c.openstack.external_network is None:
        yield (
            "ocp:openstack.existingNetwork.router: true needs ocp:openstack.externalNetwork, the router's gateway: "
            "name it, or leave router out where the subnet is routed already or needs no floating IPs"
        )


def _user_managed_lb(c: Any) -> Iterable[str]:
    if not c.user_managed_lb:
        return
    for name in sorted(c.networking.model_fields_set & {"api_vrid", "ingress_vrid", "advert_int"}):
        yield (
            f"ocp:networking.{to_camel(name)} sets this program's keepalived, and with ocp:loadBalancer: UserManaged "
            "your balancer holds the VIPs and the nodes run no keepalived: remove it"
        )
    if c.openstack is not None:
        for key in ("apiFloatingIp", "ingressFloatingIp"):
            choice = getattr(c.openstack, key.replace("FloatingIp", "_floating_ip"))
            if choice != "none":
                yield (
                    f"ocp:openstack.{key}: with ocp:loadBalancer: UserManaged no VIP port is made here for a "
                    "floating IP to point at: give your balancer its own public address, and write none"
                )


OPENSTACK_CHECKS = (
    _external_network,
    _helper_ssh,
    _ssh_cidr_narrow,
    _allowed_cidrs_measured,
    _floating_ips,
    _integrated_only,
    _what_integrated_mode_needs,
    _extra_networks,
    _unfiltered_masters,
    _existing_network_router,
    _user_managed_lb,
)
