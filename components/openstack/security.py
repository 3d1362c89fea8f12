"""SecurityGroups: master and worker groups with OpenShift's port matrix (cluster.firewall).

Every rule is its own resource named by its key, so changing one source touches one rule.
"""

from __future__ import annotations

import pulumi
import pulumi_openstack as openstack

from cluster.addresses import Node
from cluster.firewall import Rule, security_groups
from components.openstack.common import ClusterContext


def security_group(
    name: str, cluster: ClusterContext, suffix: str, rules: list[Rule], parent: pulumi.Resource
) -> openstack.networking.SecGroup:
    """One group and its ingress rules; each rule a resource named by its key, so editing one touches one."""
    child = pulumi.ResourceOptions(parent=parent)
    # A rule has no update (every input replaces it) and Neutron refuses a second rule with the
    # same tuple: delete first, so a changed description can be applied at all.
    rule_options = pulumi.ResourceOptions(parent=parent, delete_before_replace=True)
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
            ethertype=rule.ethertype,
            protocol=rule.protocol,
            port_range_min=rule.port_min,
            port_range_max=rule.port_max,
            remote_ip_prefix=str(rule.source),
            description=rule.description,
            opts=rule_options,
        )
    return group


class SecurityGroups(pulumi.ComponentResource):
    master: openstack.networking.SecGroup
    worker: openstack.networking.SecGroup
    ingress: openstack.networking.SecGroup

    def __init__(self, name: str, cluster: ClusterContext, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ocp:openstack:SecurityGroups", name, None, opts)
        groups = security_groups(cluster.config, cluster.plan)
        self.master = security_group(name, cluster, "master", groups["master"], self)
        self.worker = security_group(name, cluster, "worker", groups["worker"], self)
        self.ingress = security_group(name, cluster, "ingress", groups["ingress"], self)
        self.register_outputs({"masterId": self.master.id, "workerId": self.worker.id, "ingressId": self.ingress.id})

    def of(self, cluster: ClusterContext, node: Node) -> pulumi.Output[list[str]]:
        """A node's groups: its role's, and the ingress group where the routers run, as decided
        at install (port groups change in place: the node is untouched)."""
        role = self.master if node.role in ("master", "bootstrap") else self.worker
        extra = list(cluster.additional_groups(node))
        return pulumi.Output.all(role.id, self.ingress.id, cluster.router_names).apply(
            lambda ids: ([ids[0], ids[1]] if node.name in ids[2] else [ids[0]]) + extra
        )
