"""The guard rails on every preview and update (issue 26, item 4): no port open to the world but
the API, Ingress and ICMP; SSH only from the machine network and the configured allowed CIDR;
every OpenStack resource that can carry tags tagged with the cluster (infra) ID. Only
`openstack:` types are judged: libvirt stacks and the program's own components pass untouched."""

from __future__ import annotations

from collections.abc import Mapping
from ipaddress import ip_network
from pathlib import Path
from typing import Any

import yaml
from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)

RULE = "openstack:networking/secGroupRule:SecGroupRule"
# What clients must reach from anywhere: the Kubernetes API and the routes (FACTS section 2).
WORLD_TCP = (6443, 80, 443)
ICMP = ("icmp", "ipv6-icmp", "icmpv6")
# Neutron takes a protocol by name or by number.
PROTOCOLS = {"6": "tcp", "17": "udp", "1": "icmp", "58": "ipv6-icmp"}
# The program's default ocp:machineNetwork (cluster/config_schema.py; tests/localcloud/test_policy.py holds them equal).
MACHINE_NETWORK = "10.0.0.0/16"
TAG = "openshiftClusterID"
# Types whose `tags` list carries the tag, as components/openstack/common.py writes it (`openshiftClusterID=<infra ID>`).
TAGGED = frozenset(
    f"openstack:{token}"
    for token in (
        "networking/network:Network",
        "networking/subnet:Subnet",
        "networking/port:Port",
        "networking/router:Router",
        "networking/secGroup:SecGroup",
        "networking/floatingIp:FloatingIp",
        "networking/subnetPool:SubnetPool",
        "networking/trunk:Trunk",
        "networking/qosPolicy:QosPolicy",
        "compute/instance:Instance",
        "images/image:Image",
        "loadbalancer/loadBalancer:LoadBalancer",
        "loadbalancer/listener:Listener",
        "loadbalancer/pool:Pool",
        "loadbalancer/member:Member",
        "orchestration/stackV1:StackV1",
    )
)
# Types with no tags but metadata, where the program writes {openshiftClusterID: <infra ID>} (root volumes).
METADATA = frozenset(
    f"openstack:{token}"
    for token in ("blockstorage/volume:Volume", "sharedfilesystem/share:Share", "objectstorage/container:Container")
)


def _protocol(props: Mapping[str, Any]) -> str | None:
    value = str(props.get("protocol") or "").lower()
    return PROTOCOLS.get(value, value) or None


def _ports(props: Mapping[str, Any]) -> tuple[int, int] | None:
    """The rule's port range; None for every port (no range, or 0-0 as Neutron reads it)."""
    low, high = props.get("portRangeMin"), props.get("portRangeMax")
    if not low and not high:
        return None
    return int(low or high), int(high or low)


def _describe(protocol: str | None, ports: tuple[int, int] | None) -> str:
    if protocol is None:
        return "every protocol"
    if ports is None:
        return f"{protocol} (every port)" if protocol not in ICMP else protocol
    return f"{protocol} {ports[0]}" if ports[0] == ports[1] else f"{protocol} {ports[0]}-{ports[1]}"


def _source(props: Mapping[str, Any]) -> str:
    prefix, group = props.get("remoteIpPrefix"), props.get("remoteGroupId")
    return prefix or (f"security group {group}" if group else "anywhere (no remote prefix, no remote group)")


def _is_world(props: Mapping[str, Any]) -> bool:
    prefix = props.get("remoteIpPrefix")
    if not prefix:
        return not props.get("remoteGroupId")
    return ip_network(prefix, strict=False).prefixlen == 0


def _within(prefix: str, networks: list[str]) -> bool:
    source = ip_network(prefix, strict=False)
    for network in networks:
        allowed = ip_network(network, strict=False)
        if source.version == allowed.version and source.subnet_of(allowed):
            return True
    return False


def validate_world_open(args: ResourceValidationArgs, report: ReportViolation) -> None:
    props = args.props
    if args.resource_type != RULE or props.get("direction") != "ingress" or not _is_world(props):
        return
    protocol, ports = _protocol(props), _ports(props)
    if protocol in ICMP or (protocol == "tcp" and ports is not None and ports[0] == ports[1] and ports[0] in WORLD_TCP):
        return
    report(
        f"{args.name} opens {_describe(protocol, ports)} to the world (from {_source(props)}): only TCP 6443, 80, 443 "
        "and ICMP may be. Name the clients instead in the stack's ocp:openstack.apiAllowedCidrs, ingressAllowedCidrs, "
        "nodePortAllowedCidrs or sshAllowedCidr."
    )


