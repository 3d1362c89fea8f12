"""BaseVolume: the RHCOS image, uploaded once into the pool; every node's disk is a copy-on-write layer on it.

A new ocp:libvirt.image replaces it and so every node's disk and domain: the image is
what a node was installed from, and RHCOS updates itself in place after that.
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
            name=f"{cluster.config.cluster_name}-base.qcow2",
            pool=cluster.pool,
            source=cluster.libvirt.image,  # a local path or an http(s) URL, fetched by the provider
            format="qcow2",
            # A fixed name in the pool: the old image goes (with every disk on it) before the new one comes.
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
        )
        self.volume_id = volume.id
        self.register_outputs({"volumeId": self.volume_id})
