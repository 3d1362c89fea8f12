"""The stack file's `ocp:openstack` section: the mode, the cloud, the networks the nodes join
(made, given, extra), floating IPs and who may reach what. Pure Python (pydantic v2), no Pulumi;
cluster/config_schema.py holds the rest of the stack file."""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, field_serializer, model_serializer, model_validator

from cluster.config_base import Model
from cluster.config_fields import (
    AnyCidr,
    AnyCidrList,
    FloatingIpChoice,
    NeutronRef,
    NonEmpty,
    OpenStackId,
    PemBundle,
    distinct,
    one_or_list,
)

PoolName = Literal["masters", "workers"]
# Neutron's binding:vnic_type: normal (virtio), direct (an SR-IOV VF), direct-physical (a whole PF),
# macvtap, vdpa.
VnicType = Literal["normal", "direct", "direct-physical", "macvtap", "vdpa"]


class BindingProfile(Model):
    """What an SR-IOV port's binding profile (Neutron's binding:profile) says to the binding of a VF:
    OVS hardware offload (capabilities: [switchdev]) and a trusted VF. Only these two, which is all the
    Machine API carries (MAPO's portProfileToCapov1BindingProfile)."""

    capabilities: Annotated[tuple[Literal["switchdev"], ...], AfterValidator(distinct)] = ()
    trusted: bool = False

    @model_validator(mode="after")
    def _says_something(self) -> BindingProfile:
        if not self.capabilities and not self.trusted:
            raise ValueError("says nothing: write capabilities: [switchdev] (OVS hardware offload), trusted: true, or both; or remove it")
        return self

    def as_neutron(self) -> dict[str, Any]:
        """binding:profile as Neutron takes it (and CAPO sends it)."""
        return {**({"capabilities": list(self.capabilities)} if self.capabilities else {}), **({"trusted": True} if self.trusted else {})}


class ExistingNetwork(Model):
    """A network and subnet the user is given (the installer's controlPlanePort): the nodes' ports
    and the VIPs are made on it; nothing of it is made or deleted. Each by ID or by name.
    Dual-stack: subnetId lists one subnet per family of ocp:machineNetwork, in its order."""

    network_id: NeutronRef
    subnet_ids: Annotated[
        tuple[NeutronRef, ...], BeforeValidator(one_or_list), Field(min_length=1, max_length=2), AfterValidator(distinct)
    ] = Field(alias="subnetId")
    # A router from this network's subnet to externalNetwork: only where the subnet is not routed
    # already and floating IPs are wanted (a provider network needs none).
    router: bool = False

    @field_serializer("subnet_ids")
    def _one_as_written_before(self, value: tuple[str, ...]) -> str | list[str]:
        return value[0] if len(value) == 1 else list(value)  # the install record of one family, unchanged

    @property
    def subnet_id(self) -> str:
        """The subnet of ocp:machineNetwork's first (primary) family."""
        return self.subnet_ids[0]


class AdditionalNetwork(Model):
    """One more network on the nodes of some pools, described as it is (the Machine API's
    per-network portSecurity and vnicType, the installer's per-pool additionalNetworkIDs)."""

    # By ID or by name (a name must match one network).
    network: NeutronRef
    # Unset: masters and workers, but workers only where the ports have no port security (`on`).
    pools: Annotated[tuple[PoolName, ...], Field(min_length=1), AfterValidator(distinct)] | None = None
    # false: the port has no security groups and no anti-spoofing (provider VLANs, storage and
    # Multus L2 networks, SR-IOV); Neutron refuses groups on such a port.
    port_security: bool = True
    # A master's port that nothing filters (no port security; no subnet, where nothing holds the port to an
    # address) admits anything on the network to every port of the control plane: the machine config
    # server's worker config (the pull secret, the node-bootstrapper token), etcd, the API. Said in so many
    # words, or the masters stay off such a network.
    unfiltered_master_ports: bool = False
    vnic_type: VnicType = "normal"
    # The port's binding profile (SR-IOV: switchdev offload, a trusted VF); vnicType direct only.
    profile: BindingProfile | None = None
    # node: the node's own groups (its role's, and every additional one); none; or these IDs.
    # Unset: node with port security, none without.
    security_groups: Literal["node", "none"] | tuple[OpenStackId, ...] | None = None

    def on(self) -> tuple[PoolName, ...]:
        """The pools whose nodes get a port on it: as written; unset, masters and workers, but workers only
        where the ports have no port security, unless unfilteredMasterPorts says otherwise. (A network without
        a subnet is unfiltered too: the preflight, which reads it, refuses it on the masters unless said.)"""
        if self.pools is not None:
            return self.pools
        return ("masters", "workers") if self.port_security or self.unfiltered_master_ports else ("workers",)

    @model_serializer(mode="wrap")
    def _pools_as_resolved(self, dump: Any) -> Any:
        # The install record keeps the pools the ports were made for, as records before the default
        # changed did; unfilteredMasterPorts only where said, so records from before it compare equal.
        dumped = dump(self)
        if isinstance(dumped, dict):
            if dumped.get("pools", ()) is None:
                dumped["pools"] = list(self.on())
            if not self.unfiltered_master_ports:
                dumped.pop("unfilteredMasterPorts", None)
                dumped.pop("unfiltered_master_ports", None)
            if self.profile is None:
                dumped.pop("profile", None)
        return dumped

    @property
    def groups(self) -> Literal["node", "none"] | tuple[str, ...]:
        """The groups the port carries, unset resolved by portSecurity."""
        if self.security_groups is None:
            return "node" if self.port_security else "none"
        return self.security_groups

    @model_validator(mode="after")
    def _groups_need_port_security(self) -> AdditionalNetwork:
        if not self.port_security and self.security_groups not in (None, "none", ()):
            raise ValueError(
                "securityGroups with portSecurity false: Neutron refuses security groups on a port without port "
                "security (PortSecurityAndIPRequiredForSecurityGroups). Remove securityGroups (or write none), or "
                "set portSecurity true"
            )
        if self.profile is not None and self.vnic_type != "direct":
            raise ValueError(
                f"profile with vnicType {self.vnic_type}: the switchdev capability and a trusted VF are read where an SR-IOV "
                "VF is bound (vnicType direct; OVS hardware offload and trusted VFs are VFs): write vnicType: direct, or remove profile"
            )
        return self


