"""The program's two steps, shared by `__main__.py` and the offline plan: read the stack's
configuration (stopping with one clear message before any resource), then build the cluster."""

from __future__ import annotations

import time
from pathlib import Path

import pulumi

from cluster.addresses import AddressPlan, plan_addresses
from cluster.bootstrap_credential import plain_http_auth_url
from cluster.clouds_yaml import clouds_yaml_auth_url, clouds_yaml_ca
from cluster.config import ClusterConfig, ConfigError, load_config, secret_problems
from cluster.installer import DIR_MARKER, cloud_ca_bundle, installer_dir, missing_asset_files
from cluster.libvirt_host import libvirt_host_problems
from cluster.manifests import read_extra_manifests
from cluster.stackfile import StackFileError
from components.config_source import read_stack_config, secret_output
from ignition.chrony import machine_configs
from ignition.nodes import glance_shim_problems


def now() -> float:
    """The program's clock (the offline plan sets another to preview a later run)."""
    return time.time()


def read_config(project_dir: Path) -> tuple[ClusterConfig, AddressPlan]:
    """The stack's config (its keys listed by the stack file in `project_dir`), checked."""
    stack = pulumi.get_stack()
    try:
        # The ocp: keys, and openstack:cloud, which must not contradict ocp:openstack.cloud.
        source = read_stack_config(project_dir, stack)
        problems = secret_problems(source.secret)
        try:
            config = load_config(source.raw)
        except ConfigError as error:
            raise ConfigError(problems + error.problems) from None
        if problems:
            raise ConfigError(problems)
        plan = plan_addresses(config)
        check_local_files(config, plan, stack)
    except StackFileError as error:
        raise pulumi.RunError(str(error)) from None
    except ConfigError as error:
        raise pulumi.RunError(error.report()) from None
    return config, plan


def check_local_files(config: ClusterConfig, plan: AddressPlan, stack: str) -> None:
    """Files the program reads or writes on the machine that runs it (and the Glance shim, which
    carries the clouds.yaml CA), and /dev/kvm for kvm domains there; a problem stops it before any
    resource."""
    problems = []
    installer = config.installer
    if installer.assets_dir is not None:
        missing = missing_asset_files(installer.assets_dir)
        if missing:
            problems.append(
                f"ocp:installer.assetsDir: {installer.assets_dir} lacks {', '.join(missing)}: point it at the --dir of "
                "`openshift-install create ignition-configs`"
            )
    else:
        directory = Path(installer_dir(config, stack))
        if directory.is_dir() and any(directory.iterdir()) and not (directory / DIR_MARKER).exists():
            problems.append(
                f"ocp:installer.dir: {directory} holds files this program did not make, and the installer run starts "
                "by emptying its directory: name a new directory (default assets/<stack>)"
            )
    cloud_ca, ca_problems = clouds_yaml_ca(config)
    problems += ca_problems or glance_shim_problems(config, plan, cloud_ca_bundle(config, cloud_ca))
    auth = clouds_yaml_auth_url(config)  # checked before the provider first logs in there
    refusal = plain_http_auth_url(config, auth[1], auth[0]) if auth else None
    problems += [refusal] if refusal else []
    problems += libvirt_host_problems(config)
    problems += read_extra_manifests(installer.extra_manifests, machine_configs(config))[1]
    key_file = config.bootstrap.helper.ssh_private_key_file
    if config.platform == "openstack" and config.bootstrap.enabled and key_file is not None:
        if not Path(key_file).expanduser().is_file():
            problems.append(
                f"ocp:bootstrap.helper.sshPrivateKeyFile: {key_file} is not a file: name the private key "
                "matching ocp:sshKey, or remove the key to use your SSH agent"
            )
    if problems:
        raise ConfigError(problems)


def build_cluster(config: ClusterConfig, plan: AddressPlan) -> dict[str, object]:
    """Create every resource; returns the stack outputs."""
    import pulumi_command as command

    from components.installer import Installer

    # The pure core read the plain value to check it; resources get the secret Output.
    pull_secret = secret_output("pullSecret")
    stack = pulumi.get_stack()
    # The installer and its provider at the top, under names no setting changes: an edit of
    # the cluster's name or platform meets the cluster's own install record and is refused.
    runner = command.Provider("command")
    cloud_ca = clouds_yaml_ca(config)[0]
    installer = Installer(
        "installer", config, plan, pull_secret, stack, now(), cloud_ca, pulumi.ResourceOptions(provider=runner)
    )
    name = config.cluster_name
    if config.platform == "openstack":
        from components.openstack.cluster import OpenStackCluster

        return OpenStackCluster(name, config, plan, installer, runner).outputs.as_dict()
    # platform libvirt: the config model allows no third
    from components.libvirt.cluster import LibvirtCluster

    return LibvirtCluster(name, config, plan, installer, runner).outputs.as_dict()
