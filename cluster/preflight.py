"""Preflight: is this cloud able to hold this stack? Pure Python: cloud facts in, problems out.

libvirt (`libvirt_host_problems`, the one check that reads this machine: it opens the device):
a kvm domain needs a usable /dev/kvm where it runs; when ocp:libvirt.uri names this machine,
components/program.py checks it with the local files, before any resource.

components/openstack/preflight.py reads the facts with pulumi-openstack invokes before any
cloud resource registers; the problems (one per shortfall, naming the key as the user writes
it) stop the program, all at once.

What this stack adds (quotas): the cloud's usage already counts the stack's own resources on
a later run, so the need is the stack's footprint minus the part of it that already exists
(`Existing`, read from the cloud by the infra ID: its server groups' members, its bootstrap
and helper ports, its tagged ports). Neutron security groups, rules and floating IPs, and
Cinder volumes and gigabytes have no usage invoke in pulumi-openstack 5.5.3: for those the
whole footprint is held against the limit (a necessary condition, day 1 and day 2 alike).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from ipaddress import IPv4Address
from pathlib import Path
from urllib.parse import urlsplit

from cluster.addresses import AddressPlan
from cluster.config import ClusterConfig, RoleBase
from cluster.firewall import security_groups

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
# pulumi-openstack 5.5.3 has no invoke for Neutron's extensions: the openstack CLI lists them.
EXTENSIONS_COMMAND = "openstack extension list --network -c Alias -f value"
# Nor for Nova's hosts: one line per hypervisor, its state (up/down). Admin-only by Nova's
# default policy: for a member the cloud reports no hosts.
HOSTS_COMMAND = "openstack hypervisor list -c State -f value"


@dataclass(frozen=True)
class Flavor:
    vcpus: int
    ram_mib: int
    disk_gb: int


@dataclass(frozen=True)
class Image:
    # Glance sets checksum and size when an upload completes; queued or uploading images have neither.
    active: bool


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
    # Members of each worker server group by number (<infraID>-worker, -worker-1, ...); () before any.
    worker_groups: tuple[int, ...] = ()
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
    network_extensions: tuple[str, ...] | None  # None: the openstack CLI could not list them
    quotas: Mapping[str, Quota]
    existing: Existing = field(default_factory=Existing)
    # The token's service catalog and the provider's region ("": none); None: not read.
    catalog: tuple[Endpoint, ...] | None = None
    region: str = ""
    # Compute hosts that are up, where the cloud reports them (hard anti-affinity only); None: not reported.
    compute_hosts: int | None = None


# What the stack needs of each quota: (key, unit for messages, where the limit is set).
QUOTAS = {
    "instances": ("instances", "compute"),
    "cores": ("vCPUs", "compute"),
    "ram": ("MiB RAM", "compute"),
    "server_groups": ("server groups", "compute"),
    "ports": ("ports", "network"),
    "security_groups": ("security groups", "network"),
    "security_group_rules": ("security group rules", "network"),
    "floating_ips": ("floating IPs", "network"),
    "volumes": ("volumes", "volume"),
    "gigabytes": ("GB of volumes", "volume"),
}


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


@dataclass(frozen=True)
class _Use:
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


def _servers(config: ClusterConfig, masters: int, workers: int, bootstrap: bool, helper: bool) -> list[_Use]:
    uses = [
        _Use("ocp:masters.flavor", config.masters.flavor or "", masters, _volume(config.masters)),
        _Use("ocp:workers.flavor", config.workers.flavor or "", workers, _volume(config.workers)),
    ]
    key, flavor = _bootstrap_flavor(config)
    uses.append(_Use(key, flavor, int(bootstrap), _volume(config.masters)))
    uses.append(_Use("ocp:bootstrap.helper.flavor", config.bootstrap.helper.flavor, int(helper), 0))
    return [use for use in uses if use.count]


def footprint(
    config: ClusterConfig, plan: AddressPlan, flavors: Mapping[str, Flavor | None], existing: Existing | None = None
) -> dict[str, int]:
    """What the stack holds of each quota: as configured, or (`existing`) the part the cloud already has."""
    if existing is None:
        masters, workers, bootstrap = plan.master_count, plan.worker_count, plan.bootstrap_enabled
        helper, cluster = bootstrap and config.uses_helper, True
    else:
        masters, workers = existing.masters, existing.workers
        bootstrap, helper, cluster = existing.bootstrap, existing.helper, existing.cluster
    uses = _servers(config, masters, workers, bootstrap, helper)
    sized = [(use, flavors.get(use.flavor)) for use in uses]
    # The helper's and the bootstrap's groups are there while they are.
    present = {"helper": helper, "bootstrap": bootstrap}
    groups = {name: rules for name, rules in security_groups(config, plan).items() if present.get(name, True)}
    openstack = config.openstack
    created_fips = sum(choice == "create" for choice in (openstack.api_floating_ip, openstack.ingress_floating_ip)) if openstack else 0
    # With a helper floating IP `pulumi up` runs outside: the bootstrap gets one too (for the gather).
    helper_fip = int(helper and config.bootstrap.helper.floating_ip) + int(bootstrap and config.bootstrap.helper.floating_ip)
    # The nodes' and VIPs' ports carry the infra ID's tag (what `existing` counts); the ports
    # Nova makes on the extra networks (one per node and network) and the network's own do not.
    tagged_ports = sum(use.count for use in uses) + (2 if cluster else 0) if existing is None else existing.ports
    extra_ports = (masters + workers + int(bootstrap)) * len(openstack.additional_network_ids) if openstack else 0
    network_ports = NETWORK_OWN_PORTS if cluster and openstack and openstack.existing_network is None else 0
    counts = {
        "instances": sum(use.count for use in uses),
        "cores": sum(use.count * flavor.vcpus for use, flavor in sized if flavor),
        "ram": sum(use.count * flavor.ram_mib for use, flavor in sized if flavor),
        # Both roles' groups, whatever the worker count; a deployed group shows only by its members.
        "server_groups": 1 + len(config.workers.server_group_members(workers))
        if existing is None
        else int(masters > 0) + (sum(1 for members in existing.worker_groups if members) if existing.worker_groups else int(workers > 0)),
        "ports": tagged_ports + extra_ports + network_ports,
        "security_groups": len(groups) if cluster else 0,
        "security_group_rules": sum(len(rules) + DEFAULT_RULES_PER_GROUP for rules in groups.values()) if cluster else 0,
        "floating_ips": (created_fips if cluster else 0) + int(helper_fip),
        "volumes": sum(use.count for use in uses if use.volume_gb),
        "gigabytes": sum(use.count * use.volume_gb for use in uses),
    }
    return counts


def wanted(config: ClusterConfig, plan: AddressPlan) -> Wanted:
    """The names to look up: only what this configuration uses."""
    flavors = [use.flavor for use in _servers(config, plan.master_count, plan.worker_count, plan.bootstrap_enabled, config.uses_helper)]
    images = [config.masters.openstack_image]
    if plan.worker_count:
        images.append(config.workers.openstack_image)
    if plan.bootstrap_enabled:
        images += [config.bootstrap_image] + ([config.bootstrap.helper.image] if config.uses_helper else [])
    openstack = config.openstack
    assert openstack is not None
    addresses = [str(a) for a in (openstack.api_floating_ip, openstack.ingress_floating_ip) if isinstance(a, IPv4Address)]
    roles = (config.masters, config.workers)
    return Wanted(
        flavors=tuple(dict.fromkeys(name for name in flavors if name)),
        images=tuple(dict.fromkeys(images)),
        external_networks=(openstack.external_network,) if openstack.external_network else (),
        floating_ips=tuple(addresses),
        zones=any(role.availability_zones for role in roles),
        volume_zones=any(role.root_volume and role.root_volume.availability_zones for role in roles),
        volume_types=any(role.root_volume and role.root_volume.type for role in roles),
        extensions=config.integrated,
        hosts=any(role.server_group_policy == "anti-affinity" for role in roles),
    )


def problems(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> list[str]:
    """Every shortfall of the cloud for this stack, one message each."""
    found: list[str] = []
    for check in (_flavors, _images, _image_endpoint, _external_network, _floating_ips, _zones, _volume_zones, _volume_types, _tags, _quotas, _server_group_members, _anti_affinity):
        found += check(config, plan, facts)
    return list(dict.fromkeys(found))


def _where(facts: CloudFacts) -> str:
    return f'in cloud "{facts.cloud}"'


def _flavors(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    checked: set[tuple[str, str]] = set()
    minimums = {
        "ocp:masters.flavor": ("the control plane", CONTROL_PLANE_MINIMUM, config.masters.root_volume),
        "ocp:bootstrap.flavor": ("the bootstrap", CONTROL_PLANE_MINIMUM, config.masters.root_volume),
        "ocp:workers.flavor": ("a worker", COMPUTE_MINIMUM, config.workers.root_volume),
        "ocp:bootstrap.helper.flavor": ("the helper", None, None),
    }
    for use in _servers(config, plan.master_count, plan.worker_count, plan.bootstrap_enabled, config.uses_helper):
        if (use.key, use.flavor) in checked:
            continue
        checked.add((use.key, use.flavor))
        flavor = facts.flavors.get(use.flavor)
        if flavor is None:
            yield f"{use.key}: flavor \"{use.flavor}\" does not exist {_where(facts)}: name one from `openstack flavor list`"
            continue
        what, minimum, root_volume = minimums[use.key]
        if minimum is None:
            continue
        vcpus, ram_mib, disk_gb = minimum
        shortfalls = []
        if flavor.vcpus < vcpus:
            shortfalls.append(f"has {flavor.vcpus} vCPUs; {what} needs at least {vcpus}")
        if flavor.ram_mib < ram_mib:
            shortfalls.append(f"has {_gib(flavor.ram_mib)} RAM; {what} needs at least {_gib(ram_mib)}")
        if root_volume is None and flavor.disk_gb < disk_gb:
            shortfalls.append(
                f"has a {flavor.disk_gb} GB disk; {what} needs at least {disk_gb} GB (or boot from a volume: rootVolume.size)"
            )
        for shortfall in shortfalls:
            yield f"{use.key}: flavor \"{use.flavor}\" {shortfall}: name a larger flavor (`openstack flavor list`)"


def _gib(mib: int) -> str:
    return f"{mib / 1024:g} GiB"


def _images(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    keyed = [("ocp:masters.image", config.masters.openstack_image)]
    if plan.worker_count:
        keyed.append(("ocp:workers.image", config.workers.openstack_image))
    if plan.bootstrap_enabled:
        keyed.append(("ocp:bootstrap.image" if config.bootstrap.image else "ocp:masters.image", config.bootstrap_image))
        if config.uses_helper:
            keyed.append(("ocp:bootstrap.helper.image", config.bootstrap.helper.image))
    for key, name in dict.fromkeys(keyed):
        image = facts.images.get(name)
        if image is None:
            yield f"{key}: image \"{name}\" does not exist {_where(facts)}: upload it (`openstack image create`) or name one from `openstack image list`"
        elif not image.active:
            yield f"{key}: image \"{name}\" is not active (its upload has not completed): wait for it, or upload it again"


def _image_endpoint(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    if not config.uses_glance or facts.catalog is None or public_endpoint(facts.catalog, "image", facts.region):
        return
    region = f' in region "{facts.region}"' if facts.region else ""
    yield (
        f"ocp:bootstrap.configSource: glance, but the service catalog {_where(facts)} has no public image "
        f"endpoint{region}, where the bootstrap would fetch its config: write configSource: helper (a helper VM on "
        "the machine network serves it)"
    )


def _external_network(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    for name, external in facts.external_networks.items():
        if external is None:
            yield f"ocp:openstack.externalNetwork: network \"{name}\" does not exist {_where(facts)}: name one from `openstack network list --external`"
        elif not external:
            yield (
                f"ocp:openstack.externalNetwork: network \"{name}\" is not external: routers and floating IPs need "
                "one from `openstack network list --external`"
            )


def _floating_ips(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    openstack = config.openstack
    assert openstack is not None
    for key, choice in (("apiFloatingIp", openstack.api_floating_ip), ("ingressFloatingIp", openstack.ingress_floating_ip)):
        if not isinstance(choice, IPv4Address):
            continue
        port = facts.floating_ips.get(str(choice))
        if port is None:
            yield (
                f"ocp:openstack.{key}: floating IP {choice} does not exist {_where(facts)}: allocate it "
                "(`openstack floating ip create <external network>`) or write 'create'"
            )
        elif port and port not in facts.existing.vip_port_ids:
            yield (
                f"ocp:openstack.{key}: floating IP {choice} is associated with port {port}: name a free one "
                "(`openstack floating ip list --status DOWN`) or write 'create'"
            )


def _zones(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    for role in ("masters", "workers"):
        for zone in getattr(config, role).availability_zones:
            if zone not in facts.compute_zones:
                known = ", ".join(facts.compute_zones) or "none"
                yield f"ocp:{role}.availabilityZones: zone \"{zone}\" does not exist {_where(facts)} (compute zones: {known})"


def _volume_zones(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    for role in ("masters", "workers"):
        root_volume = getattr(config, role).root_volume
        for zone in root_volume.availability_zones if root_volume else ():
            if zone not in facts.volume_zones:
                known = ", ".join(facts.volume_zones) or "none"
                yield (
                    f"ocp:{role}.rootVolume.availabilityZones: zone \"{zone}\" does not exist {_where(facts)} "
                    f"(volume zones: {known}; `openstack availability zone list --volume`)"
                )


def _volume_types(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    for role in ("masters", "workers"):
        root_volume = getattr(config, role).root_volume
        if root_volume and root_volume.type and root_volume.type not in facts.volume_types:
            known = ", ".join(facts.volume_types) or "none"
            yield f"ocp:{role}.rootVolume.type: volume type \"{root_volume.type}\" does not exist {_where(facts)} (types: {known})"


def _tags(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    if config.integrated and facts.network_extensions is None:
        yield (
            "ocp:openstack.mode: integrated, and `openstack extension list --network` failed: install the openstack "
            f"CLI (python-openstackclient) with \"{facts.cloud}\" in clouds.yaml; `pulumi destroy` needs it too"
        )
    elif config.integrated and not set(TAG_EXTENSIONS) & set(facts.network_extensions or ()):
        yield (
            f"ocp:openstack.mode: integrated, but Neutron {_where(facts)} has no tag extension (standard-attr-tag): "
            "the cluster's Machine API and cloud provider find its network and subnet by tag. Ask the cloud's "
            "operators to enable it, or use mode: standalone"
        )


def _quotas(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    whole = footprint(config, plan, facts.flavors)
    held = footprint(config, plan, facts.flavors, facts.existing)
    for name, (unit, service) in QUOTAS.items():
        quota = facts.quotas.get(name)
        if quota is None or quota.limit == UNLIMITED:
            continue
        if quota.used is None:
            need, free = whole[name], quota.limit
            if need > free:
                yield (
                    f"ocp:openstack.cloud: the stack needs {need} {unit} and the {service} quota {_where(facts)} "
                    f"allows {free}: raise it (`openstack quota set --{_flag(name)} {need} <project>`) or make the stack smaller"
                )
            continue
        need = max(0, whole[name] - held[name])
        free = max(0, quota.limit - quota.used)
        if need > free:
            yield (
                f"ocp:openstack.cloud: the stack adds {need} {unit} and the {service} quota {_where(facts)} "
                f"has {free} left ({quota.used} of {quota.limit} in use): raise it "
                f"(`openstack quota set --{_flag(name)} {quota.used + need} <project>`) or make the stack smaller"
            )


def _server_group_members(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    """Nova's server_group_members quota holds per group (10 by default): past it the next server
    is refused halfway through `pulumi up`. And a running worker never changes group: Nova
    cannot move a server, so the worker would be replaced."""
    quota = facts.quotas.get("server_group_members")
    limit = UNLIMITED if quota is None else quota.limit
    workers = config.workers
    raise_it = "raise the quota (`openstack quota set --server-group-members {need} <project>`)"
    if limit != UNLIMITED and plan.master_count > limit:
        yield (
            f"ocp:masters.count: {plan.master_count} masters share one server group, and the compute quota "
            f"server_group_members {_where(facts)} allows {limit} per group: " + raise_it.format(need=plan.master_count)
        )
    fullest = max(workers.server_group_members(plan.worker_count))
    if limit != UNLIMITED and fullest > limit:
        if workers.server_group_size is None:
            yield (
                f"ocp:workers.count: {plan.worker_count} workers in one server group, and the compute quota "
                f"server_group_members {_where(facts)} allows {limit} per group (Nova would refuse worker {limit + 1} "
                f"halfway through `pulumi up`): set ocp:workers.serverGroupSize: {limit} to spread them over groups of "
                f"at most {limit}, or " + raise_it.format(need=fullest)
            )
        else:
            yield (
                f"ocp:workers.serverGroupSize: {workers.server_group_size} workers per server group, and the compute "
                f"quota server_group_members {_where(facts)} allows {limit} per group: set it to {limit} or less, or "
                + raise_it.format(need=fullest)
            )
    running = _without_empty_tail(facts.existing.worker_groups)
    if sum(running) and running != _without_empty_tail(workers.server_group_members(sum(running))):
        keep = (
            f"unset it or write {sum(running)} or more"
            if len(running) == 1
            else f"write serverGroupSize: {running[0]}"
        )
        yield (
            f"ocp:workers.serverGroupSize: the {sum(running)} running workers are in server groups of "
            f"{list(running)} members; with {workers.server_group_size or 'it unset'} some would change group, and Nova "
            f"cannot move a server: they would be replaced. To keep them where they are, {keep}"
        )


def _anti_affinity(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    """Hard anti-affinity puts each member of a group on a host of its own: past the hosts there
    are, Nova refuses the next server (NoValidHost) halfway through `pulumi up`."""
    hosts = facts.compute_hosts
    if hosts is None:
        return
    fullest = {"masters": plan.master_count, "workers": max(config.workers.server_group_members(plan.worker_count))}
    for role, members in fullest.items():
        if getattr(config, role).server_group_policy == "anti-affinity" and members > hosts:
            way_out = ", or ocp:workers.serverGroupSize to at most that many" if role == "workers" else ""
            yield (
                f"ocp:{role}.serverGroupPolicy: anti-affinity puts each of the {members} {role} of a server group on "
                f"a compute host of its own, and cloud \"{facts.cloud}\" has {hosts} up: Nova would refuse the next "
                f"with NoValidHost halfway through `pulumi up`. Write soft-anti-affinity (the installer's default){way_out}"
            )


def _without_empty_tail(groups: tuple[int, ...]) -> tuple[int, ...]:
    end = len(groups)
    while end and not groups[end - 1]:
        end -= 1
    return groups[:end]


def _flag(name: str) -> str:
    return {"security_group_rules": "secgroup-rules", "security_groups": "secgroups", "floating_ips": "floating-ips", "server_groups": "server-groups"}.get(
        name, name
    )


# QEMU opens it for every kvm domain; read at call time, so tests can point it elsewhere.
KVM_DEVICE = Path("/dev/kvm")
# The URIs whose QEMU runs on this machine: no host (qemu:///system, qemu:///session, any query).
LOCAL_SCHEMES = ("qemu", "qemu+unix")


def libvirt_is_local(uri: str) -> bool:
    parts = urlsplit(uri)
    return parts.scheme in LOCAL_SCHEMES and not parts.netloc


def kvm_unusable(device: Path, system: bool) -> str | None:
    """Why QEMU could not run a kvm domain with this device, or None. With qemu:///system QEMU
    runs as libvirt's own user (usually in the kvm group): a device this user may not open is
    no proof it cannot."""
    try:
        os.close(os.open(device, os.O_RDWR | os.O_CLOEXEC))
    except FileNotFoundError:
        return f"there is no {device}"
    except OSError as error:
        if system and error.errno in (errno.EACCES, errno.EPERM) and os.geteuid() != 0:
            return None
        return f"{device} cannot be opened read-write ({error.strerror})"
    return None


def libvirt_host_problems(config: ClusterConfig, kvm_device: Path | None = None) -> list[str]:
    """A kvm domain on this machine without usable KVM fails when QEMU starts, midway through `pulumi up`."""
    settings = config.libvirt
    if settings is None or settings.domain_type != "kvm" or not libvirt_is_local(settings.uri):
        return []
    device = kvm_device or KVM_DEVICE
    why = kvm_unusable(device, urlsplit(settings.uri).path == "/system")
    if why is None:
        return []
    return [
        f"ocp:libvirt.domainType: kvm (the default), but {why} on this machine, where ocp:libvirt.uri "
        f"{settings.uri} runs the domains: set ocp:libvirt.domainType: qemu (software emulation, far slower; "
        "docs/libvirt.md) or enable KVM (virtualisation on in the firmware, the kvm_intel or kvm_amd module "
        f"loaded, nested virtualisation on a VM, read-write access to {device})"
    ]
