"""Installer: the configs of `openshift-install create ignition-configs`, as secret outputs,
reviewed against the stack before any node is built from them.

A pulumi-command runs the installer, or reads a directory the user already generated. The
files reach the program through Pulumi state (the command's stdout, marked secret), so
another machine with the same state gets the same configs. The command runs
once per cluster: every input is in `ignore_changes`, so no later edit re-runs it (a new
PKI and infra ID would orphan the running nodes); cluster/day2.py says what an edit does
instead, and refuses the ones a running cluster cannot take.
"""

from __future__ import annotations

import pulumi
import pulumi_command as command

from cluster.addresses import AddressPlan
from cluster.config import ClusterConfig, ConfigError
from cluster.day2 import review, stack_settings
from cluster.installer import (
    InstallerAssets,
    read_script,
    render_install_config,
    run_environment,
    run_script,
    unbundle,
    update_script,
)
from cluster.manifests import read_extra_manifests
from ignition import etcd_disk
from ignition.chrony import machine_configs

# Every input of the command: after the first run, none of them may run it again.
RUN_ONCE = ["create", "update", "delete", "environment", "dir", "interpreter", "logging", "stdin", "triggers"]


class Installer(pulumi.ComponentResource):
    # Raises (so nothing that depends on it registers) when the stack cannot change this way.
    assets: pulumi.Output[InstallerAssets]

    def __init__(
        self,
        name: str,
        config: ClusterConfig,
        plan: AddressPlan,
        pull_secret: pulumi.Output[str],
        stack: str,
        now: float,
        clouds_yaml_ca: str | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("ocp:installer:Installer", name, None, opts)
        settings = stack_settings(config, plan)
        # Checked before any resource (components/program.py): here they are good.
        manifests = {**machine_configs(config), **etcd_disk.machine_configs(config), **read_extra_manifests(config.installer.extra_manifests)[0]}
        # The installer directory's marker: two projects or backends may each have a stack `dev`. A new
        # environment value never runs the command again (RUN_ONCE); the marker takes it the next time it runs.
        # A self-managed backend's organization is `organization`; an older language host gives none.
        stack_id = f"{pulumi.get_organization() or 'organization'}/{pulumi.get_project()}/{stack}"
        environment = pulumi.Output.secret(pull_secret).apply(
            lambda secret: run_environment(
                config, stack, render_install_config(config, plan, secret, clouds_yaml_ca), secret, settings, manifests, stack_id
            )
        )
        # Configs the user generated are read into the state once, like the installer's.
        script = run_script() if config.installer.assets_dir is None else read_script()
        run = command.local.Command(
            "installer-run",
            create=script,
            update=update_script() if config.installer.assets_dir is None else script,
            environment=environment,
            # The previous stdout (~400 KB) would not fit in one environment string.
            add_previous_output_in_env=False,
            logging=command.local.Logging.STDERR,
            # The cluster's PKI and infra ID live only here (ocp:protect).
            opts=pulumi.ResourceOptions(
                parent=self, additional_secret_outputs=["stdout"], ignore_changes=RUN_ONCE, protect=config.protect
            ),
        )
        stdout = pulumi.Output.secret(run.stdout)
        self.assets = stdout.apply(lambda text: _reviewed(config, plan, _parsed(text), now))
        self.register_outputs({"infraId": self.assets.apply(lambda assets: assets.infra_id)})


def _parsed(text: str) -> InstallerAssets:
    """The configs, or the one message saying why they cannot be (an infra ID the installer never makes...)."""
    try:
        return InstallerAssets.from_files(unbundle(text))
    except ValueError as error:
        raise pulumi.RunError(str(error)) from None


def _reviewed(config: ClusterConfig, plan: AddressPlan, assets: InstallerAssets, now: float) -> InstallerAssets:
    result = review(config, plan, assets, now)
    for warning in result.warnings:
        pulumi.log.warn(warning)
    if result.problems:
        raise pulumi.RunError(ConfigError(list(result.problems)).report("the stack cannot change this way on a running cluster"))
    return assets
