"""Workers: created in parallel; scaling within workers.maxCount touches nothing else."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi

from components.openstack.common import ClusterContext, Subnet
from components.openstack.machines import MachineSet


class Workers(MachineSet):
    def __init__(
        self,
        name: str,
        cluster: ClusterContext,
        subnet: Subnet,
        security_groups: dict[str, pulumi.Input[Sequence[str]]],
        user_data: dict[str, pulumi.Output[str]],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__(
            "ocp:openstack:Workers",
            name,
            "worker",
            cluster,
            cluster.plan.workers,
            cluster.config.workers,
            (cluster.plan.ingress_vip,),
            subnet,
            security_groups,
            user_data,
            one_at_a_time=False,
            opts=opts,
        )
