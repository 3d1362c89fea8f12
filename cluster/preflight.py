"""Preflight: is this cloud able to hold this stack? Pure Python: cloud facts in, problems out.

components/openstack/preflight.py reads the facts (cluster/cloud_facts.py) with pulumi-openstack
invokes before any cloud resource registers; the problems (one per shortfall, naming the key as
the user writes it) stop the program, all at once. The capacity checks (quotas, server groups)
are in cluster/preflight_capacity.py, the networks' in cluster/preflight_networks.py; libvirt's one
check of this machine in cluster/libvirt_host.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from ipaddress import IPv4Address

from cluster.addresses import AddressPlan
from cluster.bootstrap_credential import member_role_problem, plain_http_catalog_identity
from cluster.cloud_facts import (
    COMPUTE_MINIMUM,
    CONTROL_PLANE_MINIMUM,
    PROBE_COMMAND,
    TAG_EXTENSIONS,
    CloudFacts,
    Endpoint,
    Existing,
    Flavor,
    GlanceImage,
    Image,
    Network,
    Probe,
    Quota,
    Subnet,
    Wanted,
    machine_api_images,
    parse_probe,
    public_endpoint,
    servers,
    wanted,
    where,
)
from cluster.config import ClusterConfig
from cluster.libvirt_host import libvirt_host_problems, libvirt_is_local
from cluster.preflight_groups import group_problems
from cluster.preflight_capacity import anti_affinity, footprint, quotas, server_group_members
from cluster.preflight_zones import affinity_across_zones, anti_affinity_in_zones
from cluster.preflight_networks import mtu_problem, network_problems, network_warnings

# The names the program and the tests import from here.
__all__ = [
    "PROBE_COMMAND",
    "TAG_EXTENSIONS",
    "CloudFacts",
    "Endpoint",
    "Existing",
    "Flavor",
    "Image",
    "Network",
    "Probe",
    "Quota",
    "Subnet",
    "Wanted",
    "boot_images",
    "footprint",
    "image_warnings",
    "libvirt_host_problems",
    "libvirt_is_local",
    "mirror_warnings",
    "mtu_problem",
    "network_warnings",
    "problems",
    "parse_probe",
    "public_endpoint",
    "wanted",
]


def problems(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> list[str]:
    """Every shortfall of the cloud for this stack, one message each."""
    found: list[str] = []
    for check in (
        _flavors, _etcd_disk, _images, _listed_images, _image_endpoint, _identity, _external_network, _floating_ips, network_problems, _zones,
        _volume_zones, _volume_types, _tags, quotas, server_group_members, anti_affinity, affinity_across_zones, anti_affinity_in_zones,
    ):  # fmt: skip
        found += check(config, plan, facts)
    found += group_problems(config, facts.security_groups, facts.probe_failure, where(facts))
    return list(dict.fromkeys(found))


def _flavors(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    checked: set[tuple[str, str]] = set()
    minimums = {
        "ocp:masters.flavor": ("the control plane", CONTROL_PLANE_MINIMUM, config.masters.root_volume),
        "ocp:bootstrap.flavor": ("the bootstrap", CONTROL_PLANE_MINIMUM, config.masters.root_volume),
        "ocp:workers.flavor": ("a worker", COMPUTE_MINIMUM, config.workers.root_volume),
        "ocp:bootstrap.helper.flavor": ("the helper", None, None),
    }
    for use in servers(config, plan.master_count, plan.worker_count, plan.bootstrap_enabled, config.uses_helper):
        if (use.key, use.flavor) in checked:
            continue
        checked.add((use.key, use.flavor))
        flavor = facts.flavors.get(use.flavor)
        if flavor is None:
            yield f"{use.key}: flavor \"{use.flavor}\" does not exist {where(facts)}: name one from `openstack flavor list`"
            continue
        what, minimum, root_volume = minimums[use.key]
        if minimum is None or flavor.baremetal:  # Ironic's sizes are often placeholders: the installer skips them too
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


def _etcd_disk(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    """ocp:masters.etcdDisk is part of the masters' flavor's ephemeral disk (Nova: OS-FLV-EXT-DATA:ephemeral), which
    Nova refuses to exceed; a flavor without one has nothing to put etcd on."""
    etcd, name = config.masters.etcd_disk, config.masters.flavor
    flavor = facts.flavors.get(name) if etcd is not None and name else None
    if flavor is None or flavor.ephemeral_gb is None or flavor.ephemeral_gb >= etcd.size:
        return  # a missing flavor is _flavors' to report; an unread size the probe's failure
    has = f"an ephemeral disk of {flavor.ephemeral_gb} GiB" if flavor.ephemeral_gb else "no ephemeral disk"
    yield (
        f'ocp:masters.etcdDisk.size: {etcd.size} GiB, but flavor "{name}" (ocp:masters.flavor) has {has}, of which '
        f"etcd's local disk is a part: name a flavor with at least {etcd.size} GiB of ephemeral disk (`openstack flavor "
        f"create --ephemeral {etcd.size} ...`, on a cloud whose Nova keeps ephemeral disks on the compute hosts, not in "
        "Ceph), or a smaller etcdDisk.size"
    )


def _gib(mib: int) -> str:
    return f"{mib / 1024:g} GiB"


def _image_keys(config: ClusterConfig, plan: AddressPlan) -> list[tuple[str, str]]:
    """(key, image name) of each image the stack's servers boot."""
    keyed = [("ocp:masters.image", config.masters.openstack_image)]
    if plan.worker_count:
        keyed.append(("ocp:workers.image", config.workers.openstack_image))
    if plan.bootstrap_enabled:
        keyed.append(("ocp:bootstrap.image" if config.bootstrap.image else "ocp:masters.image", config.bootstrap_image))
        if config.uses_helper:
            keyed.append(("ocp:bootstrap.helper.image", config.bootstrap.helper.image))
    return list(dict.fromkeys(keyed))


