"""ControlPlane: the masters. No anti-affinity to honour on one host, so no ordering either."""

from __future__ import annotations

import pulumi

from components.libvirt.common import Attachment, ClusterContext
from components.libvirt.machines import MachineSet


class ControlPlane(MachineSet):
    def __init__(
        self,
        name: str,
        cluster: ClusterContext,
        attachment: Attachment,
        base_volume_id: pulumi.Input[str],
        user_data: dict[str, pulumi.Output[str]],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__(
            "ocp:libvirt:ControlPlane",
            name,
            cluster,
            cluster.plan.masters,
            cluster.config.masters,
            attachment,
            base_volume_id,
            user_data,
            autostart=True,
            opts=opts,
        )
