"""Example worker MachineSets for an integrated cluster, one per zone. Pure Python.

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


def worker_machinesets(config: ClusterConfig, infra_id: str) -> list[dict[str, Any]]:
    """One MachineSet per failure domain, as the installer makes them: per compute zone (its zone,
    root volume type and volume zone at the same place), or one without zones."""
    zones = config.workers.availability_zones
    if len(zones) < 2:
        return [worker_machineset(config, infra_id)]
    return [worker_machineset(config, infra_id, domain) for domain in range(len(zones))]


def worker_machineset(config: ClusterConfig, infra_id: str, domain: int | None = None) -> dict[str, Any]:
    """The MachineSet of failure domain `domain` (None: the only one, named as before zones had theirs)."""
    assert config.openstack is not None
    workers = config.workers
    name = f"{infra_id}-worker-extra" + ("" if domain is None else f"-{domain}")
    index = domain or 0  # the domain's first slot: its zone, volume type and group are those of worker `index`
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
        # The zone's group the stack's workers share (MAPO makes one of that name if none exists); with
        # serverGroupSize the stack's groups fill to that size, so its machines get one of their own.
        "serverGroupName": name if workers.server_group_size else f"{infra_id}-worker{workers.server_group(index)}",
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
        volume_type = workers.volume_type_of(index)
        if volume_type:
            provider["rootVolume"]["volumeType"] = volume_type
        volume_zones = workers.root_volume.availability_zones
        if volume_zones:
            provider["rootVolume"]["availabilityZone"] = volume_zones[index % len(volume_zones)]
    if workers.availability_zones:
        provider["availabilityZone"] = workers.availability_zones[index % len(workers.availability_zones)]
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
