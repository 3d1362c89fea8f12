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
from components.libvirt.control_plane import ControlPlane
from components.libvirt.network import Network
from components.libvirt.volumes import BaseVolume
from components.libvirt.workers import Workers
from components.outputs import ClusterOutputs
from components.node_configs import NodeConfigs


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
        providers = [
            libvirt.Provider("libvirt", uri=config.libvirt.uri, opts=pulumi.ResourceOptions(parent=self)),
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
        ControlPlane(
            f"{name}-control-plane",
            cluster,
            network.attachment,
            base.volume_id,
            nodes.user_data_of(plan.masters),
            child,
        )
        if plan.workers:
            Workers(
                f"{name}-workers",
                cluster,
                network.attachment,
                base.volume_id,
                nodes.user_data_of(plan.workers),
                child,
            )
        # No floating IPs on libvirt: clients reach the VIPs on the machine network (docs/libvirt.md).
        self.outputs = ClusterOutputs.build(config, plan, installer.assets)
        self.register_outputs(self.outputs.as_dict())
