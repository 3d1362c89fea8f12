"""The install-config, parsed into what the fake needs (platform none or openstack)."""

from __future__ import annotations

import ipaddress
import json
import uuid
from dataclasses import dataclass
from typing import Any

import yaml

from tools.sample_installer.x509 import _Rand

# Alphabets of the real installer (k8s utilrand for the infra ID, password.go for kubeadmin).
_INFRA_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


@dataclass(frozen=True)
class _OpenStack:
    """platform.openstack of the install-config."""

    cloud: str
    api_vips: tuple[str, ...]
    ingress_vips: tuple[str, ...]
    external_network: str
    cluster_os_image: str
    load_balancer: str  # OpenShiftManagedDefault, or UserManaged


@dataclass(frozen=True)
class _Cluster:
    name: str
    base_domain: str
    infra_id: str
    cluster_id: str
    machine_networks: list[str]
    cluster_networks: list[dict[str, Any]]
    service_networks: list[str]
    network_type: str
    ssh_key: str
    pull_secret: str
    proxy: dict[str, str]
    trust_bundle: str
    control_plane_replicas: int
    compute_replicas: int
    install_config: dict[str, Any]
    openstack: _OpenStack | None = None  # None: platform none

    @property
    def domain(self) -> str:
        return f"{self.name}.{self.base_domain}"

    @property
    def api(self) -> str:
        return f"api.{self.domain}"

    @property
    def api_int(self) -> str:
        return f"api-int.{self.domain}"

    @property
    def api_vips(self) -> tuple[str, ...]:
        return self.openstack.api_vips if self.openstack else ()

    @property
    def mcs_host(self) -> str:
        """Where pointer configs fetch from: the first API VIP on OpenStack, whose MCS
        certificate carries it, unless the user runs the load balancer; api-int otherwise."""
        if self.openstack and self.openstack.load_balancer != "UserManaged":
            vip = ipaddress.ip_address(self.openstack.api_vips[0])
            return f"[{vip}]" if vip.version == 6 else str(vip)
        return self.api_int

    @property
    def has_proxy(self) -> bool:
        return bool(self.proxy.get("httpProxy") or self.proxy.get("httpsProxy"))


def _infra_id(name: str, rand: _Rand) -> str:
    """Like the installer: sanitized name cut to 21 chars, '-', 5 random chars."""
    base = "".join(c if c.isascii() and (c.isalnum() or c == "-") else "-" for c in name)
    while "--" in base:
        base = base.replace("--", "-")
    return f"{base[:21].rstrip('-')}-{rand.text('infra-id', _INFRA_ALPHABET, 5)}"


def _cidrs(values: list[str], field: str) -> list[str]:
    try:
        return [str(ipaddress.ip_network(value)) for value in values]
    except (TypeError, ValueError) as err:
        raise ValueError(f"install-config: invalid {field}: {err}") from err


def _parse(install_config_yaml: str, rand: _Rand) -> _Cluster:
    try:
        config = yaml.safe_load(install_config_yaml)
    except yaml.YAMLError as err:
        raise ValueError(f"install-config is not valid YAML: {err}") from err
    if not isinstance(config, dict):
        raise ValueError("install-config must be a YAML mapping")
    name = (config.get("metadata") or {}).get("name")
    base_domain = config.get("baseDomain")
    if not name or not base_domain:
        raise ValueError("install-config needs metadata.name and baseDomain")
    pull_secret = config.get("pullSecret") or '{"auths":{}}'
    try:
        json.loads(pull_secret)
    except (TypeError, ValueError) as err:
        raise ValueError(f"install-config: pullSecret is not JSON: {err}") from err
    networking = config.get("networking") or {}
    # Defaults below are the installer's own for unset fields.
    machine = [n["cidr"] for n in networking.get("machineNetwork") or [{"cidr": "10.0.0.0/16"}]]
    clusters = networking.get("clusterNetwork") or [{"cidr": "10.128.0.0/14", "hostPrefix": 23}]
    _cidrs([n["cidr"] for n in clusters], "networking.clusterNetwork")
    compute = config.get("compute") or [{"name": "worker", "replicas": 3}]
    platform = config.get("platform") or {"none": {}}
    openstack = platform.get("openstack") if isinstance(platform, dict) else None
    if openstack is not None:
        _machine_pools(config.get("controlPlane") or {}, compute, openstack)
    return _Cluster(
        name=str(name),
        base_domain=str(base_domain),
        infra_id=_infra_id(str(name), rand),
        cluster_id=str(uuid.UUID(bytes=rand.draw("cluster-id", 16), version=4)),
        machine_networks=_cidrs(machine, "networking.machineNetwork"),
        cluster_networks=clusters,
        service_networks=_cidrs(networking.get("serviceNetwork") or ["172.30.0.0/16"], "serviceNetwork"),
        network_type=networking.get("networkType") or "OVNKubernetes",
        ssh_key=str(config.get("sshKey") or "").strip(),
        pull_secret=pull_secret,
        proxy={k: str(v) for k, v in (config.get("proxy") or {}).items()},
        trust_bundle=str(config.get("additionalTrustBundle") or ""),
        control_plane_replicas=int((config.get("controlPlane") or {}).get("replicas", 3)),
        compute_replicas=sum(int(pool.get("replicas", 3)) for pool in compute),
        install_config=config,
        openstack=None if openstack is None else _openstack(openstack),
    )


