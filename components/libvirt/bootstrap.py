"""Bootstrap: the bootstrap node, sized like a master, with its full ignition through fw_cfg.

No helper and no stored copy elsewhere: its disk, ignition file and domain are all there
is, and all go when bootstrap.enabled is false (after `wait-for bootstrap-complete`).
"""

from __future__ import annotations

import pulumi

from components.libvirt.common import Attachment, ClusterContext
from components.libvirt.machines import Machine


class Bootstrap(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        cluster: ClusterContext,
        attachment: Attachment,
        base_volume_id: pulumi.Input[str],
        user_data: pulumi.Output[str],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("ocp:libvirt:Bootstrap", name, None, opts)
        machine = Machine(
            f"{name}-node",
            cluster,
            cluster.plan.bootstrap,
            cluster.config.masters,
            attachment,
            base_volume_id,
            user_data,
            autostart=False,  # temporary: it must not come back after a host reboot
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"domainId": machine.domain.id})
