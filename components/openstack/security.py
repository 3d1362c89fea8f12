"""SecurityGroups: master and worker groups with OpenShift's port matrix (cluster.firewall)."""

from __future__ import annotations

import pulumi
import pulumi_openstack as openstack

from cluster.firewall import Rule, master_rules, worker_rules
from components.openstack.common import ClusterContext


def security_group(
    name: str, cluster: ClusterContext, suffix: str, rules: list[Rule], parent: pulumi.Resource
) -> openstack.networking.SecGroup:
    """One group and its ingress rules; each rule a resource named by its key, so editing one touches one."""
    child = pulumi.ResourceOptions(parent=parent)
    group = openstack.networking.SecGroup(
        f"{name}-{suffix}",
        name=cluster.named(suffix),
        description=f"OpenShift {suffix}s",
        tags=cluster.tags,
        opts=child,
    )
    for rule in rules:
        openstack.networking.SecGroupRule(
            f"{name}-{suffix}-{rule.key}",
            security_group_id=group.id,
            direction="ingress",
            ethertype="IPv4",
            protocol=rule.protocol,
            port_range_min=rule.port_min,
            port_range_max=rule.port_max,
            remote_ip_prefix=str(rule.source),
            description=rule.description,
            opts=child,
        )
    return group


class SecurityGroups(pulumi.ComponentResource):
    master: openstack.networking.SecGroup
    worker: openstack.networking.SecGroup

    def __init__(self, name: str, cluster: ClusterContext, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ocp:openstack:SecurityGroups", name, None, opts)
        config = cluster.config
        cidr, ssh_from = config.machine_network, config.ssh_allowed_cidr
        schedulable = config.workers.count == 0
        self.master = security_group(name, cluster, "master", master_rules(cidr, ssh_from, schedulable), self)
        self.worker = security_group(name, cluster, "worker", worker_rules(cidr, ssh_from), self)
        self.register_outputs({"masterId": self.master.id, "workerId": self.worker.id})
