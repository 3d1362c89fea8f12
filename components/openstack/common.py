"""What every OpenStack component shares: tags, and the facts of the cluster it belongs to."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from cluster.addresses import AddressPlan, Node, server_name
from cluster.config import ClusterConfig, OpenStack


@dataclass(frozen=True)
class Subnet:
    """Where node ports go: created by the Network component or adopted."""

    network_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    # What routes the subnet to the external network (the router interface; an adopted subnet is
    # routed already): Neutron refuses a floating IP for a port until it exists.
    routed: tuple[pulumi.Resource, ...] = ()

    def floating_ip_options(self, parent: pulumi.Resource) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=parent, depends_on=list(self.routed))


@dataclass(frozen=True)
class ClusterContext:
    """Pure facts plus the installer-derived values every component needs."""

    config: ClusterConfig
    plan: AddressPlan
    infra_id: pulumi.Output[str]
    # Hostnames of the nodes that run the routers, as decided at install (cluster.day2.installed_plan).
    router_names: pulumi.Output[tuple[str, ...]]

    @property
    def tags(self) -> pulumi.Output[list[str]]:
        # The installer's tag, so tools that look for `openshiftClusterID` find our resources.
        return self.infra_id.apply(lambda infra_id: [f"openshiftClusterID={infra_id}", *self.config.tags])

    @property
    def openstack(self) -> OpenStack:
        """The `ocp:openstack` section, which the config model requires on this platform."""
        assert self.config.openstack is not None
        return self.config.openstack

    def server_name(self, node: Node) -> pulumi.Output[str]:
        """A node's server (and port, and host) name: see cluster.addresses.server_name."""
        return self.infra_id.apply(lambda infra_id: server_name(self.config, node, infra_id))

    def named(self, suffix: str) -> pulumi.Output[str]:
        """An OpenStack resource name in the installer's style: `<infraID>-<suffix>`."""
        return self.infra_id.apply(lambda infra_id: f"{infra_id}-{suffix}")
