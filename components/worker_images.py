"""WorkerImages: the payload images of each standalone or libvirt worker's static pods.

While the bootstrap exists the cluster is being installed: a worker runs the install's images.
One made once the bootstrap is gone runs those of the release the cluster is at then, as the
MCO would give it: after an upgrade the install's images miss every fix since, and a mirror
pruned of the old release would leave the new worker unable to pull them (and resolve api-int).

One local command per worker, made with it and deleted with it, prints them; it runs once
(every input ignored after), so a running worker never needs the API again. Not made where
ocp:networking.images names all three: there is nothing to look up.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pulumi
import pulumi_command as command

from cluster.addresses import AddressPlan, Node, server_name
from cluster.config import ClusterConfig
from cluster.installer import InstallerAssets, release_lookups, worker_images_environment, worker_images_script
from components.installer import RUN_ONCE
from components.node_configs import NodeConfigs


class WorkerImages(pulumi.ComponentResource):
    user_data: dict[str, pulumi.Output[str]]

    def __init__(
        self,
        name: str,
        config: ClusterConfig,
        plan: AddressPlan,
        workers: Sequence[Node],
        assets: pulumi.Output[InstallerAssets],
        nodes: NodeConfigs,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("ocp:nodes:WorkerImages", name, None, opts)
        self.user_data = {}
        from_cluster = not plan.bootstrap_enabled
        for node in workers if release_lookups(config) else ():

            def environment(installer: InstallerAssets, node: Node = node) -> dict[str, str]:
                server = server_name(config, node, installer.infra_id)
                return worker_images_environment(config, installer, server, from_cluster)

            images = command.local.Command(
                f"{name}-{node.role}-{node.index}",
                create=worker_images_script(),
                environment=pulumi.Output.secret(assets.apply(environment)),
                add_previous_output_in_env=False,
                logging=command.local.Logging.STDERR,
                opts=pulumi.ResourceOptions(parent=self, ignore_changes=RUN_ONCE),
            )
            self.user_data[node.name] = nodes.user_data_with_images(node, images.stdout.apply(json.loads))
        self.register_outputs({})
