"""Settings of the on-node networking (keepalived, haproxy, CoreDNS): the `ocp:networking` key.

Every key is optional; docs/networking.md explains each one and what depends on it.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field, model_validator

from cluster.config_base import Model

API_PORT = 6443
DNS_HEALTH_PORT = 18080
ROUTER_HEALTH_PORT = 1936
# The machine config server's plain-HTTP listener: first-boot configs and its /healthz.
MCS_HTTP_PORT = 22624

# Images of the on-node networking, by their names in the release payload's image-references
# (`oc adm release info --image-for=<name>`), and what each provides.
IMAGE_NAMES = {
    "keepalived-ipfailover": "keepalived (and curl for its checks)",
    "haproxy-router": "/usr/sbin/haproxy",
    "coredns": "/usr/bin/coredns",
}

# Ports that something else on an OpenShift node already listens on.
TAKEN_PORTS = {
    ROUTER_HEALTH_PORT: "the router's health endpoint",
    2379: "etcd",
    2380: "etcd peers",
    API_PORT: "the Kubernetes API",
    9443: "OpenShift webhooks",
    10250: "the kubelet",
    10257: "the kube-controller-manager",
    10259: "the kube-scheduler",
    DNS_HEALTH_PORT: "CoreDNS's health endpoint",
    22623: "the machine config server",
    MCS_HTTP_PORT: "the machine config server (HTTP)",
}

_IMAGE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[0-9]+)?(/[-a-z0-9._]+)+(:[\w.-]{1,128}|@sha256:[0-9a-f]{64})$")


def _vrid(value: int | None) -> int | None:
    if value is not None and not 1 <= value <= 255:
        raise ValueError(
            f"{value} is not a VRRP router ID: write a number from 1 to 255, or leave the key out "
            "to derive one from the cluster's infra ID"
        )
    return value


def _advert_int(value: int) -> int:
    if not 1 <= value <= 255:
        raise ValueError(f"{value} is not a VRRP advertisement interval: write whole seconds from 1 to 255, e.g. 1")
    return value


def _port(value: int) -> int:
    if not 1024 <= value <= 65535:
        raise ValueError(f"{value} is not an unprivileged port: write a number from 1024 to 65535, e.g. 9445")
    if value in TAKEN_PORTS:
        raise ValueError(f"{value} is taken by {TAKEN_PORTS[value]} on every node: pick another, e.g. 9445")
    return value


def _images(value: dict[str, str]) -> dict[str, str]:
    problems = []
    for name, image in value.items():
        if name not in IMAGE_NAMES:
            problems.append(f"{name!r} is not an image of the on-node networking: the keys are {', '.join(IMAGE_NAMES)}")
        elif not _IMAGE.match(image):
            problems.append(
                f"{name}: {image!r} is not a pullable image reference: write registry/repository@sha256:<digest> "
                "(or :tag), e.g. mirror.example.com/ocp/release@sha256:<64 hex digits>"
            )
    if problems:
        raise ValueError("; ".join(problems))
    return dict(sorted(value.items()))


Vrid = Annotated[int | None, AfterValidator(_vrid)]
Port = Annotated[int, AfterValidator(_port)]


class NetworkingSettings(Model):
    # No interface setting: keepalived-run finds the interface holding the node's address at
    # run time and follows it when it moves (NIC -> br-ex).
    # VRRP advertisement interval in seconds; a silent holder is replaced after about 3.6 x this.
    advert_int: Annotated[int, AfterValidator(_advert_int)] = 1
    # Left out, each is derived from the infra ID (see ignition/networking.py `vrids`).
    api_vrid: Vrid = None
    ingress_vrid: Vrid = None
    # By payload name (IMAGE_NAMES): overrides the image the installer's release payload
    # gives (mirrors, disconnected installs, fixes). Keys are data: not camelCased.
    images: Annotated[dict[str, str], AfterValidator(_images)] = Field(default_factory=dict)
    haproxy_port: Port = 9445
    # haproxy's frontend for the machine config server (VIP:22624 is redirected there).
    haproxy_mcs_port: Port = 22625
    haproxy_health_port: Port = 50936
    haproxy_stats_port: Port = 29445
    # How many worker slots (the first ones) run the routers and may hold the Ingress VIP. A
    # fixed set keeps VRRP peers few and real: unicast adverts to absent peers queue for ARP
    # and, by the hundred, crowd out the ones to real peers (docs/lab.md, finding 3).
    router_nodes: Annotated[int, Field(ge=2, le=10)] = 3

    @model_validator(mode="after")
    def _distinct(self) -> NetworkingSettings:
        if self.api_vrid is not None and self.api_vrid == self.ingress_vrid:
            raise ValueError(
                f"apiVrid and ingressVrid are both {self.api_vrid}: the two VIPs need "
                "different router IDs; change one or leave one out to have it derived"
            )
        ports = {
            "haproxyPort": self.haproxy_port,
            "haproxyMcsPort": self.haproxy_mcs_port,
            "haproxyHealthPort": self.haproxy_health_port,
            "haproxyStatsPort": self.haproxy_stats_port,
        }
        if len(set(ports.values())) < len(ports):
            listed = ", ".join(f"{key} {port}" for key, port in ports.items())
            raise ValueError(f"haproxy's ports must differ ({listed}): give each its own port")
        return self
