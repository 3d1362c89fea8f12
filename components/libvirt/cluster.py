"""LibvirtCluster: every libvirt resource of one cluster, wired in dependency order."""

from __future__ import annotations

import pulumi
import pulumi_command as command
import pulumi_libvirt as libvirt

from cluster.addresses import AddressPlan
from cluster.config import ClusterConfig
from components.installer import Installer
from components.libvirt.bootstrap import Bootstrap
from components.libvirt.common import ClusterContext
from components.libvirt.machines import NodePool, control_plane, workers
from components.libvirt.network import Network
from components.libvirt.volumes import BaseVolume
from components.node_configs import NodeConfigs
from components.outputs import ClusterOutputs
from components.worker_images import WorkerImages


class LibvirtCluster(pulumi.ComponentResource):
    outputs: ClusterOutputs

    def __init__(
        self,
        name: str,
        config: ClusterConfig,
        plan: AddressPlan,
        installer: Installer,
        runner: command.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("ocp:libvirt:Cluster", name, None, opts)
        assert config.libvirt is not None
        # The provider connects as soon as it is configured, even in a preview: it waits for the
        # install record's review, so a refused edit of the URI never dials the other host.
        uri = installer.assets.apply(lambda _: config.libvirt.uri)
        providers = [
            libvirt.Provider("libvirt", uri=uri, opts=pulumi.ResourceOptions(parent=self)),
            runner,
        ]
        child = pulumi.ResourceOptions(parent=self, providers=providers)
        cluster = ClusterContext(config, plan, installer.assets)
        # fw_cfg takes any size: the bootstrap gets its full config, no helper, no shim.
        nodes = NodeConfigs(installer.assets, config, plan, "direct")

        network = Network(f"{name}-network", cluster, child)
        base = BaseVolume(f"{name}-base-volume", cluster, child)
        if plan.bootstrap_enabled:
            Bootstrap(
                f"{name}-bootstrap", cluster, network.attachment, base.volume_id, nodes.user_data(plan.bootstrap), child
            )
        # New workers run the static pods' images of the release the cluster is at.
        user_data = nodes.user_data_of(plan.nodes)
        user_data |= WorkerImages(f"{name}-worker-images", config, plan, plan.workers, installer.assets, nodes, child).user_data
        # Masters and workers: the role as data (no anti-affinity to honour on one host, no ordering).
        for component, role in ((f"{name}-control-plane", control_plane(cluster)), (f"{name}-workers", workers(cluster))):
            if role.nodes:
                NodePool(
                    component,
                    role,
                    cluster,
                    network.attachment,
                    {node.name: user_data[node.name] for node in role.nodes},
                    child,
                    drained_with=installer.assets if role.name == "worker" else None,
                    base_volume_id=base.volume_id,
                )
        # No floating IPs on libvirt: clients reach the VIPs on the machine network (docs/libvirt.md).
        self.outputs = ClusterOutputs.build(config, plan, installer.assets)
        self.register_outputs(self.outputs.as_dict())
