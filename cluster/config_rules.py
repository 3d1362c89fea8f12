"""The rules that read several keys of the stack at once (masters against the platform, zones
against volumes, addresses against the networks...).

Pure Python, no Pulumi. Each check reads a few top-level keys of a config and yields messages.
When some keys are invalid on their own, load_config (cluster/config.py) still runs every
check that reads only valid ones (see Partial), so one run reports every problem.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from ipaddress import IPv4Network
from typing import Any

from pydantic.alias_generators import to_camel

from cluster import address_layout, cloud_provider_config
from cluster.config_rules_families import FAMILY_CHECKS
from cluster.config_rules_openstack import OPENSTACK_CHECKS


def _other_platform(c: Any) -> Iterable[str]:
    other = _OTHER[c.platform]
    if getattr(c, other) is not None:
        yield f"ocp:{other} is set but ocp:platform is {c.platform}: remove ocp:{other}"


_OTHER = {"openstack": "libvirt", "libvirt": "openstack"}
_OPENSTACK_ROLE_KEYS = (
    "flavor", "image", "root_volume", "availability_zones", "server_group_policy", "server_group_size",
    "additional_security_group_ids", "server_group_per_zone", "etcd_disk",
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
        ("allow_http_identity_endpoint", "allowHttpIdentityEndpoint"),
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


def _etcd_disk(c: Any) -> Iterable[str]:
    if c.platform == "openstack" and c.masters.etcd_disk is not None and c.masters.root_volume is None:
        yield (
            "ocp:masters.etcdDisk: needs ocp:masters.rootVolume: etcd moves to the flavor's ephemeral disk while the "
            "root boots from a Cinder volume (openshift-docs, Deploying on OpenStack with rootVolume and etcd on local "
            "disk); add rootVolume: {size: 100, type: <a Cinder volume type>} to ocp:masters, or remove etcdDisk"
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
        types = section.root_volume.types if section.root_volume else ()
        if types and section.root_volume.type is not None:
            yield (
                f"ocp:{role}.rootVolume.type and ocp:{role}.rootVolume.types are both set (the installer takes only "
                "one): write type for one volume type everywhere, or types for one per compute zone"
            )
        if len(types) > 1 and len(types) != len(section.availability_zones):
            yield (
                f"ocp:{role}.rootVolume.types lists {len(types)} volume types and ocp:{role}.availabilityZones "
                f"{len(section.availability_zones)} zones: node N's volume takes the type at the same place as its "
                "zone (as the installer pairs types[i] with zone i), so list one type for all nodes or one per compute zone"
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
    if c.installer.cloud_provider_config is not None and c.installer.assets_dir is not None:
        yield (
            "ocp:installer.cloudProviderConfig goes with installer.binary only: configs in ocp:installer.assetsDir are "
            "made already, so merge the settings into manifests/cloud-provider-config.yaml of your own `openshift-install "
            "create manifests` before `create ignition-configs`, and remove cloudProviderConfig"
        )
    yield from cloud_provider_config.problems(c.installer.cloud_provider_config, c.platform == "openstack" and c.openstack is not None and c.openstack.mode == "integrated")


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
    for network, other, what in (
        (network, other, what)
        for network in c.machine_networks
        for other, what in (
            *((entry.cidr, "the cluster network (pod addresses, ocp:clusterNetwork)") for entry in c.cluster_networks),
            *((each, "the service network (ocp:serviceNetwork)") for each in c.service_networks),
            *_OVN_NETWORKS,
        )
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
    for pods in (entry.cidr for entry in c.cluster_networks):
        for services in c.service_networks:
            if pods.overlaps(services):
                example = "172.30.0.0/16" if services.version == 4 else "fd02::/112"
                yield (
                    f"ocp:serviceNetwork: {services} overlaps ocp:clusterNetwork {pods}: services and pods need "
                    f"separate ranges, e.g. serviceNetwork: {example}"
                )
    for other, what in _OVN_NETWORKS:
        for key, network in (
            *(("clusterNetwork", entry.cidr) for entry in c.cluster_networks),
            *(("serviceNetwork", each) for each in c.service_networks),
        ):
            if network.overlaps(other):
                yield f"ocp:{key}: {network} overlaps {what} {other}: pick a range outside it"


def _addresses(c: Any) -> Iterable[str]:

    networks = c.machine_networks
    for network, api_vip, ingress_vip in zip(
        networks, address_layout.per_family(networks, c.api_vips), address_layout.per_family(networks, c.ingress_vips)
    ):
        yield from address_layout.placement_problems(network, c.cluster_name, api_vip, ingress_vip, c.workers.max_count, c.user_managed_lb)


def _nameservers_outside_the_cluster(c: Any) -> Iterable[str]:

    ours = {}
    networks = c.machine_networks
    for network, api, ingress in zip(
        networks, address_layout.per_family(networks, c.api_vips), address_layout.per_family(networks, c.ingress_vips)
    ):
        api_vip, ingress_vip = address_layout.effective_vips(network, api, ingress)
        ours.update(address_layout.reserved_addresses(network, c.cluster_name, c.workers.max_count))
        ours.update({api_vip: "the API VIP", ingress_vip: "the Ingress VIP"})
        ours.pop(address_layout.gateway(network), None)  # a router or the libvirt host may well serve DNS
    for server in c.nameservers:
        if server in ours:
            yield (
                f"ocp:nameservers: {server} is {ours[server]}: the nodes' CoreDNS forwards there and would ask "
                "itself; write the upstream DNS servers"
            )


CHECKS: tuple[Callable[[Any], Iterable[str]], ...] = (
    _other_platform,
    _role_keys_of_the_platform,
    _openstack_section,
    _flavors,
    *OPENSTACK_CHECKS,
    _libvirt_settings,
    _etcd_disk,
    _openstack_tags,
    _workers_within_reserve,
    _zones,
    _root_volume_zones,
    _fips_ssh_keys,
    _added_at_the_installer_run,
    *FAMILY_CHECKS,
    _machine_network_clear,
    _cluster_networks_apart,
    _addresses,
    _nameservers_outside_the_cluster,
)


class _Invalid(Exception):
    """A check read a key that is invalid on its own (already reported): skip the check."""


class Partial:
    """The top-level keys that are valid on their own, for checks when the whole is not."""

    def __init__(self, values: dict[str, Any], fields_set: set[str], model: type | None = None):
        self._values = values
        self.model_fields_set = fields_set
        self._model = model

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            pass
        derived = getattr(self._model, name, None)  # the model's properties (machine_network: the primary's)
        if isinstance(derived, property):
            return derived.fget(self)
        raise _Invalid(name)


def cross_key_problems(config: Any) -> list[str]:
    problems = []
    for check in CHECKS:
        try:
            problems += list(check(config))
        except _Invalid:
            continue
    return problems


# --------------------------------------------------------------------------- reading the stack's keys
