"""VipPorts: the two never-attached ports that reserve the API and Ingress VIPs, and their floating IPs.

Each carries the security group of the nodes that may hold its VIP (as IPI and UPI do);
without one Neutron would attach the project's default group. With `ocp:loadBalancer:
UserManaged` the VIPs are the user's balancer's frontend addresses, not on any node: nothing is
made (as the installer makes no VIP ports then), and both floating IPs are None (the config
refuses them).
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address

import pulumi
import pulumi_openstack as openstack

from components.openstack.common import ClusterContext, Subnet
from components.openstack.security import SecurityGroups


class VipPorts(pulumi.ComponentResource):
    api_floating_ip: pulumi.Output[str | None]
    ingress_floating_ip: pulumi.Output[str | None]

    def __init__(
        self,
        name: str,
        cluster: ClusterContext,
        subnet: Subnet,
        security: SecurityGroups,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("ocp:openstack:VipPorts", name, None, opts)
        # The API VIP sits on the bootstrap or a master (both in the master group), the
        # Ingress VIP on a router node (in the ingress group, wherever the routers run).
        openstack_config = cluster.openstack
        held_here = (
            ("api", cluster.plan.api_vips, openstack_config.api_floating_ip, security.master),
            ("ingress", cluster.plan.ingress_vips, openstack_config.ingress_floating_ip, security.ingress),
        )
        floating: dict[str, pulumi.Output[str | None]] = {}
        for vip, addresses, choice, group in () if cluster.config.user_managed_lb else held_here:
            # The VIP of each family on one port (dual-stack: the installer's one port per VIP, both addresses).
            port = openstack.networking.Port(
                f"{name}-{vip}-port",
                name=cluster.named(f"{vip}-port"),
                network_id=subnet.network_id,
                fixed_ips=subnet.fixed_ips(addresses),
                description=f"{vip} VIP, held by keepalived on the nodes (status DOWN is normal)",
                security_group_ids=[group.id],
                tags=cluster.tags,
                opts=pulumi.ResourceOptions(parent=self),
            )
            floating[vip] = self._floating_ip(f"{name}-{vip}", choice, port, cluster, subnet)
        none = pulumi.Output.from_input(None)
        self.api_floating_ip = floating.get("api", none)
        self.ingress_floating_ip = floating.get("ingress", none)
        self.register_outputs({"apiFloatingIp": self.api_floating_ip, "ingressFloatingIp": self.ingress_floating_ip})

    def _floating_ip(
        self, name: str, choice: str | IPv4Address, port: openstack.networking.Port, cluster: ClusterContext, subnet: Subnet
    ) -> pulumi.Output[str | None]:
        child = subnet.floating_ip_options(self)
        if choice == "none":
            return pulumi.Output.from_input(None)
        if choice == "create":
            created = openstack.networking.FloatingIp(
                f"{name}-fip",
                pool=cluster.openstack.external_network,
                port_id=port.id,
                description=port.name,
                tags=cluster.tags,
                opts=child,
            )
            return created.address
        association = openstack.networking.FloatingIpAssociate(
            f"{name}-fip-association", floating_ip=str(choice), port_id=port.id, opts=child
        )
        return association.floating_ip


def on_nodes(cluster: ClusterContext, *vips: IPv4Address | IPv6Address) -> tuple[IPv4Address | IPv6Address, ...]:
    """The VIPs a node's port carries as allowed address pairs (Neutron's anti-spoofing would
    drop their traffic on a node that holds one): `vips`, or none when the user's own balancer
    holds them (ocp:loadBalancer: UserManaged), as the installer's ports have none then."""
    return () if cluster.config.user_managed_lb else vips
