"""The manifests `create manifests` writes: /opt/openshift/{manifests,openshift}/* of the bootstrap node,
with 4.19.0-ec.5's file names; and the ClusterVersion overrides `create ignition-configs` adds."""

from __future__ import annotations

import copy
from fnmatch import fnmatch
from typing import Any, Mapping

import yaml

from cluster import machine_yaml
from tools.sample_installer.install_config import _Cluster
from tools.sample_installer.kube import _config_map, _config_object, _meta, _secret, _tls_secret
from tools.sample_installer.openstack import _openstack_manifests
from tools.sample_installer.pki import _PKI
from tools.sample_installer.release import FAKE_MARKER, IGNITION_VERSION, INSTALLER_VERSION, channel
from tools.sample_installer.render import _json, _pointer_ignition, _yaml
from tools.sample_installer.x509 import NOT_AFTER, NOT_BEFORE


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


def _public_install_config(cluster: _Cluster) -> dict[str, Any]:
    """The install-config as the installer hands it to the cluster: its defaults filled in, the
    pull secret emptied (the key stays)."""
    config = copy.deepcopy(cluster.install_config)
    config["pullSecret"] = ""
    config.setdefault("publish", "External")
    config.setdefault("additionalTrustBundlePolicy", "Proxyonly")
    if isinstance(config.get("metadata"), dict):
        config["metadata"].setdefault("creationTimestamp", None)
    pools = [config.get("controlPlane"), *(config.get("compute") or [])]
    for pool in pools:
        if isinstance(pool, dict):
            pool.setdefault("architecture", "amd64")
            pool.setdefault("platform", {})
    return config


def _feature_gate(cluster: _Cluster) -> dict[str, Any]:
    feature_set = cluster.install_config.get("featureSet") or ""
    return {
        "apiVersion": "config.openshift.io/v1",
        "kind": "FeatureGate",
        "metadata": _meta("cluster"),
        "spec": {"featureSet": feature_set} if feature_set else {},
        "status": {"featureGates": None},
    }


_MCO = "openshift-machine-config-operator"


def _mco_annotations(description: str) -> dict[str, str]:
    return {"openshift.io/description": f"{FAKE_MARKER}: {description}", "openshift.io/owning-component": "Machine Config Operator"}


def _certificate_secret(
    name: str, pair: Any, managed_type: str, description: str, hostnames: list[str] | None = None
) -> dict[str, Any]:
    """A TLS secret the machine-config-operator takes over, annotated with its issuer and validity."""
    secret = _tls_secret(name, _MCO, pair, timestamp=False)
    annotations = {
        **_mco_annotations(description),
        "auth.openshift.io/certificate-issuer": "root-ca",
        "auth.openshift.io/certificate-not-after": NOT_AFTER,
        "auth.openshift.io/certificate-not-before": NOT_BEFORE,
    }
    if hostnames:
        annotations["auth.openshift.io/certificate-hostnames"] = ",".join(hostnames)
    secret["metadata"]["annotations"] = annotations
    secret["metadata"]["labels"] = {"auth.openshift.io/managed-certificate-type": managed_type}
    return secret


