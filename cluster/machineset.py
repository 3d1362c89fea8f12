"""An example worker MachineSet for an integrated cluster. Pure Python.

This program makes the masters and workers itself (UPI), so the installer's MachineSets are
removed. After install, the Machine API can still add workers if the user applies a
MachineSet: this one is filled in from the stack (image, flavor, network by its tag,
security groups and server group by the names this program gives them), with 0 replicas, so
applying it changes nothing until it is scaled. Machines it creates carry no ingress group:
the routers stay on the router slots (docs/day2.md, "Ingress placement is decided at install").
"""

from __future__ import annotations

from typing import Any

from cluster.config import ClusterConfig
from cluster.config_fields import is_openstack_id
from cluster.config_openstack import AdditionalNetwork


def worker_machineset(config: ClusterConfig, infra_id: str) -> dict[str, Any]:
    assert config.openstack is not None
    workers = config.workers
    name = f"{infra_id}-worker-extra"
    labels = {
        "machine.openshift.io/cluster-api-cluster": infra_id,
        "machine.openshift.io/cluster-api-machine-role": "worker",
        "machine.openshift.io/cluster-api-machine-type": "worker",
    }
    provider: dict[str, Any] = {
        "apiVersion": "machine.openshift.io/v1alpha1",
        "kind": "OpenstackProviderSpec",
        # The installer stores the stack's clouds.yaml entry in the cluster under this name,
        # whatever ocp:openstack.cloud calls it.
        "cloudName": "openstack",
        "cloudsSecret": {"name": "openstack-cloud-credentials", "namespace": "openshift-machine-api"},
        "flavor": config.worker_pool_flavor,
        "image": workers.openstack_image,
        # The subnet by the tag this program puts on it, as the installer's MachineSets find it.
        "networks": [{"filter": {}, "subnets": [{"filter": {"tags": f"openshiftClusterID={infra_id}"}}]}],
        "securityGroups": [{"name": f"{infra_id}-worker"}]
        + [
            {"uuid": group}
            for group in dict.fromkeys((*config.openstack.additional_security_group_ids, *workers.additional_security_group_ids))
        ],
        "serverGroupName": f"{infra_id}-worker",
        "serverMetadata": {"Name": f"{infra_id}-worker", "openshiftClusterID": infra_id},
        "tags": [f"openshiftClusterID={infra_id}", *config.tags],
        "trunk": False,
        "userDataSecret": {"name": "worker-user-data"},
    }
    existing = config.openstack.existing_network
    if existing is not None:
        # The subnet the user is given: the Machine API takes the machine's primary address from it.
        subnet = _by_id_or_name(existing.subnet_id)
        provider["networks"] = [{**_by_id_or_name(existing.network_id), "subnets": [subnet]}]
        if "uuid" in subnet:
            provider["primarySubnet"] = existing.subnet_id
    provider["networks"] += [_extra_network(each) for _, each in config.openstack.networks_of("workers")]
    if workers.root_volume is not None:
        provider["rootVolume"] = {"diskSize": workers.root_volume.size, "sourceUUID": provider.pop("image")}
        if workers.root_volume.type:
            provider["rootVolume"]["volumeType"] = workers.root_volume.type
        if workers.root_volume.availability_zones:
            provider["rootVolume"]["availabilityZone"] = workers.root_volume.availability_zones[0]
    if workers.availability_zones:
        provider["availabilityZone"] = workers.availability_zones[0]
    return {
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "MachineSet",
        "metadata": {"name": name, "namespace": "openshift-machine-api", "labels": dict(labels)},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"machine.openshift.io/cluster-api-cluster": infra_id, "machine.openshift.io/cluster-api-machineset": name}},
            "template": {
                "metadata": {"labels": {**labels, "machine.openshift.io/cluster-api-machineset": name}},
                "spec": {"providerSpec": {"value": provider}},
            },
        },
    }


def _by_id_or_name(reference: str) -> dict[str, Any]:
    return {"uuid": reference} if is_openstack_id(reference) else {"filter": {"name": reference}}


def _extra_network(network: AdditionalNetwork) -> dict[str, Any]:
    """A worker's extra network as the Machine API's NetworkParam describes it."""
    param = _by_id_or_name(network.network)
    if not network.port_security:
        param["portSecurity"] = False
    if network.vnic_type != "normal":
        param["vnicType"] = network.vnic_type
    return param
