"""What the preflight reads of a cloud (flavors, images, quotas, what the stack already holds)
and what it must look up for a stack. Pure Python; the checks are in cluster/preflight.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from ipaddress import IPv4Address
from typing import Any

from cluster.addresses import AddressPlan
from cluster.config import ClusterConfig, RoleBase

# OpenShift's minimums (installer docs and its validation).
CONTROL_PLANE_MINIMUM = (4, 16384, 25)  # vCPUs, RAM MiB, disk GB
COMPUTE_MINIMUM = (2, 8192, 25)
# Neutron adds two egress rules (IPv4, IPv6) to every group it creates; they count against the quota.
DEFAULT_RULES_PER_GROUP = 2
# Ports a network this stack makes holds itself: the router's interface, the DHCP agent's.
NETWORK_OWN_PORTS = 2
# Network extension aliases under which Neutron tags networks, subnets and ports.
TAG_EXTENSIONS = ("standard-attr-tag", "tag")
UNLIMITED = -1
# pulumi-openstack 5.5.3 has no invoke for Neutron's extensions nor for Nova's hosts, and its
# network data source neither gives port security nor names the networks a name matches:
# cluster/cloud_probe.py reads them with openstacksdk, run by the program's own Python (OCP_PYTHON)
# in the project directory, OS_CLOUD naming the clouds.yaml entry, PROBE_NETWORKS the networks
# and subnets to read (JSON), where the stack names any.
PROBE_COMMAND = 'exec "$OCP_PYTHON" -m cluster.cloud_probe'
PROBE_NETWORKS = "OCP_PROBE_NETWORKS"
# Pods need IPv6's minimum MTU (1280); OVN-Kubernetes' Geneve overlay takes 100 bytes of the node network's.
GENEVE_OVERHEAD = 100
MINIMUM_NETWORK_MTU = 1280 + GENEVE_OVERHEAD


# The flavor extra spec that marks an Ironic (bare-metal) flavor, whose sizes are often placeholders: the
# installer reads it (pkg/asset/installconfig/openstack/validation/cloudinfo.go, getFlavor) and then skips its
# size minimums (machinepool.go, validateFlavor: "OpenStack administrators don't always fill in accurate
# metadata for baremetal flavors").
BAREMETAL_SPEC = "baremetal"


def is_baremetal(extra_specs: Mapping[str, Any] | None) -> bool:
    """Whether a flavor's extra specs say bare metal, as the installer reads them (the string "true")."""
    return (extra_specs or {}).get(BAREMETAL_SPEC) == "true"


@dataclass(frozen=True)
class Flavor:
    vcpus: int
    ram_mib: int
    disk_gb: int
    # Extra spec baremetal=true: the size minimums do not apply (BAREMETAL_SPEC).
    baremetal: bool = False
    # Nova's OS-FLV-EXT-DATA:ephemeral: GiB of local disk beside the root (ocp:masters.etcdDisk takes part of it).
    # None: not read (pulumi-openstack's flavor invoke has no such field: cluster/cloud_probe.py reads it when asked).
    ephemeral_gb: int | None = None


@dataclass(frozen=True)
class Image:
    # Glance sets checksum and size when an upload completes; queued or uploading images have neither.
    active: bool
    # The active images of this name, newest first: the servers boot the first (the provider's
    # image_name refuses two matches, so the program names it by ID). (): not read.
    ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class GlanceImage:
    """One image as Glance lists it under a name to the project (cluster/cloud_probe.py images_of)."""

    id: str
    status: str  # active, queued, saving, deactivated, ...
    visibility: str  # private, shared, public, community
    project: str  # its owner
    created: str = ""


@dataclass(frozen=True)
class Network:
    """A Neutron network as the preflight reads it (ocp:openstack.existingNetwork, the extra networks)."""

    id: str
    name: str
    port_security: bool
    subnets: tuple[str, ...]  # IDs
    mtu: int | None
    project: str  # its owner
    cidrs: tuple[str, ...] = ()  # its subnets' CIDRs (): none, or not read


@dataclass(frozen=True)
class Subnet:
    id: str
    name: str
    network: str  # its network's ID ("": unknown, as a cloud description without subnets has it)
    cidr: str | None  # None: unknown
    # Its DHCP allocation pools, (first, last) address each: what Neutron may hand any port.
    pools: tuple[tuple[str, str], ...] = ()
    # IPv6: how ports get their addresses (slaac, dhcpv6-stateless, dhcpv6-stateful; None: not set).
    ipv6_address_mode: str | None = None
    # The routers with an interface on it, (router ID, its gateway's network ID: "" none, None another
    # project's router, not shown); None: not read.
    routers: tuple[tuple[str, str | None], ...] | None = None


