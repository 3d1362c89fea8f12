"""What `create manifests` adds for platform openstack."""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

from tools.sample_installer.install_config import _Cluster, _OpenStack
from tools.sample_installer.kube import _config_map, _meta, _secret
from tools.sample_installer.release import FAKE_MARKER
from tools.sample_installer.render import _yaml

_MACHINE_API = "openshift-machine-api"
_CLUSTER_LABEL = "machine.openshift.io/cluster-api-cluster"
# The installer stores the user's clouds.yaml entry under this name, whatever its own; the
# Machine API and the cloud provider look it up by it.
_CREDENTIALS_CLOUD = "openstack"
_FAKE_CLOUDS_CONF = (
    f"# {FAKE_MARKER}: not a credential\n[Global]\nauth-url = \"https://keystone.fake.invalid:5000/v3\"\n"
    'username = "fake"\npassword = "FAKE-not-a-password"\ntenant-name = "fake"\ndomain-name = "Default"\n'
)


def _openstack_manifests(cluster: _Cluster) -> dict[str, dict[str, Any]]:
    """What `create manifests` adds for platform openstack: the cloud provider's config, the
    cloud credentials (a FAKE clouds.yaml) and the Machine API objects a UPI install deletes."""
    assert cluster.openstack is not None
    infra, replicas = cluster.infra_id, cluster.control_plane_replicas
    m: dict[str, dict[str, Any]] = {
        "manifests/cloud-provider-config.yaml": _config_map(
            "cloud-provider-config", "openshift-config", {"config": _cloud_provider_config(cluster.openstack)}
        ),
        "openshift/99_cloud-creds-secret.yaml": _secret(
            "openstack-credentials", "kube-system",
            {"clouds.yaml": _fake_clouds_yaml(cluster.openstack.cloud), "clouds.conf": _FAKE_CLOUDS_CONF},
        ),
        "openshift/99_role-cloud-creds-secret-reader.yaml": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "openstack-creds-secret-reader", "namespace": "kube-system"},
            "rules": [
                {"apiGroups": [""], "resourceNames": ["openstack-credentials"], "resources": ["secrets"], "verbs": ["get"]}
            ],
        },
        "openshift/99_openshift-cluster-api_worker-machineset-0.yaml": _machine_set(cluster, f"{infra}-worker-0"),
        "openshift/99_openshift-machine-api_master-control-plane-machine-set.yaml": {
            "apiVersion": "machine.openshift.io/v1",
            "kind": "ControlPlaneMachineSet",
            "metadata": {**_meta("cluster", _MACHINE_API), "labels": {_CLUSTER_LABEL: infra}},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": _machine_labels(infra, "master")},
                "state": "Active",
                "strategy": {"type": "RollingUpdate"},
                "template": {
                    "machineType": "machines_v1beta1_machine_openshift_io",
                    "machines_v1beta1_machine_openshift_io": {
                        "metadata": {"labels": _machine_labels(infra, "master")},
                        "spec": _machine_spec(cluster, "master"),
                    },
                },
            },
            "status": {},
        },
    }
    for index in range(replicas):
        m[f"openshift/99_openshift-cluster-api_master-machines-{index}.yaml"] = {
            "apiVersion": "machine.openshift.io/v1beta1",
            "kind": "Machine",
            "metadata": {**_meta(f"{infra}-master-{index}", _MACHINE_API), "labels": _machine_labels(infra, "master")},
            "spec": _machine_spec(cluster, "master"),
            "status": {},
        }
    return m


def _fake_clouds_yaml(cloud: str) -> str:
    """Stands in for the user's clouds.yaml entry `cloud`, which a fake never reads; the
    installer stores that entry under the name "openstack"."""
    entry = {
        "auth": {
            "auth_url": "https://keystone.fake.invalid:5000/v3",  # .invalid never resolves
            "password": "FAKE-not-a-password",
            "project_name": "fake",
            "user_domain_name": "Default",
            "username": "fake",
        },
    }
    header = f"# {FAKE_MARKER}: stands in for the clouds.yaml entry {json.dumps(cloud)}; not a credential\n"
    return header + _yaml({"clouds": {_CREDENTIALS_CLOUD: entry}})


def _fake_uuid(kind: str, name: str) -> str:
    """A stable fake OpenStack ID for a name the real installer would look up in the cloud."""
    return str(uuid.UUID(bytes=hashlib.sha256(f"{FAKE_MARKER} {kind} {name}".encode()).digest()[:16], version=4))


def _cloud_provider_config(openstack: _OpenStack) -> str:
    config = "[Global]\nsecret-name = openstack-credentials\nsecret-namespace = kube-system\n"
    if openstack.external_network:  # LoadBalancer Services' floating IPs come from it
        config += f"\n[LoadBalancer]\nfloating-network-id = {_fake_uuid('network', openstack.external_network)}\n"
    return config


def _machine_labels(infra: str, role: str) -> dict[str, str]:
    return {
        _CLUSTER_LABEL: infra,
        "machine.openshift.io/cluster-api-machine-role": role,
        "machine.openshift.io/cluster-api-machine-type": role,
    }


def _machine_spec(cluster: _Cluster, role: str) -> dict[str, Any]:
    """A Machine's spec: the OpenStack provider spec, named and tagged as the installer does."""
    assert cluster.openstack is not None
    infra, config = cluster.infra_id, cluster.install_config
    pool = (config.get("controlPlane") or {}) if role == "master" else ((config.get("compute") or [{}])[0] or {})
    default_pool = cluster.install_config["platform"]["openstack"].get("defaultMachinePlatform") or {}
    flavor = ((pool.get("platform") or {}).get("openstack") or {}).get("type") or default_pool.get("type") or ""
    image = cluster.openstack.cluster_os_image
    if not image or "://" in image:  # a URL: the installer uploads it to Glance under this name
        image = f"{infra}-rhcos"
    tag = f"openshiftClusterID={infra}"
    provider = {
        "apiVersion": "machine.openshift.io/v1alpha1",
        "cloudName": _CREDENTIALS_CLOUD,
        "cloudsSecret": {"name": "openstack-cloud-credentials", "namespace": _MACHINE_API},
        "flavor": flavor,
        "image": image,
        "kind": "OpenstackProviderSpec",
        "metadata": {"creationTimestamp": None},
        "networks": [{"filter": {}, "subnets": [{"filter": {"name": f"{infra}-nodes", "tags": tag}}]}],
        "securityGroups": [{"filter": {}, "name": f"{infra}-{role}"}],
        "serverGroupName": f"{infra}-{role}",
        "serverMetadata": {"Name": f"{infra}-{role}", "openshiftClusterID": infra},
        "tags": [tag],
        "trunk": True,
        "userDataSecret": {"name": f"{role}-user-data"},
    }
    return {"lifecycleHooks": {}, "metadata": {}, "providerSpec": {"value": provider}}


def _machine_set(cluster: _Cluster, name: str) -> dict[str, Any]:
    infra = cluster.infra_id
    labels = _machine_labels(infra, "worker")
    return {
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "MachineSet",
        "metadata": {**_meta(name, _MACHINE_API), "labels": labels},
        "spec": {
            "replicas": cluster.compute_replicas,
            "selector": {"matchLabels": {_CLUSTER_LABEL: infra, "machine.openshift.io/cluster-api-machineset": name}},
            "template": {
                "metadata": {"labels": {**labels, "machine.openshift.io/cluster-api-machineset": name}},
                "spec": _machine_spec(cluster, "worker"),
            },
        },
        "status": {"replicas": 0},
    }