def _machine_pools(control_plane: dict[str, Any], compute: list[dict[str, Any]], platform: dict[str, Any]) -> None:
    """The installer validates every pool against the cloud, one of 0 replicas too: each needs
    a flavor (its own or defaultMachinePlatform's), a root volume a type, extra IDs UUID v4."""
    default = platform.get("defaultMachinePlatform") or {}
    pools = [("controlPlane", control_plane)] + [(f"compute[{i}]", pool) for i, pool in enumerate(compute)]
    for where, pool in pools:
        own = ((pool.get("platform") or {}).get("openstack")) or {}
        path = f"install-config: {where}.platform.openstack"
        if not (own.get("type") or default.get("type")):
            raise ValueError(f"{path}.type: Required value: Flavor name must be provided")
        volume = own.get("rootVolume") or default.get("rootVolume")
        if volume is not None and not (volume.get("type") or volume.get("types")):
            raise ValueError(f"{path}.rootVolume.type: Invalid value: \"\": Volume type must be specified to use root volumes")
        for key in ("additionalNetworkIDs", "additionalSecurityGroupIDs"):
            for index, value in enumerate(own.get(key) or ()):
                try:
                    valid = uuid.UUID(str(value)).version == 4
                except ValueError:
                    valid = False
                if not valid:
                    raise ValueError(f"{path}.{key}[{index}]: Invalid value: {value!r}: valid UUID v4 must be specified")


def _openstack(section: Any) -> _OpenStack:
    """platform.openstack, with the installer's defaults; the deprecated singular keys refused."""
    if not isinstance(section, dict):
        raise ValueError("install-config: platform.openstack must be a mapping")
    for singular, plural in (("apiVIP", "apiVIPs"), ("ingressVIP", "ingressVIPs"), ("machinesSubnet", "controlPlanePort")):
        if singular in section:
            raise ValueError(f"install-config: platform.openstack.{singular} is deprecated: use {plural}")
    vips: dict[str, tuple[str, ...]] = {}
    for key in ("apiVIPs", "ingressVIPs"):
        values = section.get(key)
        if not values or not isinstance(values, list):
            raise ValueError(f"install-config: platform.openstack.{key} is required (a list of addresses)")
        try:
            vips[key] = tuple(str(ipaddress.ip_address(v)) for v in values)
        except ValueError as err:
            raise ValueError(f"install-config: platform.openstack.{key}: {err}") from err
    load_balancer = str((section.get("loadBalancer") or {}).get("type") or "OpenShiftManagedDefault")
    # As the installer's validateAPIAndIngressVIPs: one address may serve both with a balancer of the user's.
    if set(vips["apiVIPs"]) & set(vips["ingressVIPs"]) and load_balancer != "UserManaged":
        raise ValueError("install-config: platform.openstack.apiVIPs and ingressVIPs must differ")
    return _OpenStack(
        # Without a name the installer takes $OS_CLOUD, then "openstack"; a fake reads no environment.
        cloud=str(section.get("cloud") or "openstack"),
        api_vips=vips["apiVIPs"],
        ingress_vips=vips["ingressVIPs"],
        external_network=str(section.get("externalNetwork") or ""),
        cluster_os_image=str(section.get("clusterOSImage") or ""),
        load_balancer=load_balancer,
    )
