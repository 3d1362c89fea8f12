"""The `install-config.yaml` that `openshift-install create ignition-configs` consumes. Pure Python.

`platform: none`: the installer then talks to no cloud and renders no VIP/LB/DNS pods; this
program provisions the machines and brings keepalived, haproxy and CoreDNS itself.
"""

from __future__ import annotations

from typing import Any

import yaml

from cluster.config import ClusterConfig

CLUSTER_NETWORK = {"cidr": "10.128.0.0/14", "hostPrefix": 23}
SERVICE_NETWORK = "172.30.0.0/16"


def install_config(config: ClusterConfig, pull_secret: str) -> dict[str, Any]:
    document: dict[str, Any] = {
        "apiVersion": "v1",
        "baseDomain": config.base_domain,
        "metadata": {"name": config.cluster_name},
        "networking": {
            "networkType": "OVNKubernetes",
            "machineNetwork": [{"cidr": str(config.machine_network)}],
            "clusterNetwork": [CLUSTER_NETWORK],
            "serviceNetwork": [SERVICE_NETWORK],
        },
        "controlPlane": {"name": "master", "hyperthreading": "Enabled", "replicas": config.masters.count},
        # Always 0: the machines are ours, and a worker count in here would re-run the installer
        # (new PKI) on every scale. Masters' schedulability is set by ignition.nodes instead.
        "compute": [{"name": "worker", "hyperthreading": "Enabled", "replicas": 0}],
        "platform": {"none": {}},
        "pullSecret": pull_secret,
        "sshKey": config.ssh_key,
    }
    if config.proxy is not None:
        proxy = {
            "httpProxy": config.proxy.http_proxy,
            "httpsProxy": config.proxy.https_proxy,
            "noProxy": ",".join(config.proxy.no_proxy) or None,
        }
        document["proxy"] = {key: value for key, value in proxy.items() if value}
    if config.additional_trust_bundle is not None:
        document["additionalTrustBundle"] = config.additional_trust_bundle
    return document


def render_install_config(config: ClusterConfig, pull_secret: str) -> str:
    return yaml.safe_dump(install_config(config, pull_secret), sort_keys=True, default_flow_style=False)