def _manifests(cluster: _Cluster, pki: _PKI, password_hash: str) -> dict[str, dict[str, Any]]:
    """/opt/openshift/{manifests,openshift}/* of the bootstrap node, as `create manifests` writes them."""
    certs = pki.certs
    root_ca = certs["root-ca"]
    cluster_networks = [{"cidr": n["cidr"], "hostPrefix": n.get("hostPrefix", 23)} for n in cluster.cluster_networks]
    single_node = cluster.control_plane_replicas == 1
    install_config = _config_map(
        "cluster-config-v1", "kube-system", {"install-config": _yaml(_public_install_config(cluster))}, timestamp=False
    )
    install_config["metadata"]["annotations"] = {
        "kubernetes.io/description": f"{FAKE_MARKER}: the install-config this cluster was made from"
    }
    mcs_ca_bundle = _config_map("machine-config-server-ca", _MCO, {"ca-bundle.crt": root_ca.cert}, timestamp=False)
    mcs_ca_bundle["metadata"]["annotations"] = _mco_annotations("the CAs the machine config server's certificate may chain to")
    mcs_ca_bundle["metadata"]["labels"] = {"auth.openshift.io/managed-certificate-type": "ca-bundle"}
    m: dict[str, dict[str, Any]] = {
        "manifests/cluster-config.yaml": install_config,
        "manifests/cluster-dns-02-config.yml": _config_object(
            "DNS", {"baseDomain": cluster.domain, "platform": {"aws": None, "type": ""}}
        ),
        "manifests/cluster-infrastructure-02-config.yml": _infrastructure(cluster),
        "manifests/cluster-ingress-02-config.yml": _config_object(
            "Ingress",
            {"domain": f"apps.{cluster.domain}", "loadBalancer": {"platform": {"type": ""}}},
            # A single-node control plane without a platform keeps the routers on it.
            {"defaultPlacement": "ControlPlane" if single_node and not cluster.openstack else "Workers"},
        ),
        "manifests/cluster-network-02-config.yml": _config_object(
            "Network",
            {
                "clusterNetwork": cluster_networks,
                "externalIP": {"policy": {}},
                "networkDiagnostics": {
                    "mode": "",
                    "sourcePlacement": {"nodeSelector": None, "tolerations": None},
                    "targetPlacement": {"nodeSelector": None, "tolerations": None},
                },
                "networkType": cluster.network_type,
                "serviceNetwork": cluster.service_networks,
            },
        ),
        "manifests/cluster-proxy-01-config.yaml": _proxy_manifest(cluster),
        "manifests/cluster-scheduler-02-config.yml": _config_object(
            "Scheduler",
            {
                "mastersSchedulable": cluster.compute_replicas == 0,
                "policy": {"name": ""},
                "profileCustomizations": {"dynamicResourceAllocation": ""},
            },
        ),
        "manifests/cvo-overrides.yaml": {
            "apiVersion": "config.openshift.io/v1",
            "kind": "ClusterVersion",
            "metadata": {"name": "version", "namespace": "openshift-cluster-version"},
            "spec": {"channel": channel(), "clusterID": cluster.cluster_id},
        },
        "manifests/kube-cloud-config.yaml": _secret("kube-cloud-cfg", "kube-system", {"config": ""}, timestamp=False),
        "manifests/kube-system-configmap-root-ca.yaml": _config_map(
            "root-ca", "kube-system", {"ca.crt": root_ca.cert}, timestamp=False
        ),
        "manifests/machine-config-server-ca-configmap.yaml": mcs_ca_bundle,
        "manifests/machine-config-server-ca-secret.yaml": _certificate_secret(
            "machine-config-server-ca", root_ca, "signer", "the CA that signs the machine config server's certificate"
        ),
        "manifests/machine-config-server-tls-secret.yaml": _certificate_secret(
            "machine-config-server-tls", certs["machine-config-server"], "target",
            "the machine config server's certificate and key", [cluster.api_int, *cluster.api_vips],
        ),
        "manifests/openshift-config-secret-pull-secret.yaml": _secret(
            "pull-secret", "openshift-config", {".dockerconfigjson": cluster.pull_secret},
            "kubernetes.io/dockerconfigjson", timestamp=False,
        ),
        "openshift/99_feature-gate.yaml": _feature_gate(cluster),
        "openshift/99_kubeadmin-password-secret.yaml": _secret(
            "kubeadmin", "kube-system", {"kubeadmin": password_hash}, kind=None, timestamp=False
        ),
        "openshift/openshift-install-manifests.yaml": _config_map(
            # "user": the installer's invoker when OPENSHIFT_INSTALL_INVOKER is unset.
            "openshift-install-manifests", "openshift-config", {"invoker": "user", "version": INSTALLER_VERSION}
        ),
    }
    for role in ("master", "worker"):
        user_data = _pointer_ignition(cluster, role, root_ca.cert).decode()
        m[f"openshift/99_openshift-cluster-api_{role}-user-data-secret.yaml"] = _secret(
            f"{role}-user-data", "openshift-machine-api", {"disableTemplating": "true\n", "userData": user_data},
            timestamp=False,
        )
        if cluster.ssh_key:  # without one the installer writes no such MachineConfig
            m[f"openshift/99_openshift-machineconfig_99-{role}-ssh.yaml"] = _machine_config_ssh(cluster, role)
    if cluster.trust_bundle:
        bundle = _config_map("user-ca-bundle", "openshift-config", {"ca-bundle.crt": cluster.trust_bundle})
        bundle["metadata"]["annotations"] = {"openshift.io/owning-component": "End User"}
        m["manifests/user-ca-bundle-config.yaml"] = bundle
    if cluster.openstack:
        m.update(_openstack_manifests(cluster))
    return m


