"""The manifests `create manifests` writes: /opt/openshift/{manifests,openshift}/* of the bootstrap node."""

from __future__ import annotations

from typing import Any

from tools.sample_installer.install_config import _Cluster
from tools.sample_installer.kube import _config_map, _config_object, _secret, _tls_secret
from tools.sample_installer.openstack import _openstack_manifests
from tools.sample_installer.pki import _PKI
from tools.sample_installer.release import IGNITION_VERSION, INSTALLER_VERSION
from tools.sample_installer.render import _pointer_ignition, _yaml


def _topology(replicas: int) -> str:
    return "SingleReplica" if replicas == 1 else "HighlyAvailable"


def _no_proxy(cluster: _Cluster) -> str:
    """status.noProxy as the installer computes it."""
    entries = {".cluster.local", ".svc", "127.0.0.1", "localhost", cluster.api_int}
    entries.update(cluster.machine_networks, cluster.service_networks)
    entries.update(n["cidr"] for n in cluster.cluster_networks)
    entries.update(e.strip() for e in cluster.proxy.get("noProxy", "").split(",") if e.strip())
    return ",".join(sorted(entries))


def _proxy_manifest(cluster: _Cluster) -> dict[str, Any]:
    """The installer always writes the Proxy; it is empty when install-config has none."""
    spec: dict[str, Any] = {
        key: cluster.proxy[key] for key in ("httpProxy", "httpsProxy", "noProxy") if cluster.proxy.get(key)
    }
    # The bundle becomes the cluster's trusted CA with a proxy, or when the policy says Always.
    trusted = cluster.trust_bundle and (cluster.has_proxy or cluster.install_config.get("additionalTrustBundlePolicy") == "Always")
    spec["trustedCA"] = {"name": "user-ca-bundle" if trusted else ""}
    status = {key: value for key, value in spec.items() if key in ("httpProxy", "httpsProxy")}
    if cluster.has_proxy:
        status["noProxy"] = _no_proxy(cluster)
    return _config_object("Proxy", spec, status)


def _infrastructure(cluster: _Cluster) -> dict[str, Any]:
    spec: dict[str, Any] = {"cloudConfig": {"name": ""}, "platformSpec": {"type": "None"}}
    platform: dict[str, Any] = {"type": "None"}
    if cluster.openstack:
        api, ingress = list(cluster.openstack.api_vips), list(cluster.openstack.ingress_vips)
        spec = {
            "cloudConfig": {"key": "config", "name": "cloud-provider-config"},
            "platformSpec": {
                "type": "OpenStack",
                "openstack": {"apiServerInternalIPs": api, "ingressIPs": ingress, "machineNetworks": cluster.machine_networks},
            },
        }
        platform = {
            "type": "OpenStack",
            "openstack": {
                "apiServerInternalIP": api[0],
                "apiServerInternalIPs": api,
                "ingressIP": ingress[0],
                "ingressIPs": ingress,
                "loadBalancer": {"type": cluster.openstack.load_balancer},
                "machineNetworks": cluster.machine_networks,
            },
        }
    status = {
        "apiServerInternalURI": f"https://{cluster.api_int}:6443",
        "apiServerURL": f"https://{cluster.api}:6443",
        "controlPlaneTopology": _topology(cluster.control_plane_replicas),
        "cpuPartitioning": "None",
        "etcdDiscoveryDomain": "",
        "infrastructureName": cluster.infra_id,
        "infrastructureTopology": _topology(cluster.compute_replicas or cluster.control_plane_replicas),
        "platform": platform["type"],
        "platformStatus": platform,
    }
    return _config_object("Infrastructure", spec, status)


def _core_user(cluster: _Cluster) -> dict[str, Any]:
    user: dict[str, Any] = {"name": "core"}
    if cluster.ssh_key:
        user["sshAuthorizedKeys"] = [cluster.ssh_key]
    return user


def _machine_config_ssh(cluster: _Cluster, role: str) -> dict[str, Any]:
    return {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {
            "creationTimestamp": None,
            "labels": {"machineconfiguration.openshift.io/role": role},
            "name": f"99-{role}-ssh",
        },
        "spec": {
            "baseOSExtensionsContainerImage": "",
            "config": {"ignition": {"version": IGNITION_VERSION}, "passwd": {"users": [_core_user(cluster)]}},
            "extensions": None,
            "fips": False,
            "kernelArguments": None,
            "kernelType": "",
            "osImageURL": "",
        },
    }


