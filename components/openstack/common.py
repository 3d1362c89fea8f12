"""What every OpenStack component shares: tags, and the facts of the cluster it belongs to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_openstack as openstack

from cluster.addresses import AddressPlan, Node, server_name
from cluster.config import ClusterConfig, OpenStack
from cluster.config_fields import is_openstack_id
from cluster.config_openstack import AdditionalNetwork, PoolName
from components.openstack.preflight import Checked


@dataclass(frozen=True)
class Subnet:
    """Where node ports go: created by the Network component or adopted."""

    network_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    # What routes the subnet to the external network (the router interface; an adopted subnet is
    # routed already): Neutron refuses a floating IP for a port until it exists.
    routed: tuple[pulumi.Resource, ...] = ()
    # Dual-stack: the second family's subnet on the same network (ocp:machineNetwork's second entry).
    second_subnet_id: pulumi.Input[str] | None = None
    # The families (places in ocp:machineNetwork) whose subnet derives each port's address from its MAC
    # (slaac, dhcpv6-stateless: cluster.preflight_networks.derived_families).
    derived: frozenset[int] = frozenset()

    def fixed_ips(self, addresses: Sequence[object]) -> list[openstack.networking.PortFixedIpArgs]:
        """A port's fixed IPs: each family's address on that family's subnet, the primary first; on a
        subnet that derives it, the subnet alone (Neutron refuses an address asked for there)."""
        subnets = [self.subnet_id] + ([self.second_subnet_id] if self.second_subnet_id is not None else [])
        return [
            openstack.networking.PortFixedIpArgs(subnet_id=subnet, ip_address=None if family in self.derived else str(address))
            for family, (subnet, address) in enumerate(zip(subnets, addresses))
        ]

    def floating_ip_options(self, parent: pulumi.Resource) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=parent, depends_on=list(self.routed))


@dataclass(frozen=True)
class ExtraNetwork:
    id: pulumi.Input[str]
    # No subnet: its ports are made without an address (Neutron's ip_allocation none), which Nova takes.
    addressless: pulumi.Output[bool]


@dataclass(frozen=True)
class ClusterContext:
    """Pure facts plus the installer-derived values every component needs."""

    config: ClusterConfig
    plan: AddressPlan
    infra_id: pulumi.Output[str]
    # Hostnames of the nodes that run the routers, as decided at install (cluster.day2.installed_plan).
    router_names: pulumi.Output[tuple[str, ...]]
    # What the preflight read of the cloud: the images the servers boot, the networks the stack names.
    # None where no preflight ran (tests of one component): each lookup is then made on its own.
    checked: Checked | None = None
    # The extra networks read so far, by the reference the stack writes (extra_network).
    read_networks: dict[str, ExtraNetwork] = field(default_factory=dict, compare=False)

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

    def pool_of(self, node: Node) -> PoolName:
        """The pool whose additional groups a node takes: the bootstrap is the masters' (its extra networks: none)."""
        return "workers" if node.role == "worker" else "masters"

    def extra_networks_of(self, node: Node) -> tuple[tuple[int, AdditionalNetwork], ...]:
        """(port number, network) of each extra network the node joins: its pool's; none for the bootstrap."""
        return () if node.role == "bootstrap" else self.openstack.networks_of(self.pool_of(node))

    def additional_groups(self, node: Node) -> tuple[str, ...]:
        """The groups ocp:openstack.additionalSecurityGroupIds and the node's pool's own add to its ports."""
        pool = self.config.masters if self.pool_of(node) == "masters" else self.config.workers
        return tuple(dict.fromkeys((*self.openstack.additional_security_group_ids, *pool.additional_security_group_ids)))

    def extra_network(self, reference: str, parent: pulumi.Resource) -> ExtraNetwork:
        """An extra network as its ports need it: its ID, and whether it has subnets (Nova boots on a
        port without an address only when the port was made without one). As the preflight read it;
        where none ran (skipPreflight), looked up once per stack run."""
        if reference not in self.read_networks:
            read = self.checked.networks.get(reference) if self.checked is not None else None
            if read is not None:
                self.read_networks[reference] = ExtraNetwork(read.id, pulumi.Output.from_input(not read.subnets))
            else:
                found = openstack.networking.get_network_output(
                    **{"network_id" if is_openstack_id(reference) else "name": self.infra_id.apply(lambda _: reference)},
                    opts=pulumi.InvokeOutputOptions(parent=parent),
                )
                network_id = reference if is_openstack_id(reference) else found.id
                self.read_networks[reference] = ExtraNetwork(network_id, found.subnets.apply(lambda subnets: not subnets))
        return self.read_networks[reference]

    def image_id(self, name: str, parent: pulumi.Resource | None) -> pulumi.Input[str]:
        """The Glance image a server boots, by the ID the preflight resolved its name to (the newest
        active one): the provider refuses a name two images share."""
        if self.checked is not None:
            return self.checked.image_id(name, parent)
        return openstack.images.get_image_output(
            name=self.infra_id.apply(lambda _: name), most_recent=True, opts=pulumi.InvokeOutputOptions(parent=parent)
        ).id

    def port_security_off_already(self, reference: str) -> bool:
        """Whether the network has port security off itself, as the preflight read it: its ports then
        inherit it, and saying so is the network owner's right alone (403 on another project's network)."""
        found = self.checked.networks.get(reference) if self.checked is not None else None
        return found is not None and not found.port_security

    def network_id(self, reference: str, parent: pulumi.Resource) -> pulumi.Input[str]:
        """A network given by ID as it is; by name, looked up once the preflight passed (the infra ID
        waits for it), which reports a missing or ambiguous name once."""
        if is_openstack_id(reference):
            return reference
        return openstack.networking.get_network_output(
            name=self.infra_id.apply(lambda _: reference), opts=pulumi.InvokeOutputOptions(parent=parent)
        ).id

    def subnet_id(self, reference: str, network: pulumi.Input[str], parent: pulumi.Resource) -> pulumi.Input[str]:
        """A subnet given by ID as it is; by name, looked up on its network once the preflight passed."""
        if is_openstack_id(reference):
            return reference
        return openstack.networking.get_subnet_output(
            name=self.infra_id.apply(lambda _: reference), network_id=network, opts=pulumi.InvokeOutputOptions(parent=parent)
        ).id

    def named(self, suffix: str) -> pulumi.Output[str]:
        """An OpenStack resource name in the installer's style: `<infraID>-<suffix>`."""
        return self.infra_id.apply(lambda infra_id: f"{infra_id}-{suffix}")
