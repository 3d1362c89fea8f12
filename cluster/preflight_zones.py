"""The preflight's zone checks: server group policies that no host of a multi-zone cloud can meet.
Pure Python.

A compute host is in one zone. Hard `affinity` puts every member of a group on one host, so a group
whose members are placed in two zones has no valid host for its second member. Hard
`anti-affinity` puts each member on a host of its own, so a group whose members sit in one zone
needs that many hosts there (where the cloud shows its zones' hosts). Nova refuses the server that
cannot be placed (NoValidHost) halfway through `pulumi up`: these stop the run first.
"""

from __future__ import annotations

from collections.abc import Iterable

from cluster.addresses import AddressPlan
from cluster.cloud_facts import CloudFacts
from cluster.config import ClusterConfig, RoleBase

ROLES = (("masters", "master"), ("workers", "worker"))


def _counts(plan: AddressPlan) -> dict[str, int]:
    return {"masters": plan.master_count, "workers": plan.worker_count}


def group_zones(section: RoleBase, count: int) -> dict[str, dict[str, int]]:
    """Each server group (what follows `<infraID>-<role>`) with its members' zones: members in each."""
    groups: dict[str, dict[str, int]] = {}
    for index in range(count):
        zone = section.zone_of(index)
        zones = groups.setdefault(section.server_group(index), {})
        name = section.availability_zones[zone] if zone is not None else ""
        zones[name] = zones.get(name, 0) + 1
    return groups


def affinity_across_zones(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    """Hard affinity with a group's members in two or more zones: no host is in both."""
    counts = _counts(plan)
    for role, name in ROLES:
        section = getattr(config, role)
        if section.server_group_policy != "affinity":
            continue
        spread = {group: zones for group, zones in group_zones(section, counts[role]).items() if len(zones) > 1}
        if spread:
            group, zones = next(iter(spread.items()))
            yield (
                f"ocp:{role}.serverGroupPolicy: affinity puts every member of a server group on one compute host, and "
                f"the {role} of group <infraID>-{name}{group} are in zones {', '.join(zones)} "
                f"(ocp:{role}.availabilityZones): no host is in two zones, so Nova would refuse the second with "
                f"NoValidHost halfway through `pulumi up`. Write soft-affinity, or (a new stack) "
                f"ocp:{role}.serverGroupPerZone: true for one group per zone"
            )


def anti_affinity_in_zones(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    """Hard anti-affinity with more members of a group in one zone than that zone has hosts up."""
    if facts.zone_hosts is None:
        return
    counts = _counts(plan)
    for role, name in ROLES:
        section = getattr(config, role)
        if section.server_group_policy != "anti-affinity" or not section.availability_zones:
            continue
        short = [
            (group, zone, members, facts.zone_hosts.get(zone, 0))
            for group, zones in group_zones(section, counts[role]).items()
            for zone, members in zones.items()
            if members > facts.zone_hosts.get(zone, 0)
        ]
        if short:
            group, zone, members, hosts = short[0]
            way_out = ", or ocp:workers.serverGroupSize to at most that many" if role == "workers" and hosts else ""
            yield (
                f"ocp:{role}.serverGroupPolicy: anti-affinity puts each member of a server group on a compute host of "
                f"its own, and {members} {role} of group <infraID>-{name}{group} are in zone {zone}, where cloud "
                f"\"{facts.cloud}\" has {hosts} host(s) up: Nova would refuse the next with NoValidHost halfway through "
                f"`pulumi up`. Write soft-anti-affinity (the installer's default), add hosts to {zone}{way_out}"
            )
