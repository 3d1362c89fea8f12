"""Every node's ignition, as Outputs: computed from the installer's configs, which exist only in `apply`."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

import pulumi

from cluster.addresses import AddressPlan, Node
from cluster.clouds_yaml import clouds_yaml_ca  # read and checked before any resource (components/program.py)
from cluster.config import ClusterConfig
from cluster.day2 import installed_plan
from cluster.installer import InstallerAssets, cloud_ca_bundle
from ignition.nodes import BootstrapDelivery, all_node_ignitions, checked_size, node_ignition


class NodeConfigs:
    def __init__(
        self,
        assets: pulumi.Output[InstallerAssets],
        config: ClusterConfig,
        plan: AddressPlan,
        delivery: BootstrapDelivery,
    ):
        cloud_ca = cloud_ca_bundle(config, clouds_yaml_ca(config)[0])
        # The CAs of the cloud's endpoints (the Glance shim trusts them).
        self.cloud_ca = cloud_ca
        self._assets, self._config, self._plan, self._delivery = assets, config, plan, delivery
        self._by_name = assets.apply(
            lambda installer: all_node_ignitions(config, installed_plan(plan, installer), installer, delivery, cloud_ca)
        )

    def user_data(self, node: Node) -> pulumi.Output[str]:
        return self._by_name.apply(lambda by_name: by_name[node.name].user_data)

    def user_data_of(self, nodes: Iterable[Node]) -> dict[str, pulumi.Output[str]]:
        return {node.name: self.user_data(node) for node in nodes}

    def user_data_with_images(self, node: Node, images: pulumi.Output[Mapping[str, str]]) -> pulumi.Output[str]:
        """`node`'s user_data with these payload images in place of the install's."""

        def build(values: list) -> str:
            installer, found = values
            assets = dataclasses.replace(installer, release_images={**installer.release_images, **found})
            ignition = node_ignition(self._config, installed_plan(self._plan, assets), node, assets, self._delivery, self.cloud_ca)
            return checked_size(node.name, ignition)

        return pulumi.Output.all(self._assets, images).apply(build)

    def served(self, node: Node) -> pulumi.Output[str]:
        """The full config a shim points at (the bootstrap's on OpenStack)."""
        return self._by_name.apply(lambda by_name: by_name[node.name].served)
