"""WorkerPointers, MasterPointers: each integrated node's user_data, from the pointer config it must boot from.

While the bootstrap exists the cluster is being installed: a node gets the installer's pointer.
A node made once the bootstrap is gone, whatever release the cluster was installed at, gets the
one the running cluster serves (secret openshift-machine-api/<role>-user-data-managed, there from
4.14): from 4.19 the MCO re-signs its config server's certificate with a CA of its own once any
MachineSet exists, also in a cluster upgraded to 4.19, and the installer's pointer would fail TLS
(cluster/installer.py, MCS_CA_ROTATION_MINOR). For a
master that is one made again after install (tools.recover, a server lost from the state).

One local command per node, made with it and deleted with it, prints that pointer; it runs
once (every input ignored after), so a running node never needs the API again and a node
made later reads the cluster as it is then. Its output is a secret and never logged.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_command as command

from cluster.addresses import Node, server_name
from cluster.installer import InstallerAssets, pointer_environment, pointer_script
from components.installer import RUN_ONCE
from components.openstack.common import ClusterContext
from ignition.nodes import integrated_pointer_user_data


class _Pointers(pulumi.ComponentResource):
    TYPE: str  # each role's component token
    user_data: dict[str, pulumi.Output[str]]

    def __init__(
        self,
        name: str,
        cluster: ClusterContext,
        nodes: Sequence[Node],
        assets: pulumi.Output[InstallerAssets],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__(self.TYPE, name, None, opts)
        config, bootstrap_enabled = cluster.config, cluster.plan.bootstrap_enabled
        self.user_data = {}
        for node in nodes:

            def environment(assets: InstallerAssets, node: Node = node) -> dict[str, str]:
                server = server_name(config, node, assets.infra_id)
                # A stack installed before masters had these commands makes them with its masters
                # running: a pointer it cannot read then is warned about, not refused.
                strict = node.role != "master" or (assets.record is not None and assets.record.master_pointers)
                return pointer_environment(config, assets, server, assets.pointer_from_cluster(bootstrap_enabled), node.role, strict)

            pointer = command.local.Command(
                f"{name}-{node.role}-{node.index}",
                create=pointer_script(node.role),
                environment=pulumi.Output.secret(assets.apply(environment)),
                add_previous_output_in_env=False,
                logging=command.local.Logging.STDERR,
                opts=pulumi.ResourceOptions(parent=self, additional_secret_outputs=["stdout"], ignore_changes=RUN_ONCE),
            )
            self.user_data[node.name] = pulumi.Output.all(pulumi.Output.secret(pointer.stdout), assets).apply(
                lambda values, node=node: integrated_pointer_user_data(config, node, values[1].infra_id, values[0])
            )
        self.register_outputs({})


class WorkerPointers(_Pointers):
    TYPE = "ocp:openstack:WorkerPointers"


class MasterPointers(_Pointers):
    TYPE = "ocp:openstack:MasterPointers"
