"""Cleanup: on `pulumi destroy`, removes what an integrated cluster made in OpenStack itself
(cluster/cleanup.py says what and in what order) before the network it blocks is deleted.

A local command whose `delete` is the script and which does nothing else: its create is a
no-op and every input is in `ignore_changes`, so no `pulumi up` runs it again or replaces
it (a replacement would run the delete on a live cluster). It depends on the network,
subnet, router, router interface and security groups (through their components) and on
nothing that references it, so the engine deletes it, running the script, before them.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_command as command

from cluster.cleanup import cleanup_script
from components.installer import RUN_ONCE
from components.openstack.common import ClusterContext


class Cleanup(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        cluster: ClusterContext,
        blocked: Sequence[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("ocp:openstack:Cleanup", name, None, opts)
        command.local.Command(
            f"{name}-on-destroy",
            create="true",
            delete=cleanup_script(),
            interpreter=["/bin/bash", "-c"],
            environment=cluster.infra_id.apply(lambda infra_id: {"OS_CLOUD": cluster.openstack.cloud, "INFRA_ID": infra_id}),
            logging=command.local.Logging.STDOUT_AND_STDERR,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(blocked), ignore_changes=RUN_ONCE),
        )
        self.register_outputs({})
