"""A worker's drain command: `oc adm drain` and `oc delete node` before its server or domain
goes (cluster/drain.py says what and why)."""

from __future__ import annotations

import pulumi
import pulumi_command as command

from cluster.config import ClusterConfig
from cluster.drain import drain_script
from cluster.installer import InstallerAssets

# Its create does nothing; an update (a new `oc` or script) runs that create again, nothing else.
NO_OP = "true"


def drain_command(
    name: str,
    config: ClusterConfig,
    node_name: pulumi.Input[str],
    assets: pulumi.Output[InstallerAssets],
    machine: pulumi.Resource,
    parent: pulumi.Resource,
) -> command.local.Command:
    """Depends on the worker's server or domain: made after it, and deleted (the script run) before it."""
    kubeconfig = pulumi.Output.secret(assets.apply(lambda installer: installer.kubeconfig))
    return command.local.Command(
        name,
        create=NO_OP,
        delete=drain_script(),
        interpreter=["/bin/bash", "-c"],
        environment=pulumi.Output.all(node_name, kubeconfig).apply(
            lambda values: {"NODE": values[0], "OC": config.installer.oc, "KUBECONFIG_DATA": values[1]}
        ),
        logging=command.local.Logging.STDOUT_AND_STDERR,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[machine]),
    )
