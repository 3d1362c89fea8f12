"""ControlPlane: the masters, created one after the other so anti-affinity holds."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi

from components.openstack.common import ClusterContext, Subnet
from components.openstack.machines import MachineSet


class ControlPlane(MachineSet):
    def __init__(
        self,
        name: str,
        cluster: ClusterContext,
        subnet: Subnet,
        security_groups: dict[str, pulumi.Input[Sequence[str]]],
        user_data: dict[str, pulumi.Output[str]],
        opts: pulumi.ResourceOptions | None = None,
    ):
        plan = cluster.plan
        super().__init__(
            "ocp:openstack:ControlPlane",
            name,
            "master",
            cluster,
            plan.masters,
            cluster.config.masters,
            # Masters may hold the API VIP, and the Ingress VIP when they run the routers.
            (plan.api_vip, plan.ingress_vip),
            subnet,
            security_groups,
            user_data,
            one_at_a_time=True,
            opts=opts,
        )