@dataclass(frozen=True)
class Quota:
    limit: int  # -1: unlimited
    used: int | None = None  # None: the cloud's usage is not visible through the invokes


@dataclass(frozen=True)
class Existing:
    """What of this stack the cloud already holds (nothing on a first run)."""

    masters: int = 0
    workers: int = 0
    bootstrap: bool = False
    helper: bool = False
    ports: int = 0
    # Members of each worker server group in the order they fill (<infraID>-worker, -worker-1, ...; per zone
    # -worker-<zone>, ..., then -worker-<zone>-1, ...); () before any.
    worker_groups: tuple[int, ...] = ()
    # The masters' likewise, where they have a group per zone (() otherwise: `masters` counts them).
    master_groups: tuple[int, ...] = ()
    # The stack's own VIP ports: a given floating IP associated with one of them is in place, not taken.
    vip_port_ids: frozenset[str] = frozenset()

    @property
    def cluster(self) -> bool:
        return bool(self.masters or self.workers or self.bootstrap or self.helper or self.ports)


@dataclass(frozen=True)
class Endpoint:
    """One endpoint of the service catalog that comes with the provider's token."""

    service: str  # the service's type: image, compute, ...
    interface: str  # public, internal, admin
    region: str
    region_id: str
    url: str


def public_endpoint(catalog: Iterable[Endpoint], service: str, region: str) -> str | None:
    """The service's public URL in the provider's region (any region when it names none): the first
    match, as the provider (gophercloud) and the installer choose Glance's."""
    return next(
        (
            endpoint.url
            for endpoint in catalog
            if endpoint.service == service and endpoint.interface == "public" and (not region or region in (endpoint.region, endpoint.region_id))
        ),
        None,
    )


@dataclass(frozen=True)
class Probe:
    """What PROBE_COMMAND read: Neutron's extension aliases (None: unknown, `failure` says why),
    the compute hosts that are up (None: not reported, as to a member, or unknown), and the
    networks and subnets each name or ID asked for matches (None: not asked, or unknown)."""

    extensions: tuple[str, ...] | None
    hosts: int | None
    failure: str = ""
    networks: Mapping[str, tuple[Network, ...]] | None = None
    subnets: Mapping[str, tuple[Subnet, ...]] | None = None
    # Compute hosts up in each compute zone, where Nova shows them (its zones' details: admins by default).
    zone_hosts: Mapping[str, int] | None = None
    # Every image Glance lists under each name asked for (None: not asked, or unknown).
    images: Mapping[str, tuple[GlanceImage, ...]] | None = None
    # The ephemeral disk (GiB) of each flavor asked for (ocp:masters.etcdDisk); None: not asked, or unknown.
    ephemeral: Mapping[str, int] | None = None


def parse_probe(stdout: str | None, failure: str = "") -> Probe:
    """The probe's JSON line; `failure`: why the command itself did not run (stdout None)."""
    if stdout is None:
        return Probe(None, None, failure or "it did not run")
    try:
        answer = json.loads(stdout)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        return Probe(None, None, f"it printed {stdout.strip()[:200]!r}, not its JSON line" if stdout.strip() else "it printed nothing")
    if answer.get("error"):
        return Probe(None, None, str(answer["error"]))
    extensions, hosts = answer.get("extensions"), answer.get("hosts")
    if not _strings(extensions) or not (hosts is None or _strings(hosts)):
        return Probe(None, None, f"it printed {stdout.strip()[:200]!r}, without the extensions and hosts it lists")
    # No hypervisor listed at all is taken as not reported, as an empty listing always was.
    up = sum(state.lower() == "up" for state in hosts) if hosts else None
    try:
        networks = _matches(answer.get("networks"), _network)
        subnets = _matches(answer.get("subnets"), _subnet)
        images = _matches(answer.get("images"), _image)
    except (KeyError, TypeError, ValueError, AttributeError):
        return Probe(None, None, f"it printed {stdout.strip()[:200]!r}, with networks, subnets or images it cannot have read")
    zone_hosts = answer.get("zoneHosts")
    if not (isinstance(zone_hosts, dict) and all(isinstance(n, int) for n in zone_hosts.values())):
        zone_hosts = None
    ephemeral = answer.get("flavorEphemeral")
    if not (isinstance(ephemeral, dict) and all(isinstance(n, int) and not isinstance(n, bool) for n in ephemeral.values())):
        ephemeral = None
    return Probe(tuple(sorted(extensions)), up, networks=networks, subnets=subnets, zone_hosts=zone_hosts, images=images, ephemeral=ephemeral)


