"""The stack outputs every platform exports; kubeconfig and kubeadmin password stay secret.

`apiVip` and `ingressVip` are the API's and the routers' addresses whoever holds them: the nodes'
keepalived, or with `ocp:loadBalancer: UserManaged` the user's own balancer, whose frontends they
are; `loadBalancerPools` then lists what it must front (cluster/balancer.py). Dual-stack stacks
add `apiVips` and `ingressVips`, one address per family, the primary first.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import pulumi

from cluster import balancer
from cluster.addresses import AddressPlan, Node, host_port, node_addresses, server_name
from cluster.config import ClusterConfig
from cluster.day2 import installed_plan
from cluster.endpoints import api_url, console_url, etc_hosts
from cluster.installer import InstallerAssets


@dataclass(frozen=True)
class ClusterOutputs:
    values: dict[str, Any]

    @classmethod
    def build(
        cls,
        config: ClusterConfig,
        plan: AddressPlan,
        assets: pulumi.Output[InstallerAssets],
        api_floating_ip: pulumi.Input[str | None] = None,
        ingress_floating_ip: pulumi.Input[str | None] = None,
        bootstrap_gather: pulumi.Input[str] | None = None,
        servers_created: Mapping[Node, pulumi.Output[str]] | None = None,
        network_mtu: pulumi.Input[int | None] | None = None,
        *,
        assigned: Mapping[Node, pulumi.Output[list[str]]] | None = None,
        derived: Collection[int] = (),
    ) -> ClusterOutputs:
        """`servers_created`: when each master's and worker's server was made, by the cloud's
        clock, where the platform keeps that (OpenStack): the approver ties client CSRs to it.
        `network_mtu`: the machine network's (OpenStack), which `python -m ocp install` checks.
        `assigned`: each node's port's addresses (OpenStack), read for the `derived` families
        (cluster.addresses.node_addresses)."""
        # Clients outside reach the cluster by floating IP where there is one, else by VIP (the
        # user's balancer's frontend with ocp:loadBalancer: UserManaged).
        reach = pulumi.Output.all(api_floating_ip, ingress_floating_ip).apply(
            lambda ips: etc_hosts(config, ips[0] or str(plan.api_vip), ips[1] or str(plan.ingress_vip))
        )
        values = {
            "apiVip": str(plan.api_vip),
            "ingressVip": str(plan.ingress_vip),
            "apiFloatingIp": api_floating_ip,
            "ingressFloatingIp": ingress_floating_ip,
            "apiUrl": api_url(config),
            "consoleUrl": console_url(config),
            # Every address of each node, the primary family's first: a dual-stack kubelet's serving request names both.
            # Where Neutron derives a family's address from the port's MAC (slaac), the port's.
            "nodes": pulumi.Output.unsecret(_node_addresses(config, plan, assets, assigned or {}, derived)),
            "etcHosts": reach,
            "infraId": pulumi.Output.unsecret(assets.apply(lambda a: a.infra_id)),
            "kubeconfig": pulumi.Output.secret(assets.apply(lambda a: a.kubeconfig)),
            "kubeadminPassword": pulumi.Output.secret(assets.apply(lambda a: a.kubeadmin_password)),
        }
        if plan.dual_stack:
            # Both families' VIPs, the primary first (apiVip, ingressVip: the primary's, as on one family).
            values["apiVips"] = [str(vip) for vip in plan.api_vips]
            values["ingressVips"] = [str(vip) for vip in plan.ingress_vips]
        if servers_created is not None:
            nodes = list(servers_created)
            values["nodeCreated"] = pulumi.Output.unsecret(
                pulumi.Output.all(assets, *servers_created.values()).apply(
                    lambda found: {server_name(config, node, found[0].infra_id): time for node, time in zip(nodes, found[1:])}
                )
            )
        if network_mtu is not None:
            values["networkMtu"] = network_mtu
        if config.user_managed_lb:
            values["loadBalancerPools"] = pulumi.Output.unsecret(assets.apply(lambda a: _pools(config, plan, a)))
        if bootstrap_gather is not None:
            # While the bootstrap exists: `openshift-install gather bootstrap`, ready to run.
            values["bootstrapGather"] = bootstrap_gather
        return cls(values)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.values)


def _node_addresses(
    config: ClusterConfig,
    plan: AddressPlan,
    assets: pulumi.Output[InstallerAssets],
    assigned: Mapping[Node, pulumi.Output[list[str]]],
    derived: Collection[int],
) -> pulumi.Output[dict[str, list[str | None]]]:
    """Server name -> the node's address of each family; a derived family's as its port shows it."""
    nodes = list(plan.nodes)
    read = [assigned[node] if derived and node in assigned else None for node in nodes]
    return pulumi.Output.all(assets, *read).apply(
        lambda found: {
            server_name(config, node, found[0].infra_id): node_addresses(plan, node, derived, ports)
            for node, ports in zip(nodes, found[1:])
        }
    )


def _pools(config: ClusterConfig, plan: AddressPlan, assets: InstallerAssets) -> dict[str, Any]:
    """What the user's balancer fronts now, by pool: its frontend, health check and members by
    server name (the bootstrap while it exists; the routers where the install placed them), and
    whether the frontend must stay on the machine network, with why."""
    now = installed_plan(plan, assets)
    return {
        pool.name: {
            "frontend": balancer.frontend(now, pool),
            "check": pool.check,
            "members": {server_name(config, node, assets.infra_id): host_port(node.ip, pool.port) for node in pool.members},
            "internal": pool.internal,
            **({"why": balancer.INTERNAL_WHY} if pool.internal else {}),
        }
        for pool in balancer.pools(config, now)
    }
