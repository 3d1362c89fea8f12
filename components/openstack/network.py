"""Network: the tenant network, subnet and router, or an existing subnet adopted as is."""

from __future__ import annotations

import pulumi
import pulumi_openstack as openstack

from components.openstack.common import ClusterContext, Subnet


class Network(pulumi.ComponentResource):
    subnet: Subnet

    def __init__(self, name: str, cluster: ClusterContext, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ocp:openstack:Network", name, None, opts)
        config, plan = cluster.config, cluster.plan
        existing = cluster.openstack.existing_network
        if existing is not None:
            # The user's subnet: its DHCP pool is theirs to keep clear of our fixed addresses.
            self.subnet = Subnet(existing.network_id, existing.subnet_id)
        else:
            child = pulumi.ResourceOptions(parent=self)
            # The network, subnet and router carry every node (ocp:protect); the interface is made again in place.
            kept = pulumi.ResourceOptions(parent=self, protect=config.protect)
            network = openstack.networking.Network(
                f"{name}-network",
                name=cluster.named("openshift"),
                admin_state_up=True,
                # The Machine API and the cloud provider find the cluster's network by these.
                tags=pulumi.Output.all(cluster.tags, cluster.named("primaryClusterNetwork")).apply(
                    lambda parts: [*parts[0], parts[1]]
                ),
                opts=kept,
            )
            subnet = openstack.networking.Subnet(
                f"{name}-subnet",
                name=cluster.named("nodes"),
                network_id=network.id,
                cidr=str(plan.network),
                ip_version=4,
                gateway_ip=str(plan.gateway),
                # DHCP never hands out a VIP or an address reserved for a node.
                allocation_pools=[
                    openstack.networking.SubnetAllocationPoolArgs(start=str(start), end=str(end))
                    for start, end in plan.allocation_pools
                ],
                dns_nameservers=[str(server) for server in config.nameservers],
                tags=cluster.tags,
                opts=kept,
            )
            # Looked up once the preflight passed (the infra ID waits for it): a missing network
            # is then reported once, by the preflight, not again by a failed lookup.
            external = openstack.networking.get_network_output(
                name=cluster.infra_id.apply(lambda _: cluster.openstack.external_network),
                opts=pulumi.InvokeOutputOptions(parent=self),
            )
            router = openstack.networking.Router(
                f"{name}-router",
                name=cluster.named("external-router"),
                external_network_id=external.id,
                tags=cluster.tags,
                opts=kept,
            )
            interface = openstack.networking.RouterInterface(
                f"{name}-router-interface", router_id=router.id, subnet_id=subnet.id, opts=child
            )
            self.subnet = Subnet(network.id, subnet.id, (interface,))
        self.register_outputs({"networkId": self.subnet.network_id, "subnetId": self.subnet.subnet_id})
