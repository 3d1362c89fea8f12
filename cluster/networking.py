"""Settings of the on-node networking (keepalived, haproxy, CoreDNS): the `ocp:networking` key.

Every key is optional; docs/networking.md explains each one and what depends on it.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from cluster.config_base import Model

API_PORT = 6443
DNS_HEALTH_PORT = 18080
ROUTER_HEALTH_PORT = 1936
# The machine config server's plain-HTTP listener: first-boot configs and its /healthz.
MCS_HTTP_PORT = 22624
# Linux's default net.ipv4.ip_local_port_range: a listener there can find its port taken by an
# outgoing connection.
EPHEMERAL_PORTS = range(32768, 61000)

# Images of the on-node networking, by their names in the release payload's image-references
# (`oc adm release info --image-for=<name>`), and what each provides.
IMAGE_NAMES = {
    "keepalived-ipfailover": "keepalived (and curl and ss for its checks)",
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


def _removed_mcs_port(value: object) -> object:
    raise ValueError(
        "is no longer a setting: new nodes fetch their config from the API VIP holder's own machine config "
        "server, not through haproxy (OVN-Kubernetes rejects every connection a node opens to ports 22623 and "
        "22624, so no node can proxy them): remove the key (docs/networking.md, \"Changing them on a running cluster\")"
    )


Vrid = Annotated[int | None, AfterValidator(_vrid)]


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
    haproxy_port: int = 9445
    # 9444 as the machine-config-operator's: below the ephemeral range.
    haproxy_health_port: int = 9444
    haproxy_stats_port: int = 29445
    # Gone (haproxy no longer fronts the MCS): kept only to say so to stacks that still set it.
    haproxy_mcs_port: Annotated[object, AfterValidator(_removed_mcs_port)] = Field(default=None, exclude=True)
    # How many worker slots (the first ones) run the routers and may hold the Ingress VIP. A
    # fixed set keeps VRRP peers few and real: unicast adverts to absent peers queue for ARP
    # and, by the hundred, crowd out the ones to real peers (docs/lab.md, finding 3).
    router_nodes: Annotated[int, Field(ge=2, le=10)] = 3

    @field_validator("haproxy_port", "haproxy_health_port", "haproxy_stats_port")
    @classmethod
    def _port(cls, value: int, info: ValidationInfo) -> int:
        assert info.field_name is not None
        default = cls.model_fields[info.field_name].default
        if not 1024 <= value <= 65535:
            raise ValueError(f"{value} is not an unprivileged port: write a number from 1024 to 65535, e.g. {default}")
        if value in TAKEN_PORTS:
            raise ValueError(f"{value} is taken by {TAKEN_PORTS[value]} on every node: pick another, e.g. {default}")
        if value in EPHEMERAL_PORTS:
            raise ValueError(
                f"{value} is in Linux's ephemeral port range ({EPHEMERAL_PORTS.start}-{EPHEMERAL_PORTS.stop - 1}), "
                f"where outgoing connections take their ports and can hold this one when haproxy starts: write a "
                f"port below {EPHEMERAL_PORTS.start} or above {EPHEMERAL_PORTS.stop - 1}, e.g. {default}"
            )
        return value

    @model_validator(mode="after")
    def _distinct(self) -> NetworkingSettings:
        if self.api_vrid is not None and self.api_vrid == self.ingress_vrid:
            raise ValueError(
                f"apiVrid and ingressVrid are both {self.api_vrid}: the two VIPs need "
                "different router IDs; change one or leave one out to have it derived"
            )
        ports = {
            "haproxyPort": self.haproxy_port,
            "haproxyHealthPort": self.haproxy_health_port,
            "haproxyStatsPort": self.haproxy_stats_port,
        }
        if len(set(ports.values())) < len(ports):
            listed = ", ".join(f"{key} {port}" for key, port in ports.items())
            raise ValueError(f"haproxy's ports must differ ({listed}): give each its own port")
        return self