def _manifests(cluster: _Cluster, pki: _PKI, password_hash: str) -> dict[str, dict[str, Any]]:
    """/opt/openshift/{manifests,openshift}/* of the bootstrap node."""
    certs, bundles = pki.certs, pki.bundles
    root_ca = certs["root-ca"].cert
    public_config = {k: v for k, v in cluster.install_config.items() if k != "pullSecret"}
    public_config.setdefault("publish", "External")
    cluster_networks = [{"cidr": n["cidr"], "hostPrefix": n.get("hostPrefix", 23)} for n in cluster.cluster_networks]
    namespace = {"apiVersion": "v1", "kind": "Namespace"}
    etcd_ns = "openshift-etcd"
    m: dict[str, dict[str, Any]] = {
        "manifests/04-openshift-machine-config-operator.yaml": {
            **namespace,
            "metadata": {
                "name": "openshift-machine-config-operator",
                "annotations": {"include.release.openshift.io/self-managed-high-availability": "true"},
                "labels": {"name": "openshift-machine-config-operator", "openshift.io/run-level": ""},
            },
        },
        "manifests/cluster-config.yaml": _config_map(
            "cluster-config-v1", "kube-system", {"install-config": _yaml(public_config)}
        ),
        "manifests/cluster-dns-02-config.yml": _config_object(
            "DNS", {"baseDomain": cluster.domain, "platform": {"aws": None, "type": ""}}
        ),
        "manifests/cluster-infrastructure-02-config.yml": _infrastructure(cluster),
        "manifests/cluster-ingress-02-config.yml": _config_object(
            "Ingress", {"domain": f"apps.{cluster.domain}", "loadBalancer": {"platform": {"type": ""}}}, {}
        ),
        "manifests/cluster-network-02-config.yml": _config_object(
            "Network",
            {
                "clusterNetwork": cluster_networks,
                "externalIP": {"policy": {}},
                "networkType": cluster.network_type,
                "serviceNetwork": cluster.service_networks,
            },
        ),
        "manifests/cluster-proxy-01-config.yaml": _proxy_manifest(cluster),
        "manifests/cluster-scheduler-02-config.yml": _config_object(
            "Scheduler",
            {"mastersSchedulable": cluster.compute_replicas == 0, "policy": {"name": ""}},
        ),
        "manifests/cvo-overrides.yaml": {
            "apiVersion": "config.openshift.io/v1",
            "kind": "ClusterVersion",
            "metadata": {"name": "version", "namespace": "openshift-cluster-version"},
            "spec": {"channel": "stable-4.12", "clusterID": cluster.cluster_id},
        },
        "manifests/kube-cloud-config.yaml": _secret("kube-cloud-cfg", "kube-system", {"config": ""}),
        "manifests/kube-system-configmap-root-ca.yaml": _config_map("root-ca", "kube-system", {"ca.crt": root_ca}),
        "manifests/machine-config-server-tls-secret.yaml": _tls_secret(
            "machine-config-server-tls", "openshift-machine-config-operator", certs["machine-config-server"]
        ),
        "manifests/openshift-config-secret-pull-secret.yaml": _secret(
            "pull-secret", "openshift-config", {".dockerconfigjson": cluster.pull_secret},
            "kubernetes.io/dockerconfigjson",
        ),
        "manifests/openshift-kubevirt-infra-namespace.yaml": {
            **namespace,
            "metadata": {"name": "openshift-kubevirt-infra"},
        },
        "manifests/admin-kubeconfig-client-ca.yaml": _config_map(
            "admin-kubeconfig-client-ca", "openshift-config", {"ca-bundle.crt": bundles["admin-kubeconfig-ca-bundle"]}
        ),
        "manifests/configmap-csr-controller-ca.yaml": _config_map(
            "csr-controller-ca", "openshift-config-managed", {"ca-bundle.crt": bundles["kubelet-client-ca-bundle"]}
        ),
        "manifests/configmap-initial-etcd-serving-ca.yaml": _config_map(
            "initial-etcd-ca", "openshift-config", {"ca-bundle.crt": bundles["etcd-ca-bundle"]}
        ),
        "manifests/configmap-kubelet-bootstrap-kubeconfig-ca.yaml": _config_map(
            "kubelet-bootstrap-kubeconfig", "openshift-config-managed",
            {"ca-bundle.crt": bundles["kubelet-bootstrap-kubeconfig-ca-bundle"]},
        ),
        "manifests/configmap-sa-token-signing-certs.yaml": _config_map(
            "sa-token-signing-certs", "openshift-config-managed",
            {"service-account-001.pub": pki.service_account.public_pem},
        ),
        "manifests/csr-bootstrap-role-binding.yaml": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "system-bootstrap-node-bootstrapper"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:node-bootstrapper",
            },
            "subjects": [
                {"kind": "User", "name": "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"}
            ],
        },
        "manifests/etcd-ca-bundle-configmap.yaml": _config_map(
            "etcd-ca-bundle", "openshift-config", {"ca-bundle.crt": bundles["etcd-ca-bundle"]}
        ),
        "manifests/etcd-client-secret.yaml": _tls_secret("etcd-client", "openshift-config", certs["etcd-client"]),
        "manifests/etcd-metric-client-secret.yaml": _tls_secret(
            "etcd-metric-client", "openshift-config", certs["etcd-metric-client"]
        ),
        "manifests/etcd-metric-serving-ca-configmap.yaml": _config_map(
            "etcd-metric-serving-ca", "openshift-config", {"ca-bundle.crt": bundles["etcd-metric-ca-bundle"]}
        ),
        "manifests/etcd-metric-signer-secret.yaml": _tls_secret(
            "etcd-metric-signer", "openshift-config", certs["etcd-metric-signer"]
        ),
        "manifests/etcd-namespace.yaml": {
            **namespace,
            "metadata": {
                "name": etcd_ns,
                "annotations": {"openshift.io/node-selector": ""},
                "labels": {"openshift.io/run-level": "0"},
            },
        },
        "manifests/etcd-service.yaml": {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "etcd", "namespace": etcd_ns, "labels": {"k8s-app": "etcd"}},
            "spec": {
                "clusterIP": "None",
                "ports": [
                    {"name": "etcd", "port": 2379, "protocol": "TCP"},
                    {"name": "etcd-metrics", "port": 9979, "protocol": "TCP"},
                ],
                "selector": {"k8s-app": "etcd"},
            },
        },
        "manifests/etcd-serving-ca-configmap.yaml": _config_map(
            "etcd-serving-ca", "openshift-config", {"ca-bundle.crt": bundles["etcd-ca-bundle"]}
        ),
        "manifests/etcd-signer-secret.yaml": _tls_secret("etcd-signer", "openshift-config", certs["etcd-signer"]),
        "manifests/kube-apiserver-serving-ca-configmap.yaml": _config_map(
            "initial-kube-apiserver-server-ca", "openshift-config",
            {"ca-bundle.crt": bundles["kube-apiserver-complete-server-ca-bundle"]},
        ),
        "manifests/openshift-install-manifests.yaml": _config_map(
            "openshift-install-manifests", "openshift-config",
            {"invoker": "openshift-installer", "version": INSTALLER_VERSION},
        ),
        "openshift/99_kubeadmin-password-secret.yaml": _secret(
            "kubeadmin", "kube-system", {"kubeadmin": password_hash}
        ),
        "openshift/99_openshift-machineconfig_99-master-ssh.yaml": _machine_config_ssh(cluster, "master"),
        "openshift/99_openshift-machineconfig_99-worker-ssh.yaml": _machine_config_ssh(cluster, "worker"),
        "openshift/openshift-install.yaml": _config_map(
            "openshift-install", "openshift-config", {"invoker": "openshift-installer", "version": INSTALLER_VERSION}
        ),
    }
    for role in ("master", "worker"):
        user_data = _pointer_ignition(cluster, role, root_ca).decode()
        m[f"openshift/99_openshift-cluster-api_{role}-user-data-secret.yaml"] = _secret(
            f"{role}-user-data", "openshift-machine-api", {"disableTemplating": "true\n", "userData": user_data}
        )
    if cluster.trust_bundle:
        m["manifests/user-ca-bundle-config.yaml"] = _config_map(
            "user-ca-bundle", "openshift-config", {"ca-bundle.crt": cluster.trust_bundle}
        )
    if cluster.openstack:
        m.update(_openstack_manifests(cluster))
    return m
