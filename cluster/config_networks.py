"""The stack's networks of one or two address families: ocp:clusterNetwork's entries, and what the
whole config derives from the lists (the primary family's network and VIPs, the families), which
cluster/config_schema.py's ClusterConfig inherits. Pure Python (pydantic v2), no Pulumi."""

from __future__ import annotations

import json
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, field_serializer, model_validator

from cluster.config_base import Model
from cluster.config_fields import AnyCidr


class ClusterNetwork(Model):
    """Pod addresses: each node gets a /hostPrefix out of cidr (the installer's networking.clusterNetwork)."""

    cidr: AnyCidr = IPv4Network("10.128.0.0/14")
    # IPv4: 23 unless set; IPv6: 64, the only prefix the installer takes there.
    host_prefix: Annotated[int, Field(ge=8, le=64)] = 23

    @model_validator(mode="before")
    @classmethod
    def _ipv6_default_prefix(cls, value: Any) -> Any:
        if isinstance(value, dict) and "hostPrefix" not in value and "host_prefix" not in value and ":" in str(value.get("cidr", "")):
            return {**value, "hostPrefix": 64}
        return value

    @model_validator(mode="after")
    def _room_for_nodes(self) -> ClusterNetwork:
        if self.cidr.version == 6:
            if self.host_prefix != 64:
                raise ValueError(
                    f"hostPrefix {self.host_prefix} with IPv6 {self.cidr}: the installer takes only 64 for IPv6 "
                    "networks: write hostPrefix: 64 (or leave it out)"
                )
            if self.cidr.prefixlen >= 64:
                raise ValueError(f"{self.cidr} leaves no room for a /64 per node: write a larger network, e.g. fd01::/48")
            return self
        if self.host_prefix > 30:
            raise ValueError(f"hostPrefix {self.host_prefix} is more than 30 for IPv4 {self.cidr}: write e.g. hostPrefix: 23")
        if self.host_prefix <= self.cidr.prefixlen:
            raise ValueError(
                f"hostPrefix {self.host_prefix} leaves no room in {self.cidr} for more than one node: "
                f"write a larger prefix, e.g. hostPrefix: {min(self.cidr.prefixlen + 9, 30)}"
            )
        return self


def _one_or_list_of_objects(value: Any) -> Any:
    """ocp:clusterNetwork: one object (as before dual-stack) or a list of one per family."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return (value,) if isinstance(value, dict) else value


def _one_network_per_family(value: tuple[ClusterNetwork, ...]) -> tuple[ClusterNetwork, ...]:
    if len(value) == 2 and value[0].cidr.version == value[1].cidr.version:
        raise ValueError(
            f"lists two IPv{value[0].cidr.version} networks: a second entry is the other address family "
            "(dual-stack), one IPv4 and one IPv6"
        )
    return value


ClusterNetworks = Annotated[
    tuple[ClusterNetwork, ...],
    BeforeValidator(_one_or_list_of_objects),
    Field(min_length=1, max_length=2),
    AfterValidator(_one_network_per_family),
]



class AddressFamilies(Model):
    """ClusterConfig's lists of one entry per family (machine_networks, api_vips, ingress_vips,
    cluster_networks, service_networks, the primary first), read as one family's values."""

    if TYPE_CHECKING:
        machine_networks: tuple[IPv4Network | IPv6Network, ...]
        api_vips: tuple[IPv4Address | IPv6Address, ...]
        ingress_vips: tuple[IPv4Address | IPv6Address, ...]
        cluster_networks: tuple[ClusterNetwork, ...]
        service_networks: tuple[IPv4Network | IPv6Network, ...]

    @field_serializer("machine_networks", "api_vips", "ingress_vips", "cluster_networks", "service_networks", check_fields=False)
    def _one_as_written_before(self, value: tuple[Any, ...]) -> Any:
        # One family dumps as one value, as before dual-stack: the install record and the day-2
        # review of running stacks read these keys unchanged.
        dumped = [item.model_dump(by_alias=True, mode="json") if isinstance(item, ClusterNetwork) else str(item) for item in value]
        return None if not dumped else dumped[0] if len(dumped) == 1 else dumped

    @property
    def machine_network(self) -> IPv4Network | IPv6Network:
        """The primary family's machine network."""
        return self.machine_networks[0]

    @property
    def api_vip(self) -> IPv4Address | IPv6Address | None:
        """The primary family's API VIP as written (None: the plan's default)."""
        return self.api_vips[0] if self.api_vips else None

    @property
    def ingress_vip(self) -> IPv4Address | IPv6Address | None:
        return self.ingress_vips[0] if self.ingress_vips else None

    @property
    def cluster_network(self) -> ClusterNetwork:
        return self.cluster_networks[0]

    @property
    def service_network(self) -> IPv4Network | IPv6Network:
        return self.service_networks[0]

    @property
    def families(self) -> tuple[int, ...]:
        """The IP versions of ocp:machineNetwork, the primary first: (4,), (6,), (4, 6) or (6, 4)."""
        return tuple(network.version for network in self.machine_networks)
