"""Preflight: read the cloud with invokes and gate every cloud resource on cluster.preflight's verdict.

Every OpenStack resource of the cluster is named from the infra ID, so `checked()` hands the
components an infra ID that fails with the problems: none of them registers. The verdict
needs no infra ID on a first run (nothing of the cluster exists yet; in a first preview it is
unknown), and uses it on later runs to find what the cluster already holds.

pulumi-openstack 5.5.3 has no invoke for Neutron's extensions: the tag extension is read with
the `openstack` CLI (pulumi-command's local.run invoke), which integrated mode needs anyway
for `pulumi destroy` (components/openstack/cleanup.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pulumi
import pulumi_command as command
import pulumi_openstack as openstack

from cluster.addresses import AddressPlan, server_name
from cluster.config import ClusterConfig
from cluster.preflight import EXTENSIONS_COMMAND, HOSTS_COMMAND, CloudFacts, Endpoint, Existing, Flavor, Image, Quota, problems, wanted


def checked(
    config: ClusterConfig,
    plan: AddressPlan,
    provider: openstack.Provider,
    runner: command.Provider,
    infra_id: pulumi.Output[str],
) -> pulumi.Output[str]:
    """The infra ID, failing with every problem of the cloud for this stack."""
    assert config.openstack is not None
    if config.openstack.skip_preflight:
        pulumi.log.warn(
            "ocp:openstack.skipPreflight is true: flavors, images, networks, floating IPs, compute and volume zones, volume types, "
            "quotas and Neutron's tag extension are not checked; a shortfall shows up as a failed resource midway"
        )
        return infra_id
    verdict = pulumi.Output.from_input(asyncio.ensure_future(_verdict(config, plan, _Cloud(provider, runner), infra_id)))
    return pulumi.Output.all(verdict, infra_id).apply(lambda both: both[1])


async def _verdict(config: ClusterConfig, plan: AddressPlan, cloud: _Cloud, infra_id: pulumi.Output[str]) -> bool:
    facts = await read_facts(config, plan, cloud, infra_id)
    found = problems(config, plan, facts)
    if found:
        count = f" ({len(found)} problems)" if len(found) > 1 else ""
        raise pulumi.RunError(f"the cloud cannot hold this stack{count}:\n  " + "\n  ".join(found))
    return True


class _Cloud:
    """Invokes through the cluster's providers. The data sources fail when nothing matches;
    awaited directly (not as outputs), such a failure stays ours to read as "not found"."""

    def __init__(self, provider: openstack.Provider, runner: command.Provider):
        self.provider, self.runner = provider, runner

    async def get(self, token: str, typ: type, **args: Any) -> Any:
        provider = self.runner if token.startswith("command:") else self.provider
        return await pulumi.runtime.invoke_async(token, args, pulumi.InvokeOptions(provider=provider), typ)

    async def find(self, token: str, typ: type, **args: Any) -> Any:
        try:
            return await self.get(token, typ, **args)
        except Exception:  # noqa: BLE001 - a lookup by name that fails: not there
            return None


FLAVOR = "openstack:compute/getFlavor:getFlavor"
IMAGE = "openstack:images/getImage:getImage"
NETWORK = "openstack:networking/getNetwork:getNetwork"
FLOATING_IP = "openstack:networking/getFloatingIp:getFloatingIp"
SCOPE = "openstack:identity/getAuthScope:getAuthScope"
LIMITS = "openstack:compute/getLimitsV2:getLimitsV2"
COMPUTE_QUOTA = "openstack:compute/getQuotaSetV2:getQuotaSetV2"
NETWORK_QUOTA = "openstack:networking/getQuotaV2:getQuotaV2"
VOLUME_QUOTA = "openstack:blockstorage/getQuotasetV3:getQuotasetV3"
PORT_IDS = "openstack:networking/getPortIds:getPortIds"
ZONES = "openstack:compute/getAvailabilityZones:getAvailabilityZones"
VOLUME_ZONES = "openstack:blockstorage/getAvailabilityZonesV3:getAvailabilityZonesV3"
SERVER_GROUP = "openstack:compute/getServergroupV2:getServergroupV2"
RUN = "command:local:run"


async def read_facts(config: ClusterConfig, plan: AddressPlan, cloud: _Cloud, infra_id: pulumi.Output[str]) -> CloudFacts:
    assert config.openstack is not None
    want = wanted(config, plan)
    flavors, images, networks, fips = await asyncio.gather(
        asyncio.gather(*(cloud.find(FLAVOR, openstack.compute.GetFlavorResult, name=name) for name in want.flavors)),
        asyncio.gather(
            *(cloud.find(IMAGE, openstack.images.GetImageResult, name=name, mostRecent=True) for name in want.images)
        ),
        asyncio.gather(
            *(cloud.find(NETWORK, openstack.networking.GetNetworkResult, name=name) for name in want.external_networks)
        ),
        asyncio.gather(
            *(cloud.find(FLOATING_IP, openstack.networking.GetFloatingIpResult, address=a) for a in want.floating_ips)
        ),
    )
    scope = await cloud.get(SCOPE, openstack.identity.GetAuthScopeResult, name="preflight")
    project = scope.project_id
    limits, network_quota, volume_quota, project_ports = await asyncio.gather(
        _compute_quotas(cloud, project),
        cloud.get(NETWORK_QUOTA, openstack.networking.GetQuotaV2Result, projectId=project),
        cloud.get(VOLUME_QUOTA, openstack.blockstorage.GetQuotasetV3Result, projectId=project),
        cloud.get(PORT_IDS, openstack.networking.GetPortIdsResult, projectId=project),
    )
    zones = (await cloud.get(ZONES, openstack.compute.GetAvailabilityZonesResult)).names if want.zones else ()
    volume_zones = (
        (await cloud.get(VOLUME_ZONES, openstack.blockstorage.GetAvailabilityZonesV3Result)).names if want.volume_zones else ()
    )
    return CloudFacts(
        cloud=config.openstack.cloud,
        flavors={
            name: Flavor(f.vcpus or 0, f.ram or 0, f.disk or 0) if f else None for name, f in zip(want.flavors, flavors)
        },
        images={name: Image(bool(i.checksum) and (i.size_bytes or 0) > 0) if i else None for name, i in zip(want.images, images)},
        external_networks={name: bool(n.external) if n else None for name, n in zip(want.external_networks, networks)},
        floating_ips={address: (f.port_id or "") if f else None for address, f in zip(want.floating_ips, fips)},
        compute_zones=tuple(zones or ()),
        volume_zones=tuple(volume_zones or ()),
        # Cinder keeps a per-type quota (volumes_<type>) for every volume type.
        volume_types=tuple(
            sorted(key.removeprefix("volumes_") for key in (volume_quota.volume_type_quota or {}) if key.startswith("volumes_"))
        ),
        network_extensions=await _extensions(config, cloud) if want.extensions else (),
        compute_hosts=await _hosts(config, cloud) if want.hosts else None,
        quotas={
            **limits,
            "ports": Quota(network_quota.port, len(project_ports.ids or ())),
            "security_groups": Quota(network_quota.security_group),
            "security_group_rules": Quota(network_quota.security_group_rule),
            "floating_ips": Quota(network_quota.floatingip),
            "volumes": Quota(volume_quota.volumes),
            "gigabytes": Quota(volume_quota.gigabytes),
        },
        existing=await _existing(config, plan, cloud, infra_id),
        catalog=catalog_of(scope.service_catalogs),
        region=scope.region or "",
    )


def catalog_of(services: Any) -> tuple[Endpoint, ...]:
    """getAuthScope's service catalog, flat. Its entries are mappings (snake_case keys) whether
    typed (an awaited invoke) or plain (read through an Output)."""
    return tuple(
        Endpoint(str(service.get("type") or ""), *(str(endpoint.get(key) or "") for key in ("interface", "region", "region_id", "url")))
        for service in services or ()
        for endpoint in service.get("endpoints") or ()
    )


async def _compute_quotas(cloud: _Cloud, project: str) -> dict[str, Quota]:
    """Nova's limits with their usage; where the cloud refuses them (the provider always names the
    project, and Nova's default policy keeps `limits:other_project` for admins even when it is the
    caller's own: seen against the local cloud), the quota set, which a member may read, without usage."""
    limits = await cloud.find(LIMITS, openstack.compute.GetLimitsV2Result, projectId=project)
    if limits is not None:
        return {
            "instances": Quota(limits.max_total_instances, limits.total_instances_used),
            "cores": Quota(limits.max_total_cores, limits.total_cores_used),
            "ram": Quota(limits.max_total_ram_size, limits.total_ram_used),
            "server_groups": Quota(limits.max_server_groups, limits.total_server_groups_used),
            "server_group_members": Quota(limits.max_server_group_members),
        }
    quotas = await cloud.get(COMPUTE_QUOTA, openstack.compute.GetQuotaSetV2Result, projectId=project)
    return {
        "instances": Quota(quotas.instances),
        "cores": Quota(quotas.cores),
        "ram": Quota(quotas.ram),
        "server_groups": Quota(quotas.server_groups),
        "server_group_members": Quota(quotas.server_group_members),
    }