CVO_OVERRIDES = "manifests/cvo-overrides.yaml"
CVO_ORIGINAL_PATCH = "original_cvo_overrides.patch"  # beside manifests/ on the bootstrap node
# openshift/* that belong to the installer's machine assets, not to its manifests: the
# ClusterVersion overrides leave them out (file names of installer 4.19's pkg/asset/machines).
_MACHINE_MANIFESTS = (
    "99_openshift-cluster-api_master-user-data-secret.yaml",
    "99_openshift-cluster-api_worker-user-data-secret.yaml",
    "99_openshift-machine-api_master-control-plane-machine-set.yaml",
    "99_openshift-machineconfig_*.yaml",
    "99_openshift-cluster-api_host-bmc-secrets-*.yaml",
    "99_openshift-cluster-api_host-network-config-secrets-*.yaml",
    "99_openshift-cluster-api_hosts-*.yaml",
    "99_openshift-cluster-api_master-machines-*.yaml",
    "99_openshift-cluster-api_worker-machineset-*.yaml",
    "99_openshift-machine-api_address-*master*.yaml",
    "99_openshift-machine-api_claim-*master*.yaml",
)


def _is_machine_manifest(name: str) -> bool:
    directory, _, base = name.partition("/")
    return directory == "openshift" and any(fnmatch(base, pattern) for pattern in _MACHINE_MANIFESTS)


def _cvo_ignore(manifest_files: Mapping[str, bytes]) -> dict[str, bytes]:
    """What `create ignition-configs` makes of cvo-overrides.yaml for the bootstrap node: every
    manifest it hands over (machine assets aside) listed as unmanaged, so the cluster-version
    operator leaves them to the installer; the original overrides kept as a patch to restore.
    Empty when the caller deleted cvo-overrides.yaml."""
    if CVO_OVERRIDES not in manifest_files:
        return {}
    ordered = sorted(n for n in manifest_files if n.startswith("manifests/")) + sorted(
        n for n in manifest_files if n.startswith("openshift/") and not _is_machine_manifest(n)
    )
    documents: dict[str, dict[str, Any]] = {}
    for name in ordered:
        try:
            document = machine_yaml.load(manifest_files[name])
        except yaml.YAMLError as err:
            raise ValueError(f"could not parse manifest {name}: {err}") from err
        documents[name] = document if isinstance(document, dict) else {}
    version = documents.pop(CVO_OVERRIDES)
    spec = version.setdefault("spec", {})
    original = spec.get("overrides")
    ignored = []
    for document in documents.values():
        api_version, metadata = str(document.get("apiVersion") or ""), document.get("metadata") or {}
        ignored.append(
            {
                "group": api_version.rpartition("/")[0],
                "kind": document.get("kind") or "",
                "name": metadata.get("name") or "",
                "namespace": metadata.get("namespace") or "",
                "unmanaged": True,
            }
        )
    spec["overrides"] = ignored + list(original or [])
    return {CVO_OVERRIDES: _yaml(version).encode(), CVO_ORIGINAL_PATCH: _json({"spec": {"overrides": original}})}
