"""What a stack takes of its project's quotas, day 1 (bootstrap included), beside what the cloud has
free where a cloud description says. Pure Python; tools/needs.py writes it as the plan's needs.yaml.

The figures are the preflight's footprint (cluster/preflight_capacity.py), the network, subnet and
router the stack makes included, plus the members of its fullest server group.
Keys are the cloud description's (samples/cloud/dev.yaml `quotas`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cluster.addresses import AddressPlan
from cluster.cloud_facts import UNLIMITED, Flavor, Quota, servers
from cluster.config import ClusterConfig
from cluster.preflight_capacity import footprint

# description key: (footprint key or None, unit, how to raise it)
ROWS = {
    "instances": ("instances", "instances", "openstack quota set --instances"),
    "cores": ("cores", "vCPUs", "openstack quota set --cores"),
    "ram": ("ram", "MiB RAM", "openstack quota set --ram"),
    "serverGroups": ("server_groups", "server groups", "openstack quota set --server-groups"),
    "serverGroupMembers": (None, "members in one server group", "openstack quota set --server-group-members"),
    "ports": ("ports", "ports", "openstack quota set --ports"),
    "securityGroups": ("security_groups", "security groups", "openstack quota set --secgroups"),
    "securityGroupRules": ("security_group_rules", "security group rules", "openstack quota set --secgroup-rules"),
    "floatingIps": ("floating_ips", "floating IPs", "openstack quota set --floating-ips"),
    "volumes": ("volumes", "volumes", "openstack quota set --volumes"),
    "gigabytes": ("gigabytes", "GB of volumes", "openstack quota set --gigabytes"),
    "networks": ("networks", "networks", "openstack quota set --networks"),
    "subnets": ("subnets", "subnets", "openstack quota set --subnets"),
    "routers": ("routers", "routers", "openstack quota set --routers"),
}
SIZED = ("cores", "ram")


@dataclass(frozen=True)
class QuotaNeed:
    key: str  # the cloud description's quota key
    unit: str
    need: int | None  # None: the flavors' sizes are not described
    quota: Quota | None  # None: no description, or it does not give this quota
    raise_with: str

    @property
    def free(self) -> int | None:
        if self.quota is None or self.quota.limit == UNLIMITED:
            return None
        return max(0, self.quota.limit - (self.quota.used or 0))

    @property
    def verdict(self) -> str:
        if self.quota is None:
            return "not described"
        if self.quota.limit == UNLIMITED:
            return "enough (unlimited)"
        if self.need is None:
            return "unknown (the flavors' sizes are not described)"
        free = self.free or 0
        return "enough" if self.need <= free else f"short by {self.need - free}"

    @property
    def short(self) -> bool:
        return self.verdict.startswith("short")


def quota_needs(
    config: ClusterConfig, plan: AddressPlan, flavors: Mapping[str, Flavor | None], quotas: Mapping[str, Quota] | None
) -> list[QuotaNeed]:
    """Each quota this stack takes, with the cloud's (`quotas`: by description key; None: none described)."""
    counts = footprint(config, plan, flavors)
    uses = servers(config, plan.master_count, plan.worker_count, plan.bootstrap_enabled, config.uses_helper)
    sized = all(flavors.get(use.flavor) is not None for use in uses)
    # The fullest group of either role (per zone and serverGroupSize slice where they are so split).
    members = (*config.masters.server_group_members(plan.master_count), *config.workers.server_group_members(plan.worker_count))
    extra = {"serverGroupMembers": max(members)}
    rows = []
    for key, (counted, unit, raise_with) in ROWS.items():
        need = extra[key] if counted is None else counts[counted]
        rows.append(QuotaNeed(key, unit, None if key in SIZED and not sized else need, (quotas or {}).get(key), raise_with))
    return rows