async def _hosts(config: ClusterConfig, cloud: _Cloud) -> int | None:
    """Compute hosts that are up; None where the cloud does not say (a member's view)."""
    assert config.openstack is not None
    result = await cloud.find(RUN, command.local.RunResult, command=HOSTS_COMMAND, environment={"OS_CLOUD": config.openstack.cloud})
    if result is None:
        return None
    states = [line.strip().lower() for line in (result.stdout or "").splitlines() if line.strip()]
    return sum(state == "up" for state in states) if states else None


async def _extensions(config: ClusterConfig, cloud: _Cloud) -> tuple[str, ...] | None:
    assert config.openstack is not None
    result = await cloud.find(RUN, command.local.RunResult, command=EXTENSIONS_COMMAND, environment={"OS_CLOUD": config.openstack.cloud})
    if result is None:  # reported as a problem: destroy needs the CLI too
        return None
    return tuple(line.strip() for line in (result.stdout or "").splitlines() if line.strip())


async def _existing(config: ClusterConfig, plan: AddressPlan, cloud: _Cloud, infra_id: pulumi.Output[str]) -> Existing:
    """What the cloud holds of this cluster; nothing before the installer ran (unknown infra ID)."""
    if not await infra_id.is_known():
        return Existing()
    infra = await infra_id.future()
    tag = [f"openshiftClusterID={infra}"]

    async def ports(**args: Any) -> tuple[str, ...]:
        return tuple((await cloud.get(PORT_IDS, openstack.networking.GetPortIdsResult, tags=tag, **args)).ids or ())

    async def members(role: str) -> int | None:
        group = await cloud.find(SERVER_GROUP, openstack.compute.GetServergroupV2Result, name=f"{infra}-{role}")
        return len(group.members or ()) if group else None

    async def worker_groups() -> tuple[int, ...]:
        """<infraID>-worker, then -worker-1, ... while they exist (ocp:workers.serverGroupSize)."""
        found = [await members("worker") or 0]
        while (more := await members(f"worker-{len(found)}")) is not None:
            found.append(more)
        return tuple(found)

    masters, workers, bootstrap, helper, tagged, api, ingress = await asyncio.gather(
        members("master"),
        worker_groups(),
        ports(name=server_name(config, plan.bootstrap, infra)),
        ports(name=f"{infra}-bootstrap-helper"),
        ports(),
        ports(name=f"{infra}-api-port"),
        ports(name=f"{infra}-ingress-port"),
    )
    return Existing(
        masters or 0, sum(workers), bool(bootstrap), bool(helper), len(tagged), workers, frozenset(api + ingress)
    )