def stack_name(urn: str) -> str:
    """`urn:pulumi:<stack>::<project>::<type>::<name>` -> stack."""
    return urn.split("::", 1)[0].split(":", 2)[2]


def ssh_sources(urn: str, config: Mapping[str, Any] | None, directory: Path | None = None) -> tuple[list[str], str]:
    """Where SSH may come from and where that was read: the machine network and the allowed CIDR.
    The policy config (--policy-pack-config) wins; else the stack file the program reads its config from."""
    config = dict(config or {})
    if "sshAllowedCidr" in config:
        return [config.get("machineNetwork", MACHINE_NETWORK), config["sshAllowedCidr"]], "the policy config"
    path = (directory or Path.cwd()) / f"Pulumi.{stack_name(urn)}.yaml"
    if not path.is_file():
        return [config.get("machineNetwork", MACHINE_NETWORK)], f"no {path.name} here, no policy config"
    stack = (yaml.safe_load(path.read_text()) or {}).get("config") or {}
    machine = config.get("machineNetwork", stack.get("ocp:machineNetwork", MACHINE_NETWORK))
    allowed = (stack.get("ocp:openstack") or {}).get("sshAllowedCidr")
    return [machine, *([allowed] if allowed else [])], f"{path.name} (ocp:machineNetwork, ocp:openstack.sshAllowedCidr)"


def validate_ssh(args: ResourceValidationArgs, report: ReportViolation) -> None:
    props = args.props
    if args.resource_type != RULE or props.get("direction") != "ingress":
        return
    protocol, ports = _protocol(props), _ports(props)
    if protocol not in (None, "tcp") or (ports is not None and not ports[0] <= 22 <= ports[1]):
        return
    prefix = props.get("remoteIpPrefix")
    if not prefix and props.get("remoteGroupId"):
        return  # members of a group the program made: inside the cluster
    allowed, read_from = ssh_sources(args.urn, args.get_config())
    if prefix and _within(prefix, allowed):
        return
    report(
        f"{args.name} admits SSH ({_describe(protocol, ports)}) from {_source(props)}: SSH may come only from "
        f"{', '.join(allowed)} (read from {read_from})."
    )


def _cluster_id(args: ResourceValidationArgs) -> str | None:
    if args.resource_type in TAGGED:
        found = [tag.split("=", 1)[1] for tag in args.props.get("tags") or [] if tag.startswith(f"{TAG}=")]
        return found[0] if found and found[0] else None
    return (args.props.get("metadata") or {}).get(TAG) or None


def validate_tagged(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in TAGGED | METADATA:
        return
    if _cluster_id(args) is None:
        where = f"tags ({TAG}=<infra ID>)" if args.resource_type in TAGGED else f"metadata ({TAG}: <infra ID>)"
        report(
            f"{args.name} ({args.resource_type.rsplit(':', 1)[1]}) carries no cluster ID in its {where}: the "
            "installer's destroy and the cluster's own cleanup find what belongs to the cluster by it."
        )


POLICIES = [
    ResourceValidationPolicy(
        name="no-world-open-ports",
        description="No security group rule open to the world (0.0.0.0/0, ::/0, or no source) but TCP 6443, 80, 443 and ICMP.",
        enforcement_level=EnforcementLevel.MANDATORY,
        validate=validate_world_open,
    ),
    ResourceValidationPolicy(
        name="ssh-from-allowed-cidr",
        description="SSH only from the machine network and ocp:openstack.sshAllowedCidr.",
        enforcement_level=EnforcementLevel.MANDATORY,
        validate=validate_ssh,
        config_schema=PolicyConfigSchema(
            properties={"sshAllowedCidr": {"type": "string"}, "machineNetwork": {"type": "string"}},
        ),
    ),
    ResourceValidationPolicy(
        name="tagged-with-cluster-id",
        description="Every OpenStack resource that can carry tags (or metadata) carries openshiftClusterID.",
        enforcement_level=EnforcementLevel.MANDATORY,
        validate=validate_tagged,
    ),
]
