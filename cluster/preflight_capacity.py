"""The preflight's capacity checks: the quotas (what the stack holds of each, and what a later run
adds), server group members and hard anti-affinity. Pure Python.

What this stack adds: the cloud's usage already counts the stack's own resources on a later
run, so the need is the stack's footprint minus the part of it that already exists
(`Existing`, read from the cloud by the infra ID: its server groups' members, its bootstrap
and helper ports, its tagged ports). Neutron security groups, rules, floating IPs, networks,
subnets and routers, and Cinder volumes and gigabytes have no usage invoke in pulumi-openstack
5.5.3: for those the whole footprint is held against the limit (a necessary condition, day 1 and
day 2 alike).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from cluster.addresses import AddressPlan
from cluster.cloud_facts import DEFAULT_RULES_PER_GROUP, NETWORK_OWN_PORTS, UNLIMITED, CloudFacts, Existing, Flavor, servers, where
from cluster.config import ClusterConfig
from cluster.firewall import security_groups

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
    # The network, subnet and router the stack makes (none for existingNetwork, a router for its
    # router: true), as the installer's quota check counts them.
    "networks": ("networks", "network"),
    "subnets": ("subnets", "network"),
    "routers": ("routers", "network"),
    "volumes": ("volumes", "volume"),
    "gigabytes": ("GB of volumes", "volume"),
}


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
    uses = servers(config, masters, workers, bootstrap, helper)
    sized = [(use, flavors.get(use.flavor)) for use in uses]
    # The helper's and the bootstrap's groups are there while they are.
    present = {"helper": helper, "bootstrap": bootstrap}
    groups = {name: rules for name, rules in security_groups(config, plan).items() if present.get(name, True)}
    openstack = config.openstack
    created_fips = sum(choice == "create" for choice in (openstack.api_floating_ip, openstack.ingress_floating_ip)) if openstack else 0
    # With a helper floating IP `pulumi up` runs outside: the bootstrap gets one too (for the gather).
    helper_fip = int(helper and config.bootstrap_floating_ip) + int(bootstrap and config.bootstrap_floating_ip)
    # The nodes' ports, their ports on the extra networks (one per node and network of its pool;
    # the bootstrap takes none) and the VIPs' carry the infra ID's tag: `existing` counts them. The
    # network's own ports do not.
    vip_ports = 2 if cluster and not config.user_managed_lb else 0
    extra_ports = masters * len(openstack.networks_of("masters")) + workers * len(openstack.networks_of("workers")) if openstack else 0
    tagged_ports = sum(use.count for use in uses) + vip_ports + extra_ports if existing is None else existing.ports
    own_network = int(cluster and openstack is not None and openstack.existing_network is None)
    routed = int(cluster and openstack is not None and openstack.routed_by_us())
    # A router to a given network (existingNetwork.router) holds its interface's port there, one per subnet (dual-stack: two).
    network_ports = NETWORK_OWN_PORTS if own_network else routed * (len(openstack.existing_network.subnet_ids) if routed else 0)
    counts = {
        "instances": sum(use.count for use in uses),
        "cores": sum(use.count * flavor.vcpus for use, flavor in sized if flavor),
        "ram": sum(use.count * flavor.ram_mib for use, flavor in sized if flavor),
        # Both roles' groups (one per zone where they are per zone), whatever the worker count; a deployed
        # group shows only by its members.
        "server_groups": len(config.masters.server_groups(masters)) + len(config.workers.server_groups(workers))
        if existing is None
        else (sum(1 for members in existing.master_groups if members) if existing.master_groups else int(masters > 0))
        + (sum(1 for members in existing.worker_groups if members) if existing.worker_groups else int(workers > 0)),
        "ports": tagged_ports + network_ports,
        "security_groups": len(groups) if cluster else 0,
        "security_group_rules": sum(len(rules) + DEFAULT_RULES_PER_GROUP for rules in groups.values()) if cluster else 0,
        "floating_ips": (created_fips if cluster else 0) + int(helper_fip),
        "networks": own_network,
        "subnets": own_network,
        "routers": routed,
        "volumes": sum(use.count for use in uses if use.volume_gb),
        "gigabytes": sum(use.count * use.volume_gb for use in uses),
    }
    return counts


def quotas(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
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
                    f"ocp:openstack.cloud: the stack needs {need} {unit} and the {service} quota {where(facts)} "
                    f"allows {free}: raise it (`openstack quota set --{_flag(name)} {need} <project>`) or make the stack smaller"
                )
            continue
        need = max(0, whole[name] - held[name])
        free = max(0, quota.limit - quota.used)
        if need > free:
            yield (
                f"ocp:openstack.cloud: the stack adds {need} {unit} and the {service} quota {where(facts)} "
                f"has {free} left ({quota.used} of {quota.limit} in use): raise it "
                f"(`openstack quota set --{_flag(name)} {quota.used + need} <project>`) or make the stack smaller"
            )


def server_group_members(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    """Nova's server_group_members quota holds per group (10 by default): past it the next server
    is refused halfway through `pulumi up`. And a running worker never changes group: Nova
    cannot move a server, so the worker would be replaced."""
    quota = facts.quotas.get("server_group_members")
    limit = UNLIMITED if quota is None else quota.limit
    workers = config.workers
    raise_it = "raise the quota (`openstack quota set --server-group-members {need} <project>`)"
    masters = max(config.masters.server_group_members(plan.master_count))
    if limit != UNLIMITED and masters > limit:
        yield (
            f"ocp:masters.count: {masters} masters share one server group, and the compute quota "
            f"server_group_members {where(facts)} allows {limit} per group: " + raise_it.format(need=masters)
        )
    fullest = max(workers.server_group_members(plan.worker_count))
    if limit != UNLIMITED and fullest > limit:
        if workers.server_group_size is None:
            yield (
                f"ocp:workers.count: {plan.worker_count} workers in one server group, and the compute quota "
                f"server_group_members {where(facts)} allows {limit} per group (Nova would refuse worker {limit + 1} "
                f"halfway through `pulumi up`): set ocp:workers.serverGroupSize: {limit} to spread them over groups of "
                f"at most {limit}, or " + raise_it.format(need=fullest)
            )
        else:
            yield (
                f"ocp:workers.serverGroupSize: {workers.server_group_size} workers per server group, and the compute "
                f"quota server_group_members {where(facts)} allows {limit} per group: set it to {limit} or less, or "
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


def anti_affinity(config: ClusterConfig, plan: AddressPlan, facts: CloudFacts) -> Iterable[str]:
    """Hard anti-affinity puts each member of a group on a host of its own: past the hosts there
    are, Nova refuses the next server (NoValidHost) halfway through `pulumi up`."""
    hosts = facts.compute_hosts
    if hosts is None:
        return
    fullest = {"masters": max(config.masters.server_group_members(plan.master_count)), "workers": max(config.workers.server_group_members(plan.worker_count))}
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
