"""What users reach the cluster by: URLs and an /etc/hosts block. Pure Python."""

from __future__ import annotations

from cluster.config import ClusterConfig

# Routes a fresh cluster serves under *.apps; /etc/hosts has no wildcards, so they are listed.
APP_HOSTS = (
    "console-openshift-console",
    "oauth-openshift",
    "downloads-openshift-console",
    "canary-openshift-ingress-canary",
    "default-route-openshift-image-registry",
    "alertmanager-main-openshift-monitoring",
    "prometheus-k8s-openshift-monitoring",
    "thanos-querier-openshift-monitoring",
)


def api_url(config: ClusterConfig) -> str:
    return f"https://api.{config.cluster_domain}:6443"


def console_url(config: ClusterConfig) -> str:
    return f"https://console-openshift-console.apps.{config.cluster_domain}"


def etc_hosts(config: ClusterConfig, api_address: str, ingress_address: str) -> str:
    """Lines for a client's /etc/hosts when no DNS serves the cluster's names."""
    domain = config.cluster_domain
    lines = [f"{api_address} api.{domain} api-int.{domain}"]
    lines += [f"{ingress_address} {host}.apps.{domain}" for host in APP_HOSTS]
    return "\n".join(lines) + "\n"