def boot_images(facts: CloudFacts) -> dict[str, str]:
    """image name -> the ID the servers boot: of the active images of that name, the newest (the
    provider's image_name refuses two, so the servers name it by ID). Only names read and found."""
    return {name: image.ids[0] for name, image in facts.images.items() if image is not None and image.ids}


def image_warnings(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> list[str]:
    """One warning per image name that several active images have: which one the servers boot. Where
    the Machine API reads the name (integrated mode), a running cluster is warned that its MachineSets
    fail instead (a new stack is refused: _listed_images)."""
    warnings, seen = [], set(_listed_twice(config, facts))
    if facts.existing.cluster:
        warnings += [_machine_api_warning(keys, name, copies, facts) for name, (keys, copies) in _listed_twice(config, facts).items()]
    for key, name in _image_keys(config, plan):
        image = facts.images.get(name)
        if image is None or len(image.ids) < 2 or name in seen:
            continue
        seen.add(name)
        newest, others = image.ids[0], ", ".join(image.ids[1:])
        warnings.append(
            f'{key}: {len(image.ids)} active images are named "{name}" {where(facts)}: the servers boot the newest, {newest} '
            f"(not {others}). Delete or rename the others (`openstack image set --name <new name> <ID>`) to make it the only one"
        )
    return warnings


def _listed_twice(config: ClusterConfig, facts: CloudFacts) -> dict[str, tuple[list[str], tuple[GlanceImage, ...]]]:
    """name -> (its keys, every image Glance lists under it) of the names the Machine API's side reads
    (cloud_facts.machine_api_images) that more than one image has, in whatever status or visibility."""
    found: dict[str, tuple[list[str], tuple[GlanceImage, ...]]] = {}
    for key, name in machine_api_images(config):
        copies = (facts.listed_images or {}).get(name, ())
        if len(copies) > 1:
            found.setdefault(name, ([], copies))[0].append(key)
    return found


def _shown_images(copies: Iterable[GlanceImage], facts: CloudFacts) -> str:
    def said(image: GlanceImage) -> str:
        details = [image.status or "no status"]
        if image.visibility and image.visibility != "private":
            details.append(image.visibility)
        if image.project and facts.project and image.project != facts.project:
            details.append(f"project {image.project}'s")
        return f"{image.id} ({', '.join(details)})"

    return ", ".join(said(image) for image in copies)


_RENAME = (
    "Delete or rename the others (`openstack image set --name <new name> <ID>`; an image of another project only its "
    "owner can), or upload the image under a name no other image has and write that name"
)


def _listed_images(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    """Integrated mode, a new cluster: a name the installer or the Machine API would find several images
    under. Both list Glance by name as gophercloud's images.IDFromName does (GET /v2/images?name=: every
    status but killed, public and shared images too) and take one match only: the installer's validation
    (pkg/asset/installconfig/openstack/validation/cloudinfo.go getImage, at v1.4.19-ec5) then gives up its
    checks of the cloud with a warning, and machine-api-provider-openstack (its CAPO compute service's
    getImageIDFromName) refuses every machine a MachineSet makes. A running cluster is warned (image_warnings)."""
    if facts.existing.cluster:
        return
    for name, (keys, copies) in _listed_twice(config, facts).items():
        yield (
            f'{", ".join(keys)}: {len(copies)} images are named "{name}" {where(facts)} as Glance lists them to this project '
            f"(every status, public and shared ones too: {_shown_images(copies, facts)}). In integrated mode the installer finds "
            "the cluster's image (clusterOSImage) by that name and, finding several, skips every check it makes of the cloud, "
            "and the Machine API refuses the name on every machine a MachineSet makes (\"too many images with the name\"). "
            + _RENAME
        )


def _machine_api_warning(keys: list[str], name: str, copies: tuple[GlanceImage, ...], facts: CloudFacts) -> str:
    active = [image.id for image in copies if image.status == "active"]
    booted = f"; the servers this program makes boot the newest active one, {active[0]}" if active else ""
    return (
        f'{", ".join(keys)}: {len(copies)} images are named "{name}" {where(facts)} as Glance lists them to this project '
        f"({_shown_images(copies, facts)}): the Machine API refuses the name on every machine a MachineSet makes (\"too many "
        f"images with the name\"), so scaling up a MachineSet (this stack's example ones name it) fails{booted}. " + _RENAME
        + " (servers made from then on boot it; running ones keep theirs)"
    )


def _images(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    for key, name in _image_keys(config, plan):
        image = facts.images.get(name)
        if image is None:
            yield f"{key}: image \"{name}\" does not exist {where(facts)}: upload it (`openstack image create`) or name one from `openstack image list`"
        elif not image.active:
            yield f"{key}: image \"{name}\" is not active (its upload has not completed): wait for it, or upload it again"


def mirror_warnings(config: ClusterConfig) -> list[str]:
    """An IPv6-only cluster pulls its release through a mirror it reaches over IPv6 (upstream's
    docs/user/openstack/deploy_single_stack_ipv6_cluster.md: "A local image registry needs to be pre-configured
    to mirror the images over IPv6"): without ocp:imageDigestSources the nodes would ask the release's own
    registries, which they reach over IPv4 only. A warning: a registry of yours may serve IPv6 as its source."""
    if config.families != (6,) or config.image_digest_sources:
        return []
    lookups = " and `oc adm release info` reads the release through them where `pulumi up` runs" if not config.integrated else ""
    return [
        "ocp:imageDigestSources: the machine network is IPv6 only and no mirror is named: the nodes pull the release "
        "(quay.io/openshift-release-dev) from its own registries, which an IPv6-only node does not reach. Mirror the "
        "release to a registry the nodes reach over IPv6 (`oc adm release mirror`) and name it: imageDigestSources: "
        "[{source: quay.io/openshift-release-dev/ocp-release, mirrors: [<mirror>/ocp/release]}, {source: "
        "quay.io/openshift-release-dev/ocp-v4.0-art-dev, mirrors: [<mirror>/ocp/release]}] (the cluster gets them as an "
        f"ImageDigestMirrorSet{lookups}; docs/openstack.md, \"A disconnected install\")"
    ]


def plain_http_image_endpoint(config: ClusterConfig, url: str) -> str | None:
    """The refusal of an http image endpoint, where the bootstrap would send its token and fetch
    its whole config, unless the stack accepts it (ocp:bootstrap.allowHttpImageEndpoint)."""
    if not config.uses_glance or config.bootstrap.allow_http_image_endpoint or not url.lower().startswith("http://"):
        return None
    return (
        f"ocp:bootstrap.allowHttpImageEndpoint: the service catalog's public image endpoint {url} is plain http: the "
        "bootstrap would send its Keystone token there and fetch its whole config (the cluster's CA keys, the pull "
        "secret) unencrypted. Ask the cloud's operator for an https endpoint, or write ocp:bootstrap.configSource: "
        "helper; on a lab cloud whose network you trust, write ocp:bootstrap.allowHttpImageEndpoint: true"
    )


def _image_endpoint(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    if not config.uses_glance or facts.catalog is None:
        return
    url = public_endpoint(facts.catalog, "image", facts.region)
    if url:
        refusal = plain_http_image_endpoint(config, url)
        if refusal:
            yield refusal
        return
    region = f' in region "{facts.region}"' if facts.region else ""
    yield (
        f"ocp:bootstrap.configSource: glance, but the service catalog {where(facts)} has no public image "
        f"endpoint{region}, where the bootstrap would fetch its config: write configSource: helper (a helper VM on "
        "the machine network serves it)"
    )


def _identity(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    """The bootstrap's application credential: made at an https identity endpoint, naming `member`."""
    url = public_endpoint(facts.catalog, "identity", facts.region) if facts.catalog is not None else None
    refusals = [plain_http_catalog_identity(config, url) if url else None]
    if facts.roles is not None:
        refusals.append(member_role_problem(config, facts.roles, facts.project))
    yield from filter(None, refusals)


def _external_network(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    for name, external in facts.external_networks.items():
        if external is None:
            yield f"ocp:openstack.externalNetwork: network \"{name}\" does not exist {where(facts)}: name one from `openstack network list --external`"
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
                f"ocp:openstack.{key}: floating IP {choice} does not exist {where(facts)}: allocate it "
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
                yield f"ocp:{role}.availabilityZones: zone \"{zone}\" does not exist {where(facts)} (compute zones: {known})"


def _volume_zones(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    for role in ("masters", "workers"):
        root_volume = getattr(config, role).root_volume
        for zone in root_volume.availability_zones if root_volume else ():
            if zone not in facts.volume_zones:
                known = ", ".join(facts.volume_zones) or "none"
                yield (
                    f"ocp:{role}.rootVolume.availabilityZones: zone \"{zone}\" does not exist {where(facts)} "
                    f"(volume zones: {known}; `openstack availability zone list --volume`)"
                )


def _volume_types(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    for role in ("masters", "workers"):
        root_volume = getattr(config, role).root_volume
        if root_volume and root_volume.type and root_volume.type not in facts.volume_types:
            known = ", ".join(facts.volume_types) or "none"
            yield f"ocp:{role}.rootVolume.type: volume type \"{root_volume.type}\" does not exist {where(facts)} (types: {known})"
        for number, name in enumerate(root_volume.types if root_volume else ()):
            if name not in facts.volume_types:
                known = ", ".join(facts.volume_types) or "none"
                yield f"ocp:{role}.rootVolume.types[{number}]: volume type \"{name}\" does not exist {where(facts)} (types: {known})"


def _tags(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    if config.integrated and facts.network_extensions is None:
        yield (
            f"ocp:openstack.mode: integrated, and reading Neutron's extensions {where(facts)} failed ({facts.probe_failure or 'no reason given'}): "
            f"the preflight runs `OS_CLOUD={facts.cloud} venv/bin/python -m cluster.cloud_probe` in the project (run it to see), "
            f"which needs openstacksdk in the program's venv (pip install -r requirements.txt) and \"{facts.cloud}\" in clouds.yaml"
        )
    elif config.integrated and not set(TAG_EXTENSIONS) & set(facts.network_extensions or ()):
        yield (
            f"ocp:openstack.mode: integrated, but Neutron {where(facts)} has no tag extension (standard-attr-tag): "
            "the cluster's Machine API and cloud provider find its network and subnet by tag. Ask the cloud's "
            "operators to enable it, or use mode: standalone"
        )
