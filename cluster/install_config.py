"""The install-config.yaml the program gives `openshift-install`. Pure Python."""

from __future__ import annotations

import json
from typing import Any

import yaml

from cluster.addresses import AddressPlan
from cluster.config import ClusterConfig
from cluster.config_fields import is_openstack_id


def install_config(config: ClusterConfig, plan: AddressPlan, pull_secret: str, clouds_yaml_ca: str | None = None) -> dict[str, Any]:
    """Integrated (OpenStack's default): `platform: openstack`, UPI style: the cluster gets the
    cloud provider, Cinder and the Machine API, and the MCO runs the VIPs; this program makes
    the machines. Standalone and libvirt: `platform: none`: the installer talks to no cloud and
    renders no VIP/LB/DNS pods; this program brings keepalived, haproxy and CoreDNS itself.

    `clouds_yaml_ca`: the PEM that the clouds.yaml entry's `cacert` names (integrated mode)."""
    document: dict[str, Any] = {
        "apiVersion": "v1",
        "baseDomain": config.base_domain,
        "metadata": {"name": config.cluster_name},
        "networking": {
            "networkType": "OVNKubernetes",
            # One entry per family, the primary first, in every list (dual-stack: two).
            "machineNetwork": [{"cidr": str(network)} for network in config.machine_networks],
            "clusterNetwork": [{"cidr": str(entry.cidr), "hostPrefix": entry.host_prefix} for entry in config.cluster_networks],
            "serviceNetwork": [str(network) for network in config.service_networks],
        },
        "controlPlane": {
            "name": "master",
            "hyperthreading": "Enabled",
            "replicas": config.masters.count,
            **_machine_pool(config, "masters"),
        },
        # Always 0: the machines are ours. Masters' schedulability is set by ignition.nodes.
        "compute": [{"name": "worker", "hyperthreading": "Enabled", "replicas": 0, **_machine_pool(config, "workers")}],
        "platform": _platform(config, plan),
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
    bundles = [b for b in (config.additional_trust_bundle, config.openstack.ca_bundle if config.openstack else None) if b]
    if bundles and clouds_yaml_ca and config.integrated:
        # The installer gives the cloud provider additionalTrustBundle *instead of* the
        # clouds.yaml cacert when both exist: keep the cloud's CA in it.
        bundles.append(clouds_yaml_ca)
    if bundles:
        # A bundle given twice (caBundle is often the very cacert file) is written once; each ends
        # in exactly one newline, as the installer refuses anything after the last block.
        document["additionalTrustBundle"] = "".join(dict.fromkeys(b.strip() + "\n" for b in bundles))
        # Without a proxy the bundle would reach only the installer's own use, not the
        # cluster-wide trusted CA; Always puts it there.
        document["additionalTrustBundlePolicy"] = "Always"
    if config.fips:
        document["fips"] = True
    if config.capabilities is not None:
        capabilities = config.capabilities.model_dump(by_alias=True, exclude_defaults=True, mode="json")
        document["capabilities"] = capabilities
    if config.image_digest_sources:
        document["imageDigestSources"] = [
            {"source": item.source, "mirrors": list(item.mirrors)} for item in config.image_digest_sources
        ]
    return document


def digest_mirror_set(config: ClusterConfig) -> str | None:
    """ocp:imageDigestSources as the ImageDigestMirrorSet the installer makes of them (its
    manifests/image-digest-mirror-set.yaml, name image-digest-mirror), in JSON: what `oc adm release info
    --idms-file` reads (oc 4.14 and later: one config.openshift.io/v1 object, pkg/cli/image/strategy/onerror.go
    readIDMSsFromFile). None: no mirrors."""
    if not config.image_digest_sources:
        return None
    document = {
        "apiVersion": "config.openshift.io/v1",
        "kind": "ImageDigestMirrorSet",
        "metadata": {"name": "image-digest-mirror"},
        "spec": {"imageDigestMirrors": [{"source": item.source, "mirrors": list(item.mirrors)} for item in config.image_digest_sources]},
    }
    return json.dumps(document, separators=(",", ":"))


def mirrors_environment(config: ClusterConfig) -> dict[str, str]:
    """What the scripts that run `oc adm release info` write to a file for its --idms-file (none without mirrors)."""
    mirror_set = digest_mirror_set(config)
    return {"IMAGE_DIGEST_MIRRORS": mirror_set} if mirror_set is not None else {}


def cloud_ca_bundle(config: ClusterConfig, clouds_yaml_ca: str | None) -> str | None:
    """The CA(s) the cloud's endpoints are signed by: the clouds.yaml `cacert` and (integrated mode)
    ocp:openstack.caBundle, each once, each ending in one newline. Integrated mode puts them in the
    bootstrap's cloud-ca-cert.pem, as IPI does; the Glance shim trusts them to fetch the config."""
    if config.openstack is None:
        return None
    bundles = [b for b in (clouds_yaml_ca, config.openstack.ca_bundle) if b]
    return "".join(dict.fromkeys(b.strip() + "\n" for b in bundles)) or None


def _platform(config: ClusterConfig, plan: AddressPlan) -> dict[str, Any]:
    if not config.integrated:
        return {"none": {}}
    assert config.openstack is not None
    # The plural VIP lists: the singular apiVIP/ingressVIP and machinesSubnet are deprecated.
    openstack: dict[str, Any] = {
        "cloud": config.openstack.cloud,
        "apiVIPs": [str(vip) for vip in plan.api_vips],
        "ingressVIPs": [str(vip) for vip in plan.ingress_vips],
    }
    if config.openstack.external_network is not None:
        openstack["externalNetwork"] = config.openstack.external_network  # LoadBalancer Services' floating IPs
    existing = config.openstack.existing_network
    if existing is not None:
        # The network the user is given, by ID or name, as the installer takes it: the VIPs and the
        # nodes are on its subnet (and it names the subnet in the machines' specs).
        openstack["controlPlanePort"] = {
            "network": _by_id_or_name(existing.network_id),
            "fixedIPs": [{"subnet": _by_id_or_name(subnet)} for subnet in existing.subnet_ids],
        }
    if config.user_managed_lb:
        # The user's balancer fronts the VIPs: the MCO puts keepalived's and haproxy's static pods aside;
        # nodeip-configuration still runs, with --user-managed-lb (platform none has no such key).
        openstack["loadBalancer"] = {"type": "UserManaged"}
    # An existing Glance image by name: the installer checks it and names it in the Machine
    # manifests (a URL would make it upload one); the image the masters boot.
    openstack["clusterOSImage"] = config.masters.openstack_image
    return {"openstack": openstack}


def _machine_pool(config: ClusterConfig, role: str) -> dict[str, Any]:
    """Integrated mode: the pool as the installer validates it against the cloud (it needs a
    flavor even for 0 replicas) and as Machine API manifests would carry it. The machines are
    this program's; these values describe them."""
    if not config.integrated:
        return {}
    assert config.openstack is not None
    section = getattr(config, role)
    pool: dict[str, Any] = {
        "type": config.worker_pool_flavor if role == "workers" else section.flavor,
        "serverGroupPolicy": section.server_group_policy,
    }
    if section.availability_zones:
        pool["zones"] = list(section.availability_zones)
    if section.root_volume is not None:
        # `types`, a list: 4.19 reads the single `type` only as a deprecated spelling of it.
        types = list(section.root_volume.types) or [section.root_volume.type]  # types[i]: zone i's, as upstream
        volume: dict[str, Any] = {"size": section.root_volume.size, "types": types}
        if section.root_volume.availability_zones:
            volume["zones"] = list(section.root_volume.availability_zones)
        pool["rootVolume"] = volume
    # Per pool, as upstream sets them. The installer takes IDs only: a network given by name is
    # described in the example MachineSet (by name) and not here.
    networks = [each.network for _, each in config.openstack.networks_of(role) if is_openstack_id(each.network)]
    if networks:
        pool["additionalNetworkIDs"] = networks
    groups = list(dict.fromkeys((*config.openstack.additional_security_group_ids, *section.additional_security_group_ids)))
    if groups:
        pool["additionalSecurityGroupIDs"] = groups
    return {"platform": {"openstack": pool}}


def _by_id_or_name(reference: str) -> dict[str, str]:
    return {"id": reference} if is_openstack_id(reference) else {"name": reference}


def render_install_config(config: ClusterConfig, plan: AddressPlan, pull_secret: str, clouds_yaml_ca: str | None = None) -> str:
    document = install_config(config, plan, pull_secret, clouds_yaml_ca)
    return yaml.safe_dump(document, sort_keys=True, default_flow_style=False)
