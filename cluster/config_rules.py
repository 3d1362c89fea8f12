"""The rules that read several keys of the stack at once (masters against the platform, zones
against volumes, addresses against the networks...).

Pure Python, no Pulumi. Each check reads a few top-level keys of a config and yields messages.
When some keys are invalid on their own, load_config (cluster/config.py) still runs every
check that reads only valid ones (see Partial), so one run reports every problem.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from ipaddress import IPv4Address, IPv4Network
from typing import Any

from pydantic.alias_generators import to_camel

from cluster import address_layout


def _other_platform(c: Any) -> Iterable[str]:
    other = _OTHER[c.platform]
    if getattr(c, other) is not None:
        yield f"ocp:{other} is set but ocp:platform is {c.platform}: remove ocp:{other}"


_OTHER = {"openstack": "libvirt", "libvirt": "openstack"}
_OPENSTACK_ROLE_KEYS = (
    "flavor", "image", "root_volume", "availability_zones", "server_group_policy", "server_group_size",
    "additional_security_group_ids",
)
_LIBVIRT_ROLE_KEYS = ("vcpus", "memory_mib", "disk_gib")


def _role_keys_of_the_platform(c: Any) -> Iterable[str]:
    wrong = _LIBVIRT_ROLE_KEYS if c.platform == "openstack" else _OPENSTACK_ROLE_KEYS
    for role in ("masters", "workers"):
        for name in wrong:
            if name in getattr(c, role).model_fields_set:
                yield f"ocp:{role}.{to_camel(name)} is a {_OTHER[c.platform]} setting and ocp:platform is {c.platform}: remove it"


def _openstack_section(c: Any) -> Iterable[str]:
    if c.platform == "openstack" and c.openstack is None:
        yield "ocp:openstack is required with platform openstack: set at least externalNetwork"


def _flavors(c: Any) -> Iterable[str]:
    if c.platform != "openstack":
        return
    for role, minimum in (("masters", "4 vCPUs and 16 GiB RAM"), ("workers", "2 vCPUs and 8 GiB RAM")):
        section = getattr(c, role)
        if section.flavor is None and (role == "masters" or section.count > 0):
            yield f"ocp:{role}.flavor is required on OpenStack: name a flavor with at least {minimum}"


def _external_network(c: Any) -> Iterable[str]:
    if c.platform != "openstack" or c.openstack is None or c.openstack.external_network is not None:
        return
    needs_external = [
        key
        for key, needed in (
            ("router (no existingNetwork, or existingNetwork.router)", c.openstack.routed_by_us()),
            ("apiFloatingIp", c.openstack.api_floating_ip != "none"),
            ("ingressFloatingIp", c.openstack.ingress_floating_ip != "none"),
            ("bootstrap.helper.floatingIp", c.bootstrap.helper.floating_ip and c.bootstrap.enabled),
        )
        if needed
    ]
    if needs_external:
        yield (
            "ocp:openstack.externalNetwork is required for " + ", ".join(needs_external)
            + ": write the name of the external network, e.g. externalNetwork: external"
        )


def _helper_ssh(c: Any) -> Iterable[str]:
    reached_from_outside = c.bootstrap.enabled and c.bootstrap.helper.floating_ip
    if c.platform == "openstack" and c.openstack is not None and reached_from_outside:
        if c.openstack.ssh_allowed_cidr is None:
            why = (
                "the bootstrap helper has a floating IP: `pulumi up` copies the bootstrap config onto it over SSH"
                if c.bootstrap.config_source == "helper"
                else "the bootstrap has a floating IP (ocp:bootstrap.helper.floatingIp, true by default): "
                "`openshift-install gather bootstrap` reaches it over SSH"
            )
            yield (
                f"ocp:openstack.sshAllowedCidr is required when {why} from outside the machine network. Write the "
                "address Pulumi runs from, e.g. sshAllowedCidr: 203.0.113.7/32 (or set ocp:bootstrap.helper.floatingIp "
                "false and run Pulumi inside the machine network)"
            )


# The widest source SSH may come from: a stack file that names half the Internet (or all of it)
# is a mistake the pack (policy/) would otherwise meet only at `pulumi preview`.
SSH_WIDEST_PREFIX = 8


def _ssh_cidr_narrow(c: Any) -> Iterable[str]:
    cidr = c.openstack.ssh_allowed_cidr if c.platform == "openstack" and c.openstack is not None else None
    if cidr is not None and cidr.prefixlen < SSH_WIDEST_PREFIX:
        yield (
            f"ocp:openstack.sshAllowedCidr: {cidr} admits SSH to the bootstrap (and its helper) from {cidr.num_addresses:,} "
            f"addresses; /{SSH_WIDEST_PREFIX} is the widest allowed. Write the address Pulumi and `openshift-install "
            "gather bootstrap` run from, e.g. sshAllowedCidr: 203.0.113.7/32"
        )


def _libvirt_settings(c: Any) -> Iterable[str]:
    if c.platform != "libvirt":
        return
    if c.libvirt is None or c.libvirt.image is None:
        yield (
            "ocp:libvirt.image is required with platform libvirt: write the path (on the machine that runs "
            "Pulumi) or the http(s) URL of an RHCOS qcow2 for QEMU, e.g. "
            "image: /var/lib/libvirt/images/rhcos-qemu.x86_64.qcow2"
        )
    for field, key in (
        ("helper", "helper"),
        ("config_source", "configSource"),
        ("credential", "credential"),
        ("allow_http_image_endpoint", "allowHttpImageEndpoint"),
    ):
        if field in c.bootstrap.model_fields_set:
            yield (
                f"ocp:bootstrap.{key} is an OpenStack setting and ocp:platform is libvirt: remove it "
                "(libvirt passes the bootstrap its full ignition directly)"
            )
    for name in ("flavor", "image"):
        if name in c.bootstrap.model_fields_set:
            yield (
                f"ocp:bootstrap.{name} is an OpenStack setting and ocp:platform is libvirt: remove it "
                "(the bootstrap is sized like the masters: ocp:masters.vcpus, memoryMib, diskGib; "
                "its image is ocp:libvirt.image)"
            )


def _openstack_tags(c: Any) -> Iterable[str]:
    if c.platform == "libvirt" and "tags" in c.model_fields_set:
        yield "ocp:tags is an OpenStack setting and ocp:platform is libvirt: remove it"


def _workers_within_reserve(c: Any) -> Iterable[str]:
    if c.workers.count > c.workers.max_count:
        yield (
            f"ocp:workers.count: {c.workers.count} is more than ocp:workers.maxCount {c.workers.max_count}: "
            "lower the count or raise workers.maxCount (it reserves addresses; the subnet's DHCP pool shrinks accordingly)"
        )


def _zones(c: Any) -> Iterable[str]:
    zones, count = c.masters.availability_zones, c.masters.count
    if len(zones) > count:
        yield (
            f"ocp:masters.availabilityZones lists {len(zones)} zones for {count} masters: {', '.join(zones[count:])} "
            f"would hold none. List at most {count} (masters go round-robin over the list)"
        )


def _root_volume_zones(c: Any) -> Iterable[str]:
    # The installer's rules: with compute zones a root volume names its zones too; node i's
    # volume zone pairs with its compute zone, or one zone serves all.
    for role in ("masters", "workers"):
        section = getattr(c, role)
        volume_zones = section.root_volume.availability_zones if section.root_volume else ()
        if section.root_volume and section.availability_zones and not volume_zones:
            yield (
                f"ocp:{role}.rootVolume.availabilityZones: required with ocp:{role}.availabilityZones (the installer "
                "refuses root volumes without zones when servers have zones): list the Cinder zones "
                "(`openstack availability zone list --volume`), one for all nodes or one per compute zone, e.g. [nova]"
            )
        if len(volume_zones) > 1 and len(volume_zones) != len(section.availability_zones):
            yield (
                f"ocp:{role}.rootVolume.availabilityZones lists {len(volume_zones)} zones and "
                f"ocp:{role}.availabilityZones {len(section.availability_zones)}: node N's volume is made in the "
                "zone at the same place as its server's, so list one volume zone for all nodes or as many as compute zones"
            )


def _added_at_the_installer_run(c: Any) -> Iterable[str]:
    # Both go into the installer's manifests when the program runs it; assetsDir configs are made already.
    if c.installer.extra_manifests is not None and c.installer.assets_dir is not None:
        yield (
            "ocp:installer.extraManifests goes with installer.binary only: configs in ocp:installer.assetsDir are "
            "made already, so add the manifests to the openshift/ directory of your own `openshift-install create "
            "manifests` before `create ignition-configs`, and remove extraManifests"
        )
    if c.ntp_servers and c.installer.assets_dir is not None:
        yield (
            "ocp:ntpServers: masters and workers get them from the MachineConfigs 99-master-chrony and "
            "99-worker-chrony that the program adds when it runs the installer, and configs in "
            "ocp:installer.assetsDir are made already: add those MachineConfigs to the openshift/ directory of your "
            "own `openshift-install create manifests` (OpenShift's docs show them) and leave ntpServers out, or set "
            "installer.binary"
        )


def _fips_ssh_keys(c: Any) -> Iterable[str]:
    # The installer's rule: FIPS mode takes only RSA and ECDSA keys.
    if c.fips:
        kinds = {line.split()[0] for line in c.ssh_key.splitlines() if line.strip()}
        others = sorted(kind for kind in kinds if kind != "ssh-rsa" and not kind.startswith("ecdsa-sha2-nistp"))
        if others:
            yield (
                f"ocp:sshKey: {', '.join(others)} keys cannot be used with ocp:fips true (the installer refuses them): "
                "write RSA or ECDSA keys ('ssh-keygen -t ecdsa'), or leave fips out"
            )


def _machine_network_clear(c: Any) -> Iterable[str]:
    # The cluster's own networks (ocp:clusterNetwork, ocp:serviceNetwork) and OVN-Kubernetes' internal ones.
    network = c.machine_network
    for other, what in (
        (c.cluster_network.cidr, "the cluster network (pod addresses, ocp:clusterNetwork)"),
        (c.service_network, "the service network (ocp:serviceNetwork)"),
        *_OVN_NETWORKS,
    ):
        if network.overlaps(other):
            yield (
                f"ocp:machineNetwork: {network} overlaps {what} {other}: the nodes could not reach each other "
                "there; pick a network outside it, e.g. 10.0.0.0/16 or 192.168.100.0/24"
            )


_OVN_NETWORKS = (
    (IPv4Network("100.64.0.0/16"), "OVN-Kubernetes' join network"),
    (IPv4Network("100.88.0.0/16"), "OVN-Kubernetes' transit network"),
    (IPv4Network("169.254.0.0/16"), "the link-local range (metadata service, OVN masquerade)"),
)


def _cluster_networks_apart(c: Any) -> Iterable[str]:
    pods, services = c.cluster_network.cidr, c.service_network
    if pods.overlaps(services):
        yield (
            f"ocp:serviceNetwork: {services} overlaps ocp:clusterNetwork {pods}: services and pods need "
            "separate ranges, e.g. serviceNetwork: 172.30.0.0/16"
        )
    for other, what in _OVN_NETWORKS:
        for key, network in (("clusterNetwork", pods), ("serviceNetwork", services)):
            if network.overlaps(other):
                yield f"ocp:{key}: {network} overlaps {what} {other}: pick a range outside it"


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
        if volume is not None and volume.type is None:
            yield (
                f"ocp:{role}.rootVolume.type is required in integrated mode (the installer refuses a root "
                "volume without one): name a volume type from `openstack volume type list`"
            )


def _addresses(c: Any) -> Iterable[str]:

    yield from address_layout.placement_problems(
        c.machine_network, c.cluster_name, c.api_vip, c.ingress_vip, c.workers.max_count
    )


def _nameservers_outside_the_cluster(c: Any) -> Iterable[str]:

    network = c.machine_network
    api_vip, ingress_vip = address_layout.effective_vips(network, c.api_vip, c.ingress_vip)
    ours = {
        **address_layout.reserved_addresses(network, c.cluster_name, c.workers.max_count),
        api_vip: "the API VIP",
        ingress_vip: "the Ingress VIP",
    }
    ours.pop(address_layout.gateway(network), None)  # a router or the libvirt host may well serve DNS
    for server in c.nameservers:
        if server in ours:
            yield (
                f"ocp:nameservers: {server} is {ours[server]}: the nodes' CoreDNS forwards there and would ask "
                "itself; write the upstream DNS servers"
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
        if address in c.machine_network:
            yield (
                f"ocp:openstack.{key}: {address} is in ocp:machineNetwork {c.machine_network}: a floating IP is an "
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
    for key, network in (
        *((f"additionalNetworkIds[{i}]", each) for i, each in enumerate(c.openstack.additional_network_ids)),
        *((f"additionalNetworks[{i}].network", each.network) for i, each in enumerate(c.openstack.additional_networks)),
    ):
        if network in seen:
            yield (
                f"ocp:openstack.{key}: {network} is also ocp:openstack.{seen[network]}: a node gets one port per "
                "network; list it once (in additionalNetworks, with the pools it goes to)"
            )
        seen.setdefault(network, key)
    existing = c.openstack.existing_network
    if existing is not None and existing.network_id in seen:
        yield (
            f"ocp:openstack.{seen[existing.network_id]}: {existing.network_id} is ocp:openstack.existingNetwork's "
            "network, which every node is on already: remove it from the extra networks"
        )


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


CHECKS: tuple[Callable[[Any], Iterable[str]], ...] = (
    _other_platform,
    _role_keys_of_the_platform,
    _openstack_section,
    _flavors,
    _external_network,
    _helper_ssh,
    _ssh_cidr_narrow,
    _floating_ips,
    _libvirt_settings,
    _openstack_tags,
    _workers_within_reserve,
    _zones,
    _root_volume_zones,
    _fips_ssh_keys,
    _added_at_the_installer_run,
    _machine_network_clear,
    _cluster_networks_apart,
    _integrated_only,
    _what_integrated_mode_needs,
    _addresses,
    _nameservers_outside_the_cluster,
    _extra_networks,
    _existing_network_router,
    _user_managed_lb,
)


class _Invalid(Exception):
    """A check read a key that is invalid on its own (already reported): skip the check."""


class Partial:
    """The top-level keys that are valid on their own, for checks when the whole is not."""

    def __init__(self, values: dict[str, Any], fields_set: set[str]):
        self._values = values
        self.model_fields_set = fields_set

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise _Invalid(name) from None


def cross_key_problems(config: Any) -> list[str]:
    problems = []
    for check in CHECKS:
        try:
            problems += list(check(config))
        except _Invalid:
            continue
    return problems


# --------------------------------------------------------------------------- reading the stack's keys