def _matches(found: Any, each: Callable[[Mapping[str, Any]], Any]) -> dict[str, tuple[Any, ...]] | None:
    if found is None:
        return None
    return {str(ref): tuple(each(item) for item in items) for ref, items in found.items()}


def _network(item: Mapping[str, Any]) -> Network:
    mtu = item.get("mtu")
    return Network(
        str(item["id"]), str(item.get("name") or ""), bool(item["portSecurity"]), tuple(str(s) for s in item.get("subnets") or ()),
        int(mtu) if mtu is not None else None, str(item.get("project") or ""), tuple(str(cidr) for cidr in item.get("cidrs") or ()),
    )


def _subnet(item: Mapping[str, Any]) -> Subnet:
    cidr = item.get("cidr")
    pools = tuple((str(first), str(last)) for first, last in item.get("pools") or ())
    mode = item.get("ipv6AddressMode")
    routers = item.get("routers")
    return Subnet(
        str(item["id"]), str(item.get("name") or ""), str(item.get("network") or ""), str(cidr) if cidr is not None else None, pools,
        str(mode) if mode is not None else None,
        tuple(sorted((str(router), None if gateway is None else str(gateway)) for router, gateway in routers.items())) if routers is not None else None,
    )


def _image(item: Mapping[str, Any]) -> GlanceImage:
    return GlanceImage(
        str(item["id"]), str(item.get("status") or ""), str(item.get("visibility") or ""), str(item.get("project") or ""), str(item.get("created") or "")
    )


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


@dataclass(frozen=True)
class CloudFacts:
    """What the preflight read; a name mapped to None was looked up and not found."""

    cloud: str
    flavors: Mapping[str, Flavor | None]
    images: Mapping[str, Image | None]
    external_networks: Mapping[str, bool | None]  # name -> is external
    floating_ips: Mapping[str, str | None]  # address -> port it is associated with ("" for none); None: not found
    compute_zones: tuple[str, ...]
    volume_zones: tuple[str, ...]
    volume_types: tuple[str, ...]
    network_extensions: tuple[str, ...] | None  # None: unknown, the probe failed (probe_failure says why)
    quotas: Mapping[str, Quota]
    existing: Existing = field(default_factory=Existing)
    # The token's service catalog and the provider's region ("": none); None: not read.
    catalog: tuple[Endpoint, ...] | None = None
    region: str = ""
    # Compute hosts that are up, where the cloud reports them (hard anti-affinity only); None: not reported.
    compute_hosts: int | None = None
    # The same in each compute zone (hard anti-affinity with zones); None: not reported.
    zone_hosts: Mapping[str, int] | None = None
    # Why cluster/cloud_probe.py could not read the cloud ("": it did, or it was not run).
    probe_failure: str = ""
    # The project the provider's token is scoped to ("": not read), and whether the token is an
    # admin's (Neutron's default policy lets an admin do on any network what a member may on its own).
    project: str = ""
    admin: bool = False
    # The token's role names (implied ones included, as Keystone lists them); None: not read.
    roles: tuple[str, ...] | None = None
    # What each network and subnet name or ID the stack gives matches (ocp:openstack.existingNetwork,
    # the extra networks); None: not read (the probe failed: probe_failure says why).
    networks: Mapping[str, tuple[Network, ...]] | None = None
    subnets: Mapping[str, tuple[Subnet, ...]] | None = None
    # The user's own security groups by ID (cluster/preflight_groups.py SecurityGroup, None: not found);
    # None: not read.
    security_groups: Mapping[str, Any] | None = None
    # Every image Glance lists under each name the Machine API reads (integrated mode: Wanted.listed_images),
    # in any status, public and shared ones too; None: not read.
    listed_images: Mapping[str, tuple[GlanceImage, ...]] | None = None
    # The external networks' IDs by name, where found.
    external_network_ids: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Wanted:
    """What the preflight must look up for this stack."""

    flavors: tuple[str, ...]
    images: tuple[str, ...]
    external_networks: tuple[str, ...]
    floating_ips: tuple[str, ...]
    zones: bool
    volume_zones: bool
    volume_types: bool
    extensions: bool
    hosts: bool = False
    # Networks and subnets by name or ID: existingNetwork's, then the extra networks.
    networks: tuple[str, ...] = ()
    subnets: tuple[str, ...] = ()
    # Image names as Glance lists them, every copy (integrated mode: those the Machine API reads by name).
    listed_images: tuple[str, ...] = ()
    # Flavors whose ephemeral disk the preflight reads (ocp:masters.etcdDisk: the masters').
    ephemeral: tuple[str, ...] = ()

    @property
    def probe(self) -> bool:
        """Whether cluster/cloud_probe.py must run."""
        return self.extensions or self.hosts or bool(self.networks or self.subnets or self.listed_images or self.ephemeral)


