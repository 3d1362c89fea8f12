"""The program's two steps, shared by `__main__.py` and the offline plan: read the stack's
configuration (stopping with one clear message before any resource), then build the cluster."""

from __future__ import annotations

import os
import time
from pathlib import Path

import yaml

import pulumi
from pulumi.runtime.config import CONFIG, get_config_env

from cluster.addresses import AddressPlan, plan_addresses
from cluster.config import ClusterConfig, ConfigError, load_config, pem_bundle_problem
from cluster.installer import DIR_MARKER, cloud_ca_bundle, installer_dir, missing_asset_files
from cluster.manifests import read_extra_manifests
from cluster.preflight import libvirt_host_problems
from ignition.chrony import machine_configs
from ignition.nodes import glance_shim_problems


def now() -> float:
    """The program's clock (the offline plan sets another to preview a later run)."""
    return time.time()


def read_config() -> tuple[ClusterConfig, AddressPlan]:
    raw = {**get_config_env(), **CONFIG.get()}
    try:
        # The ocp: keys, and openstack:cloud, which must not contradict ocp:openstack.cloud.
        config = load_config(raw)
        plan = plan_addresses(config)
        check_local_files(config, plan, pulumi.get_stack())
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


def clouds_yaml_file() -> Path | None:
    """The clouds.yaml that openshift-install and the openstack CLI read: OS_CLIENT_CONFIG_FILE,
    else the first of ./clouds.yaml, ~/.config/openstack/clouds.yaml, /etc/openstack/clouds.yaml."""
    override = os.environ.get("OS_CLIENT_CONFIG_FILE")
    if override:
        return Path(override) if Path(override).is_file() else None
    candidates = (Path.cwd() / "clouds.yaml", Path.home() / ".config/openstack/clouds.yaml", Path("/etc/openstack/clouds.yaml"))
    return next((path for path in candidates if path.is_file()), None)


def clouds_yaml_ca(config: ClusterConfig) -> tuple[str | None, list[str]]:
    """The CA that the clouds.yaml entry's `cacert` names, and its problems: in integrated mode (the
    installer and the cluster read it) and wherever the bootstrap fetches its config from Glance."""
    path = clouds_yaml_file() if config.integrated or config.uses_glance else None
    if config.openstack is None or path is None:
        return None, []
    try:
        entry = ((yaml.safe_load(path.read_text()) or {}).get("clouds") or {}).get(config.openstack.cloud) or {}
    except (OSError, yaml.YAMLError, AttributeError):
        return None, []  # the installer reports an unreadable clouds.yaml in its own words
    cacert = entry.get("cacert") if isinstance(entry, dict) else None
    if not cacert:
        return None, []
    ca_file = Path(str(cacert)).expanduser()
    text = ca_file.read_text(errors="replace") if ca_file.is_file() else None
    problem = pem_bundle_problem(text) if text is not None else None
    if text is None or problem:
        what = "is not a file" if text is None else f"openshift-install would refuse ({problem})"
        readers = (
            "openshift-install and the cluster's cloud provider read that CA"
            if config.integrated
            else "the bootstrap trusts it to fetch its config from the cloud's image endpoint"
        )
        return None, [
            f"ocp:openstack.cloud: the clouds.yaml entry \"{config.openstack.cloud}\" ({path}) names cacert {cacert}, which "
            f"{what}: fix the path or the file there ({readers})"
        ]
    return text, []


def build_cluster(config: ClusterConfig, plan: AddressPlan) -> dict[str, object]:
    """Create every resource; returns the stack outputs."""
    import pulumi_command as command

    from components.installer import Installer

    pull_secret = pulumi.Output.secret(config.pull_secret.get_secret_value())
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
