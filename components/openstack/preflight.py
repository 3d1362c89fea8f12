"""Preflight: read the cloud with invokes and gate every cloud resource on cluster.preflight's verdict.

The cloud is read with the providers' invoke functions, plain values, when the cluster's
components start (before any of its cloud resources). Every OpenStack resource of the cluster
is named from the infra ID, so `checked()` hands the components an infra ID that fails with the
problems: none of them registers. What the cluster already holds is found by its infra ID's tag,
so that part waits for the infra ID (`when_known`).

pulumi-openstack 5.5.3 has no invoke for Neutron's extensions nor for Nova's hosts, and its network
data source gives no port security and refuses a name two networks have: one local.run invoke
(pulumi-command) runs cluster/cloud_probe.py, openstacksdk in this program's own Python, for all
three, where the stack wants any (the tag extension in integrated mode, the hosts for hard
anti-affinity, ocp:openstack.existingNetwork and the extra networks).

Of two active Glance images of one name the servers boot the newest, by ID (the provider's
image_name refuses two matches): `check()` says which, and hands the components each ID. In
integrated mode the names the installer and the Machine API find by name are read as Glance lists
them (every status, public and shared ones too): a name several images have is refused on a new
cluster and warned of on a running one (cluster/preflight.py).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import pulumi_command as command
import pulumi_openstack as openstack

from cluster.addresses import AddressPlan, server_name
from cluster.cloud_facts import PROBE_NETWORKS, Network, Subnet, is_baremetal
from cluster.config import ClusterConfig, RoleBase
from cluster.preflight import (
    PROBE_COMMAND,
    CloudFacts,
    Endpoint,
    Existing,
    Flavor,
    Image,
    Probe,
    Quota,
    boot_images,
    image_warnings,
    mirror_warnings,
    network_warnings,
    parse_probe,
    problems,
    wanted,
)
from cluster.preflight_groups import SecurityGroup, group_keys, parse_groups
from cluster.preflight_networks import derived_families, resolved

# Where `python -m cluster.cloud_probe` finds the package: the project directory.
PROJECT = Path(__file__).resolve().parents[2]


# Glance's order for "the newest": creation time, then ID (Glance adds it to any sort), newest first.
NEWEST_FIRST = "created_at:desc"


@dataclass(frozen=True)
class Checked:
    """What the preflight gives the components: the infra ID, failing with every problem of the
    cloud for this stack, and the Glance image IDs the servers boot."""

    infra_id: pulumi.Output[str]
    provider: openstack.Provider
    # image name -> ID: the newest active image of that name, as the preflight read it.
    images: Mapping[str, str]
    # The networks and subnets the stack names (existingNetwork's, the extra networks), by the name
    # or ID written, as the preflight read them: their IDs, port security, MTU, owner. Empty when skipped.
    networks: Mapping[str, Network] = field(default_factory=dict)
    subnets: Mapping[str, Subnet] = field(default_factory=dict)
    # The machine networks (by place) whose given subnet derives each port's address from its MAC.
    derived_families: frozenset[int] = frozenset()

    def image_id(self, name: str, parent: pulumi.Resource | None = None) -> pulumi.Input[str]:
        """The ID of the image named `name` that servers boot (imageId, a volume's imageId): as the
        preflight resolved it; else (skipPreflight, or a name it did not read) looked up by the same
        rule once the infra ID is known, so that a missing image is reported once, by the preflight."""
        if name in self.images:
            return self.images[name]
        ids = openstack.images.get_image_ids_output(
            name=self.infra_id.apply(lambda _: name),
            sort=NEWEST_FIRST,
            opts=pulumi.InvokeOutputOptions(parent=parent, provider=self.provider),
        ).ids
        return ids.apply(lambda found: _newest(name, found))


def _newest(name: str, ids: list[str] | None) -> str:
    if not ids:
        raise pulumi.RunError(f'no active image named "{name}" in the cloud: upload it (`openstack image create`)')
    return ids[0]


def checked(
    config: ClusterConfig,
    plan: AddressPlan,
    provider: openstack.Provider,
    runner: command.Provider,
    infra_id: pulumi.Output[str],
) -> pulumi.Output[str]:
    """The infra ID, failing with every problem of the cloud for this stack (`check().infra_id`)."""
    return check(config, plan, provider, runner, infra_id).infra_id


def check(
    config: ClusterConfig,
    plan: AddressPlan,
    provider: openstack.Provider,
    runner: command.Provider,
    infra_id: pulumi.Output[str],
) -> Checked:
    """The preflight: reads the cloud now, warns of images several share a name, and gates the infra ID on the verdict."""
    assert config.openstack is not None
    for warning in mirror_warnings(config):  # of the stack alone: with or without the cloud's checks
        pulumi.log.warn(warning)
    if config.openstack.skip_preflight:
        pulumi.log.warn(
            "ocp:openstack.skipPreflight is true: flavors, images, networks, floating IPs, compute and volume zones, volume types, "
            "quotas and Neutron's tag extension are not checked; a shortfall shows up as a failed resource midway"
        )
        return Checked(infra_id, provider, {})
    cloud = _Cloud(provider, runner)
    facts = read_facts(config, plan, cloud)

    def verdict(infra: str | None) -> None:
        # What the cluster already holds decides between a refusal and a warning (a running cluster is warned).
        read = dataclasses.replace(facts, existing=_existing(config, plan, cloud, infra))
        for warning in image_warnings(config, plan, read) + network_warnings(config, plan, read):
            pulumi.log.warn(warning)
        found = problems(config, plan, read)
        if found:
            count = f" ({len(found)} problems)" if len(found) > 1 else ""
            raise pulumi.RunError(f"the cloud cannot hold this stack{count}:\n  " + "\n  ".join(found))

    return Checked(
        when_known(infra_id, verdict), provider, boot_images(facts), resolved(facts.networks), resolved(facts.subnets),  # type: ignore[arg-type]
        derived_families(config, facts),
    )


def when_known(infra_id: pulumi.Output[str], check: Callable[[str | None], None]) -> pulumi.Output[str]:
    """The infra ID once `check` passed on it; `check(None)` while it is unknown (a first preview:
    the installer has not run, so nothing of the cluster exists), the ID staying unknown. apply
    with run_with_unknowns hands an unknown as a placeholder that is no str."""

    def gate(value: Any) -> Any:
        known = isinstance(value, str)
        check(value if known else None)
        return value if known else infra_id

    return infra_id.apply(gate, run_with_unknowns=True)


class _Cloud:
    """Invokes through the cluster's providers. The data sources fail when nothing matches:
    called directly (not as outputs), such a failure stays ours to read as "not found"."""

    def __init__(self, provider: openstack.Provider, runner: command.Provider):
        self.provider, self.runner = provider, runner

    def get(self, function: Callable[..., Any], **args: Any) -> Any:
        provider = self.runner if function is command.local.run else self.provider
        return function(**args, opts=pulumi.InvokeOptions(provider=provider))

    def find(self, function: Callable[..., Any], **args: Any) -> Any:
        try:
            return self.get(function, **args)
        except Exception:  # noqa: BLE001 - a lookup by name that fails: not there
            return None


def read_facts(config: ClusterConfig, plan: AddressPlan, cloud: _Cloud) -> CloudFacts:
    """Everything the verdict reads but what the cluster already holds (see _existing)."""
    assert config.openstack is not None
    want = wanted(config, plan)
    flavors = [cloud.find(openstack.compute.get_flavor, name=name) for name in want.flavors]
    images = [cloud.find(openstack.images.get_image, name=name, most_recent=True) for name in want.images]
    # Every active image of each name, newest first: the servers boot the first.
    image_ids = [cloud.find(openstack.images.get_image_ids, name=name, sort=NEWEST_FIRST) for name in want.images]
    networks = [cloud.find(openstack.networking.get_network, name=name) for name in want.external_networks]
    fips = [cloud.find(openstack.networking.get_floating_ip, address=address) for address in want.floating_ips]
    scope = cloud.get(openstack.identity.get_auth_scope, name="preflight")
    project = scope.project_id
    network_quota = cloud.get(openstack.networking.get_quota_v2, project_id=project)
    volume_quota = cloud.get(openstack.blockstorage.get_quotaset_v3, project_id=project)
    project_ports = cloud.get(openstack.networking.get_port_ids, project_id=project)
    zones = cloud.get(openstack.compute.get_availability_zones).names if want.zones else ()
    volume_zones = cloud.get(openstack.blockstorage.get_availability_zones_v3).names if want.volume_zones else ()
    groups = tuple(dict.fromkeys(ref for _, ref in group_keys(config)))
    probe, read_groups = (
        _probe(config, cloud, want.networks, want.subnets, groups, want.listed_images, want.ephemeral) if want.probe or groups else (Probe((), None), None)
    )
    return CloudFacts(
        cloud=config.openstack.cloud,
        flavors={
            name: Flavor(f.vcpus or 0, f.ram or 0, f.disk or 0, baremetal=is_baremetal(f.extra_specs), ephemeral_gb=(probe.ephemeral or {}).get(name)) if f else None
            for name, f in zip(want.flavors, flavors)
        },
        images={
            name: Image(bool(i.checksum) and (i.size_bytes or 0) > 0, tuple((ids.ids if ids else None) or ())) if i else None
            for name, i, ids in zip(want.images, images, image_ids)
        },
        external_networks={name: bool(n.external) if n else None for name, n in zip(want.external_networks, networks)},
        external_network_ids={name: n.id for name, n in zip(want.external_networks, networks) if n},
        floating_ips={address: (f.port_id or "") if f else None for address, f in zip(want.floating_ips, fips)},
        compute_zones=tuple(zones or ()),
        volume_zones=tuple(volume_zones or ()),
        # Cinder keeps a per-type quota (volumes_<type>) for every volume type.
        volume_types=tuple(
            sorted(key.removeprefix("volumes_") for key in (volume_quota.volume_type_quota or {}) if key.startswith("volumes_"))
        ),
        network_extensions=probe.extensions if want.extensions else (),
        compute_hosts=probe.hosts if want.hosts else None,
        zone_hosts=probe.zone_hosts if want.hosts else None,
        probe_failure=probe.failure,
        project=project or "",
        admin="admin" in _role_names(scope),
        roles=_role_names(scope),
        networks=probe.networks if want.networks or want.subnets else {},
        subnets=probe.subnets if want.networks or want.subnets else {},
        security_groups=read_groups,
        listed_images=probe.images if want.listed_images else None,
        quotas={
            **_compute_quotas(cloud, project),
            "ports": Quota(network_quota.port, len(project_ports.ids or ())),
            "security_groups": Quota(network_quota.security_group),
            "security_group_rules": Quota(network_quota.security_group_rule),
            "floating_ips": Quota(network_quota.floatingip),
            **{
                name: Quota(limit)
                for name, limit in (("networks", network_quota.network), ("subnets", network_quota.subnet), ("routers", network_quota.router))
                if limit is not None
            },
            "volumes": Quota(volume_quota.volumes),
            "gigabytes": Quota(volume_quota.gigabytes),
        },
        catalog=catalog_of(scope.service_catalogs),
        region=scope.region or "",
    )


def _role_names(scope: Any) -> tuple[str, ...]:
    names = ((role.get("role_name") if isinstance(role, dict) else getattr(role, "role_name", None)) for role in scope.roles or ())
    return tuple(name for name in names if name)


def catalog_of(services: Any) -> tuple[Endpoint, ...]:
    """getAuthScope's service catalog, flat. Its entries are mappings (snake_case keys) whether
    typed (an awaited invoke) or plain (read through an Output)."""
    return tuple(
        Endpoint(str(service.get("type") or ""), *(str(endpoint.get(key) or "") for key in ("interface", "region", "region_id", "url")))
        for service in services or ()
        for endpoint in service.get("endpoints") or ()
    )


def _compute_quotas(cloud: _Cloud, project: str) -> dict[str, Quota]:
    """Nova's limits with their usage; where the cloud refuses them (the provider always names the
    project, and Nova's default policy keeps `limits:other_project` for admins even when it is the
    caller's own: seen against the local cloud), the quota set, which a member may read, without usage."""
    limits = cloud.find(openstack.compute.get_limits_v2, project_id=project)
    if limits is not None:
        return {
            "instances": Quota(limits.max_total_instances, limits.total_instances_used),
            "cores": Quota(limits.max_total_cores, limits.total_cores_used),
            "ram": Quota(limits.max_total_ram_size, limits.total_ram_used),
            "server_groups": Quota(limits.max_server_groups, limits.total_server_groups_used),
            "server_group_members": Quota(limits.max_server_group_members),
        }
    quotas = cloud.get(openstack.compute.get_quota_set_v2, project_id=project)
    return {
        "instances": Quota(quotas.instances),
        "cores": Quota(quotas.cores),
        "ram": Quota(quotas.ram),
        "server_groups": Quota(quotas.server_groups),
        "server_group_members": Quota(quotas.server_group_members),
    }


def _probe(
    config: ClusterConfig,
    cloud: _Cloud,
    networks: tuple[str, ...] = (),
    subnets: tuple[str, ...] = (),
    groups: tuple[str, ...] = (),
    images: tuple[str, ...] = (),
    flavors: tuple[str, ...] = (),
) -> tuple[Probe, dict[str, SecurityGroup | None] | None]:
    """Neutron's extensions, Nova's hosts, the networks and subnets named, the user's security
    groups (None: not read) and every image Glance lists under the names given, read by
    cluster/cloud_probe.py under the program's Python."""
    assert config.openstack is not None
    environment = {"OS_CLOUD": config.openstack.cloud, "OCP_PYTHON": sys.executable}
    if networks or subnets or groups or images or flavors:
        asked = {
            "networks": list(networks), "subnets": list(subnets), **({"groups": list(groups)} if groups else {}),
            **({"images": list(images)} if images else {}), **({"flavors": list(flavors)} if flavors else {}),
        }
        environment[PROBE_NETWORKS] = json.dumps(asked)
    try:
        result = cloud.get(
            command.local.run,
            command=PROBE_COMMAND,
            dir=str(PROJECT),
            environment=environment,
            logging=command.local.Logging.NONE,  # what it says is in its one line
        )
    except Exception as error:  # noqa: BLE001 - the command did not run (no Python there): reported with the extensions
        return parse_probe(None, (str(error).strip().splitlines() or [type(error).__name__])[0][:300]), None
    return parse_probe(result.stdout), parse_groups(result.stdout)


def _existing(config: ClusterConfig, plan: AddressPlan, cloud: _Cloud, infra: str | None) -> Existing:
    """What the cloud holds of this cluster; nothing before the installer ran (unknown infra ID)."""
    if infra is None:
        return Existing()
    tag = [f"openshiftClusterID={infra}"]

    def ports(**args: Any) -> tuple[str, ...]:
        return tuple(cloud.get(openstack.networking.get_port_ids, tags=tag, **args).ids or ())

    def members(role: str) -> int | None:
        group = cloud.find(openstack.compute.get_servergroup_v2, name=f"{infra}-{role}")
        return len(group.members or ()) if group else None

    def groups(role: str, section: RoleBase) -> tuple[int, ...]:
        """<infraID>-<role>, then -<role>-1, ... while they exist (ocp:workers.serverGroupSize); per zone
        (serverGroupPerZone) each zone's, then each zone's -1, ...: in the order RoleBase.server_groups fills them."""
        zones = section.availability_zones if section.groups_per_zone else ("",)
        named = [f"{role}-{zone}" if zone else role for zone in zones]
        found, number = [members(name) or 0 for name in named], 1
        while role == "worker":  # only the workers' groups have a size
            more = [members(f"{name}-{number}") for name in named]
            if all(m is None for m in more):
                break
            found, number = found + [m or 0 for m in more], number + 1
        return tuple(found)

    master_groups, workers = groups("master", config.masters), groups("worker", config.workers)
    masters = sum(master_groups)
    bootstrap, helper = ports(name=server_name(config, plan.bootstrap, infra)), ports(name=f"{infra}-bootstrap-helper")
    tagged, api, ingress = ports(), ports(name=f"{infra}-api-port"), ports(name=f"{infra}-ingress-port")
    return Existing(
        masters, sum(workers), bool(bootstrap), bool(helper), len(tagged), workers,
        vip_port_ids=frozenset(api + ingress), master_groups=master_groups if config.masters.groups_per_zone else (),
    )