@dataclass(frozen=True)
class Use:
    """One role's servers: how many, what flavor, what root volume."""

    key: str  # the flavor's key, as the user writes it
    flavor: str
    count: int
    volume_gb: int  # 0: the flavor's disk


def _bootstrap_flavor(config: ClusterConfig) -> tuple[str, str]:
    if config.bootstrap.flavor:
        return "ocp:bootstrap.flavor", config.bootstrap.flavor
    return "ocp:masters.flavor", config.masters.flavor or ""


def _volume(role: RoleBase) -> int:
    return role.root_volume.size if role.root_volume else 0


def servers(config: ClusterConfig, masters: int, workers: int, bootstrap: bool, helper: bool) -> list[Use]:
    uses = [
        Use("ocp:masters.flavor", config.masters.flavor or "", masters, _volume(config.masters)),
        Use("ocp:workers.flavor", config.workers.flavor or "", workers, _volume(config.workers)),
    ]
    key, flavor = _bootstrap_flavor(config)
    uses.append(Use(key, flavor, int(bootstrap), _volume(config.masters)))
    uses.append(Use("ocp:bootstrap.helper.flavor", config.bootstrap.helper.flavor, int(helper), 0))
    return [use for use in uses if use.count]


def wanted(config: ClusterConfig, plan: AddressPlan) -> Wanted:
    """The names to look up: only what this configuration uses."""
    flavors = [use.flavor for use in servers(config, plan.master_count, plan.worker_count, plan.bootstrap_enabled, config.uses_helper)]
    images = [config.masters.openstack_image]
    if plan.worker_count:
        images.append(config.workers.openstack_image)
    if plan.bootstrap_enabled:
        images += [config.bootstrap_image] + ([config.bootstrap.helper.image] if config.uses_helper else [])
    openstack = config.openstack
    assert openstack is not None
    addresses = [str(a) for a in (openstack.api_floating_ip, openstack.ingress_floating_ip) if isinstance(a, IPv4Address)]
    roles = (config.masters, config.workers)
    existing = openstack.existing_network
    networks = ([existing.network_id] if existing else []) + [each.network for each in openstack.extra_networks]
    return Wanted(
        flavors=tuple(dict.fromkeys(name for name in flavors if name)),
        images=tuple(dict.fromkeys(images)),
        external_networks=(openstack.external_network,) if openstack.external_network else (),
        floating_ips=tuple(addresses),
        zones=any(role.availability_zones for role in roles),
        volume_zones=any(role.root_volume and role.root_volume.availability_zones for role in roles),
        volume_types=any(role.root_volume and (role.root_volume.type or role.root_volume.types) for role in roles),
        # Integrated mode: the tag extension. Extra networks: ip_allocation, for a network without a subnet.
        extensions=config.integrated or bool(openstack.extra_networks),
        hosts=any(role.server_group_policy == "anti-affinity" for role in roles),
        networks=tuple(dict.fromkeys(networks)),
        subnets=tuple(existing.subnet_ids) if existing else (),
        listed_images=tuple(dict.fromkeys(name for _, name in machine_api_images(config))),
        ephemeral=(config.masters.flavor,) if config.masters.etcd_disk is not None and config.masters.flavor else (),
    )


def machine_api_images(config: ClusterConfig) -> list[tuple[str, str]]:
    """(key, image name) of the images an integrated cluster's side finds by name, where a name several
    images share fails: the installer's clusterOSImage (ocp:masters.image: its validation lists the name with
    gophercloud's images.IDFromName, which refuses two, and then skips every check of the cloud), and the example
    MachineSets' image (ocp:workers.image: the Machine API's provider looks it up the same way on every machine
    it makes, "too many images with the name"). Standalone mode has no Machine API on OpenStack: none."""
    if not config.integrated:
        return []
    return [("ocp:masters.image", config.masters.openstack_image), ("ocp:workers.image", config.workers.openstack_image)]


def where(facts: CloudFacts) -> str:
    return f'in cloud "{facts.cloud}"'
