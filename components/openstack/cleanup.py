"""Cleanup: on `pulumi destroy`, removes what an integrated cluster made in OpenStack itself
(cluster/cleanup.py says what and in what order) before the network it blocks is deleted.

A local command whose `delete` is the script and which does nothing else: its create is a
no-op and every input but `delete` is in `ignore_changes`. A new script updates it in place
(pulumi-command runs the create, `true`, on update; only `triggers` would replace it, and a
replacement would run the delete on a live cluster), so a destroy runs this program's
current script. It depends on the network, subnet, router, router interface and security
groups (through their components), and the masters, the workers and the bootstrap's Glance
image depend on it: the engine runs it after deleting them and before deleting the network and
groups.

Its second command, `mark`, runs before any server goes (it depends on them all; made by
`mark_before` once the node pools exist): it tags with the cluster's tag what serves the servers but
names nothing of the cluster (EgressIP reservations, 4.14/4.15 Service load balancers and their
groups), which on a network the user gave is how the cleanup tells them from other clusters' and
other projects'. It never fails a destroy and is, like the cleanup, updated in place.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_command as command

from cluster.cleanup import cleanup_script, mark_script
from cluster.config import ClusterConfig
from components.installer import RUN_ONCE
from components.openstack.common import ClusterContext

def own_group_zones(config: ClusterConfig) -> dict[str, list[str]]:
    """The zones of the roles whose server groups are per zone (the cleanup leaves those to Pulumi)."""
    roles = (("master", config.masters), ("worker", config.workers))
    return {role: list(section.availability_zones) for role, section in roles if section.groups_per_zone}


# Every input of the command but its script: none of them may run it again.
KEEPS_SCRIPT_CURRENT = [name for name in RUN_ONCE if name != "delete"]


class Cleanup(pulumi.ComponentResource):
    command: command.local.Command

    def __init__(
        self,
        name: str,
        cluster: ClusterContext,
        blocked: Sequence[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("ocp:openstack:Cleanup", name, None, opts)
        self.name, self.cluster = name, cluster
        self.command = command.local.Command(
            f"{name}-on-destroy",
            create="true",
            delete=cleanup_script(own_group_zones(cluster.config)),
            interpreter=["/bin/bash", "-c"],
            environment=cluster.infra_id.apply(lambda infra_id: {"OS_CLOUD": cluster.openstack.cloud, "INFRA_ID": infra_id}),
            logging=command.local.Logging.STDOUT_AND_STDERR,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(blocked), ignore_changes=KEEPS_SCRIPT_CURRENT),
        )
        self.register_outputs({})

    def mark_before(self, servers: Sequence[pulumi.Resource]) -> command.local.Command:
        """The tagging that runs on destroy before these servers (every node's) are deleted."""
        return command.local.Command(
            f"{self.name}-mark-on-destroy",
            create="true",
            delete=mark_script(),
            interpreter=["/bin/bash", "-c"],
            environment=self.cluster.infra_id.apply(lambda infra_id: {"OS_CLOUD": self.cluster.openstack.cloud, "INFRA_ID": infra_id}),
            logging=command.local.Logging.STDOUT_AND_STDERR,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(servers), ignore_changes=KEEPS_SCRIPT_CURRENT),
        )
