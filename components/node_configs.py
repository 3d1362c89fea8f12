"""Every node's ignition, as Outputs: computed from the installer's configs, which exist only in `apply`."""

from __future__ import annotations

from collections.abc import Iterable

import pulumi

from cluster.addresses import AddressPlan, Node
from cluster.config import ClusterConfig
from cluster.day2 import installed_plan
from cluster.installer import InstallerAssets, cloud_ca_bundle
from ignition.nodes import BootstrapDelivery, all_node_ignitions


class NodeConfigs:
    def __init__(
        self,
        assets: pulumi.Output[InstallerAssets],
        config: ClusterConfig,
        plan: AddressPlan,
        delivery: BootstrapDelivery,
    ):
        from components.program import clouds_yaml_ca  # read and checked before any resource

        cloud_ca = cloud_ca_bundle(config, clouds_yaml_ca(config)[0])
        # The CAs of the cloud's endpoints (the Glance shim trusts them).
        self.cloud_ca = cloud_ca
        self._by_name = assets.apply(
            lambda installer: all_node_ignitions(config, installed_plan(plan, installer), installer, delivery, cloud_ca)
        )

    def user_data(self, node: Node) -> pulumi.Output[str]:
        return self._by_name.apply(lambda by_name: by_name[node.name].user_data)

    def user_data_of(self, nodes: Iterable[Node]) -> dict[str, pulumi.Output[str]]:
        return {node.name: self.user_data(node) for node in nodes}

    def served(self, node: Node) -> pulumi.Output[str]:
        """The full config a shim points at (the bootstrap's on OpenStack)."""
        return self._by_name.apply(lambda by_name: by_name[node.name].served)
