"""The program's two steps, shared by `__main__.py` and the offline plan: read the stack's
configuration (stopping with one clear message before any resource), then build the cluster."""

from __future__ import annotations

import pulumi
from pulumi.runtime.config import CONFIG, get_config_env

from cluster.addresses import AddressPlan, plan_addresses
from cluster.config import NAMESPACE, ClusterConfig, ConfigError, check_local_files, load_config


def read_config() -> tuple[ClusterConfig, AddressPlan]:
    raw = {**get_config_env(), **CONFIG.get()}
    try:
        config = load_config({key: value for key, value in raw.items() if key.startswith(f"{NAMESPACE}:")})
        plan = plan_addresses(config)
        check_local_files(config)
    except ConfigError as error:
        raise pulumi.RunError(format_problems(error)) from None
    return config, plan


def format_problems(error: ConfigError) -> str:
    count = len(error.problems)
    heading = "invalid stack configuration" + (f" ({count} problems)" if count > 1 else "")
    return heading + ":\n  " + "\n  ".join(error.problems)


def build_cluster(config: ClusterConfig, plan: AddressPlan) -> dict[str, object]:
    """Create every resource; returns the stack outputs."""
    pull_secret = pulumi.Config(NAMESPACE).require_secret("pullSecret")
    name = config.cluster_name
    if config.platform == "openstack":
        from components.openstack.cluster import OpenStackCluster

        return OpenStackCluster(name, config, plan, pull_secret, pulumi.get_stack()).outputs.as_dict()
    # platform libvirt: the config model allows no third
    from components.libvirt.cluster import LibvirtCluster

    return LibvirtCluster(name, config, plan, pull_secret, pulumi.get_stack()).outputs.as_dict()