class OpenStack(Model):
    # integrated: `platform: openstack` (cloud provider, Cinder, Machine API; the MCO runs the
    # VIPs). standalone: `platform: none` with this program's own keepalived/haproxy/CoreDNS.
    mode: Literal["integrated", "standalone"] = "integrated"
    # A private CA of the cloud's APIs (integrated mode: the cluster talks to them).
    ca_bundle: PemBundle | None = None
    # More networks and security groups on every node, by ID (the installer's additionalNetworkIDs,
    # additionalSecurityGroupIDs). additionalNetworks describes each network on its own.
    additional_network_ids: tuple[OpenStackId, ...] = ()
    additional_security_group_ids: tuple[OpenStackId, ...] = ()
    additional_networks: tuple[AdditionalNetwork, ...] = ()
    cloud: NonEmpty = "openstack"
    # Skip the checks against the cloud before anything is made (cluster/preflight.py); warned every run.
    skip_preflight: bool = False
    external_network: NonEmpty | None = None
    api_floating_ip: FloatingIpChoice = "none"
    ingress_floating_ip: FloatingIpChoice = "none"
    existing_network: ExistingNetwork | None = None
    # Who may reach what beyond the machine network (cluster/firewall.py). The machine network
    # itself is always admitted; a list replaces the default, [] admits nobody else.
    # Unset, the API and Ingress admit the world of each family of ocp:machineNetwork (cluster/firewall.py).
    api_allowed_cidrs: AnyCidrList = (IPv4Network("0.0.0.0/0"),)
    ingress_allowed_cidrs: AnyCidrList = (IPv4Network("0.0.0.0/0"),)
    node_port_allowed_cidrs: AnyCidrList = ()
    # SSH to the bootstrap helper, for `pulumi up`'s upload; required with a helper floating IP.
    ssh_allowed_cidr: AnyCidr | None = None

    @property
    def extra_networks(self) -> tuple[AdditionalNetwork, ...]:
        """Every extra network in port order: additionalNetworkIds (every node, its groups) first,
        then additionalNetworks. A node's port N is on network N, whatever its pool."""
        return (*(AdditionalNetwork(network=network) for network in self.additional_network_ids), *self.additional_networks)

    def keyed_extra_networks(self) -> tuple[tuple[str, AdditionalNetwork], ...]:
        """(key as the user writes it, entry) of each extra network, in port order."""
        keys = [f"ocp:openstack.additionalNetworkIds[{i}]" for i in range(len(self.additional_network_ids))]
        keys += [f"ocp:openstack.additionalNetworks[{i}].network" for i in range(len(self.additional_networks))]
        return tuple(zip(keys, self.extra_networks))

    def networks_of(self, pool: PoolName) -> tuple[tuple[int, AdditionalNetwork], ...]:
        """(port number from 1, network) of each extra network on `pool`'s nodes (the bootstrap takes none)."""
        return tuple((number, each) for number, each in enumerate(self.extra_networks, start=1) if pool in each.on())

    def routed_by_us(self) -> bool:
        """Whether the program makes a router (its own network, or existingNetwork.router)."""
        return self.existing_network is None or self.existing_network.router

    def given_without_router(self) -> bool:
        """A network the stack is given (existingNetwork) to which it makes no router."""
        return self.existing_network is not None and not self.existing_network.router
