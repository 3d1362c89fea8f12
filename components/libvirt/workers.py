"""Workers: scaling within workers.maxCount adds or removes machines here and touches nothing else."""

from __future__ import annotations

import pulumi

from components.libvirt.common import Attachment, ClusterContext
from components.libvirt.machines import MachineSet


class Workers(MachineSet):
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
            "ocp:libvirt:Workers",
            name,
            cluster,
            cluster.plan.workers,
            cluster.config.workers,
            attachment,
            base_volume_id,
            user_data,
            autostart=True,
            opts=opts,
        )
