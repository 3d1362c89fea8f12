"""Room for the next worker: what one more worker adds to each quota, by the preflight's own count
(cluster/preflight_capacity.py footprint: the stack at ocp:workers.count + 1 against the stack as it is), held
against what the project has left. The limits and their usage are read with openstacksdk through the
preflight's probe connection (cluster/cloud_probe.py connect; the preflight itself reads them with the
provider's invokes, which run only inside the program): Nova's limits, Neutron's quota details, Cinder's
quota set with usage. Reading only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cluster.addresses import plan_addresses
from cluster.cloud_facts import UNLIMITED, Flavor, Quota
from cluster.cloud_probe import CloudError, connect, first_line
from cluster.config import ClusterConfig
from cluster.preflight_capacity import QUOTAS, footprint


@dataclass(frozen=True)
class Room:
    quota: str  # the quota's key (instances, cores, ram, ports, ...)
    need: int  # what the next worker adds
    free: int | None  # None: unlimited, or its usage is not visible
    limit: int

    @property
    def fits(self) -> bool:
        return self.free is None or self.need <= self.free


@dataclass(frozen=True)
class Capacity:
    read: bool
    why: str = ""
    rooms: tuple[Room, ...] = ()

    def problems(self) -> list[str]:
        return [f"the next worker needs {room.need} {QUOTAS[room.quota][0]} and the quota has {room.free} left" for room in self.rooms if not room.fits]


def next_worker(config: ClusterConfig, quotas: Mapping[str, Quota], flavors: Mapping[str, Flavor | None]) -> tuple[Room, ...]:
    """Each quota the next worker takes any of: its need and what is left. Pure."""
    now = footprint(config, plan_addresses(config), flavors)
    grown = config.model_copy(update={"workers": config.workers.model_copy(update={"count": config.workers.count + 1})})
    more = footprint(grown, plan_addresses(grown), flavors)
    rooms = []
    for name in QUOTAS:
        need = more[name] - now[name]
        quota = quotas.get(name)
        if need <= 0 or quota is None:
            continue
        free = None if quota.limit == UNLIMITED or quota.used is None else max(0, quota.limit - quota.used)
        rooms.append(Room(name, need, free, quota.limit))
    return tuple(rooms)


def read(config: ClusterConfig) -> Capacity:
    if config.openstack is None:
        return Capacity(False, "a libvirt stack: no quotas")
    try:
        connection = connect(config.openstack.cloud)
        quotas, flavors = _quotas(connection), _flavors(connection, {config.workers.flavor, config.masters.flavor})
    except CloudError as error:
        return Capacity(False, str(error))
    except Exception as error:  # noqa: BLE001 - any refusal of the cloud: could not tell, said why
        return Capacity(False, f"the cloud's quotas could not be read: {first_line(error)}")
    return Capacity(True, rooms=next_worker(config, quotas, flavors))


def _quotas(connection: Any) -> dict[str, Quota]:
    project = connection.current_project_id
    limits = connection.compute.get_limits().absolute
    quotas = {
        "instances": Quota(limits.instances, limits.instances_used),
        "cores": Quota(limits.total_cores, limits.total_cores_used),
        "ram": Quota(limits.total_ram, limits.total_ram_used),
        "server_groups": Quota(limits.server_groups, limits.server_groups_used),
    }
    network = connection.network.get_quota(project, details=True)
    for name, field in (("ports", "ports"), ("security_groups", "security_groups"), ("security_group_rules", "security_group_rules"),
                        ("floating_ips", "floating_ips"), ("networks", "networks"), ("subnets", "subnets"), ("routers", "routers")):
        detail = getattr(network, field, None) or {}
        if isinstance(detail, Mapping) and "limit" in detail:
            quotas[name] = Quota(int(detail["limit"]), int(detail.get("used", 0)))
    volume = connection.block_storage.get_quota_set(project, usage=True)
    for name in ("volumes", "gigabytes"):
        limit, usage = getattr(volume, name, None), (getattr(volume, "usage", None) or {}).get(name)
        if limit is not None:
            quotas[name] = Quota(int(limit), None if usage is None else int(usage))
    return quotas


def _flavors(connection: Any, names: set[str]) -> dict[str, Flavor | None]:
    found = {}
    for name in names:
        flavor = connection.compute.find_flavor(name, ignore_missing=True)
        found[name] = Flavor(flavor.vcpus or 0, flavor.ram or 0, flavor.disk or 0) if flavor else None
    return found
