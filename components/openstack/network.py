"""Network: the tenant network, subnet and router, or a network and subnet the user is given,
adopted as they are (a router to them only where asked)."""

from __future__ import annotations

import pulumi
import pulumi_command as command
import pulumi_openstack as openstack

from cluster.network_tag import primary_tag, tag_script
from components.openstack.cleanup import KEEPS_SCRIPT_CURRENT
from components.openstack.common import ClusterContext, Subnet


class Network(pulumi.ComponentResource):
    subnet: Subnet
    # The machine network's MTU, for the install's check (ocp/checks.py): the given network's as read, the made one's once made.
    mtu: pulumi.Output[int | None]

    def __init__(self, name: str, cluster: ClusterContext, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ocp:openstack:Network", name, None, opts)
        config, plan = cluster.config, cluster.plan
        existing = cluster.openstack.existing_network
        if existing is not None:
            # The user's network and subnet, by ID or name: never made, changed or deleted here; its
            # DHCP pool is theirs to keep clear of our fixed addresses.
            network_id = cluster.network_id(existing.network_id, self)
            subnet_id = cluster.subnet_id(existing.subnet_id, network_id, self)
            # Dual-stack: the second family's subnet (ocp:openstack.existingNetwork.subnetId's second entry).
            second = cluster.subnet_id(existing.subnet_ids[1], network_id, self) if len(existing.subnet_ids) > 1 else None
            routed: tuple[pulumi.Resource, ...] = ()
            if config.integrated:
                # As the installer tagged a network you bring (before 4.16; its destroy still takes the tag
                # off): the cluster's mark, which nothing reads. Taken off again on destroy.
                command.local.Command(
                    f"{name}-primary-tag",
                    create=tag_script("add"),
                    delete=tag_script("remove"),
                    interpreter=["/bin/bash", "-c"],
                    environment=cluster.infra_id.apply(
                        lambda infra_id: {"OS_CLOUD": cluster.openstack.cloud, "NETWORK": existing.network_id, "TAG": primary_tag(infra_id)}
                    ),
                    logging=command.local.Logging.STDOUT_AND_STDERR,
                    opts=pulumi.ResourceOptions(parent=self, ignore_changes=KEEPS_SCRIPT_CURRENT),
                )
            if existing.router:
                router = self._router(name, cluster, pulumi.ResourceOptions(parent=self, protect=config.protect))
                routed = (
                    openstack.networking.RouterInterface(
                        f"{name}-router-interface", router_id=router.id, subnet_id=subnet_id, opts=pulumi.ResourceOptions(parent=self)
                    ),
                )
                if second is not None:
                    # The IPv6 subnet's router advertisements (its gateway and, by its mode, the prefix the
                    # nodes make their address in or the M flag that starts their DHCPv6) come from a router
                    # interface on it.
                    openstack.networking.RouterInterface(
                        f"{name}-router-interface-2", router_id=router.id, subnet_id=second, opts=pulumi.ResourceOptions(parent=self)
                    )
            derived = cluster.checked.derived_families if cluster.checked is not None else frozenset()
            self.subnet = Subnet(network_id, subnet_id, routed, second, derived)
            # Read once the preflight passed (the infra ID waits for it), which reports a missing network once.
            self.mtu = openstack.networking.get_network_output(
                network_id=pulumi.Output.all(cluster.infra_id, network_id).apply(lambda values: values[1]),
                opts=pulumi.InvokeOutputOptions(parent=self),
            ).mtu
        else:
            child = pulumi.ResourceOptions(parent=self)
            # The network, subnet and router carry every node (ocp:protect); the interface is made again in place.
            kept = pulumi.ResourceOptions(parent=self, protect=config.protect)
            network = openstack.networking.Network(
                f"{name}-network",
                name=cluster.named("openshift"),
                admin_state_up=True,
                # The MachineSets find the subnet by openshiftClusterID (its tag); the installer's
                # primaryClusterNetwork tag, which nothing reads any more, marks the network as its did.
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
            router = self._router(name, cluster, kept)
            interface = openstack.networking.RouterInterface(
                f"{name}-router-interface", router_id=router.id, subnet_id=subnet.id, opts=child
            )
            self.subnet = Subnet(network.id, subnet.id, (interface,))
            self.mtu = network.mtu
        self.register_outputs({"networkId": self.subnet.network_id, "subnetId": self.subnet.subnet_id})

    def _router(self, name: str, cluster: ClusterContext, opts: pulumi.ResourceOptions) -> openstack.networking.Router:
        # The external network looked up once the preflight passed (the infra ID waits for it): a
        # missing network is then reported once, by the preflight, not again by a failed lookup.
        external = openstack.networking.get_network_output(
            name=cluster.infra_id.apply(lambda _: cluster.openstack.external_network),
            opts=pulumi.InvokeOutputOptions(parent=self),
        )
        return openstack.networking.Router(
            f"{name}-router",
            name=cluster.named("external-router"),
            external_network_id=external.id,
            tags=cluster.tags,
            opts=opts,
        )
