"""BaseVolume: the RHCOS image, uploaded once into the pool; every node's disk is a copy-on-write layer on it.

Every disk stands on it, so it stays as uploaded at install: a new ocp:libvirt.image is not
uploaded over it (RHCOS updates itself in place, through the cluster).
"""

from __future__ import annotations

import pulumi
import pulumi_libvirt as libvirt

from components.libvirt.common import ClusterContext


class BaseVolume(pulumi.ComponentResource):
    volume_id: pulumi.Output[str]

    def __init__(self, name: str, cluster: ClusterContext, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ocp:libvirt:BaseVolume", name, None, opts)
        volume = libvirt.Volume(
            f"{name}-volume",
            name=cluster.reviewed(f"{cluster.config.cluster_name}-base.qcow2"),
            pool=cluster.pool,
            source=cluster.libvirt.image,  # a local path or an http(s) URL, fetched by the provider
            format="qcow2",
            # A fixed name in the pool: should it be replaced, the old one goes first.
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True, ignore_changes=["source"]),
        )
        self.volume_id = volume.id
        self.register_outputs({"volumeId": self.volume_id})
