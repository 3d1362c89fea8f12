"""Installer: the configs of `openshift-install create ignition-configs`, as secret outputs.

Either runs the installer through pulumi-command, or reads a directory the user already
generated. In both cases the files reach the program through Pulumi state (the command's
stdout, marked secret), so another machine with the same state gets the same configs.
"""

from __future__ import annotations

import hashlib

import pulumi
import pulumi_command as command

from cluster.config import ClusterConfig
from cluster.install_config import render_install_config
from ignition.installer_assets import InstallerAssets, bundle, read_assets_dir, unbundle

# Runs in a fresh directory and prints every file as `<path> <base64>`; constant text, so
# only the environment decides whether the installer runs again.
RUN_INSTALLER = r"""set -eu
rm -rf "$INSTALLER_DIR" && mkdir -p "$INSTALLER_DIR"
printf '%s' "$INSTALL_CONFIG" > "$INSTALLER_DIR/install-config.yaml"
"$OPENSHIFT_INSTALL" create ignition-configs --dir "$INSTALLER_DIR" >&2
for f in bootstrap.ign master.ign worker.ign metadata.json auth/kubeconfig auth/kubeadmin-password; do
  printf '%s ' "$f"; base64 -w0 "$INSTALLER_DIR/$f"; echo
done
"""
# A changed binary path or directory must not mint new PKI: keep what the last run printed.
KEEP_PREVIOUS_OUTPUT = """printf '%s' "$PULUMI_COMMAND_STDOUT"\n"""


class Installer(pulumi.ComponentResource):
    assets: pulumi.Output[InstallerAssets]
    install_config: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        config: ClusterConfig,
        pull_secret: pulumi.Output[str],
        stack: str,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("ocp:installer:Installer", name, None, opts)
        self.install_config = pulumi.Output.secret(pull_secret).apply(
            lambda secret: render_install_config(config, secret)
        )
        installer = config.installer
        if installer.assets_dir is not None:
            # Read now, so a missing file stops the program before anything is created.
            files = read_assets_dir(installer.assets_dir)
            stdout = pulumi.Output.secret(bundle(files))
        else:
            run = command.local.Command(
                f"{name}-run",
                create=RUN_INSTALLER,
                update=KEEP_PREVIOUS_OUTPUT,
                environment={
                    "OPENSHIFT_INSTALL": installer.binary,
                    "INSTALLER_DIR": installer.dir or f"assets/{stack}",
                    "INSTALL_CONFIG": self.install_config,
                },
                # New PKI exactly when the install-config changes.
                triggers=[self.install_config.apply(lambda text: hashlib.sha256(text.encode()).hexdigest())],
                logging=command.local.Logging.STDERR,
                opts=pulumi.ResourceOptions(parent=self, additional_secret_outputs=["stdout"]),
            )
            stdout = pulumi.Output.secret(run.stdout)
        self.assets = stdout.apply(lambda text: InstallerAssets.from_files(unbundle(text)))
        self.register_outputs({"infraId": self.assets.apply(lambda assets: assets.infra_id)})
