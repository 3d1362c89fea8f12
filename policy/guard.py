"""The guard rails on every preview and update (issue 26, item 4; issue 31): no port open to the
world but the API, Ingress and ICMP, one rule at a time and all of a group's rules added up; SSH
only from the machine network and the configured allowed CIDR, or from the cluster's own node
groups; every OpenStack resource that can carry tags tagged with the cluster (infra) ID. A
protocol the pack does not know (or `any`, `0`, none) counts as every protocol. Only `openstack:`
types are judged: libvirt stacks and the program's own components pass untouched.

"The world" is measured as the program measures it (cluster/exposure.py, issue 42): sources that
admit more than a /8 of public IPv4 space (a /32 of IPv6 global unicast), such as 0.0.0.0/1."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from ipaddress import ip_network
from pathlib import Path
from typing import Any

import yaml
from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

# The pack runs from policy/venv, which does not hold the project: its one measurement of the
# world comes from the project directory above (standard library only).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from cluster.exposure import ICMP, Opening, protocol_name, too_wide, world_open, world_port  # noqa: E402

RULE = "openstack:networking/secGroupRule:SecGroupRule"
GROUP = "openstack:networking/secGroup:SecGroup"
# The cluster's own node groups (components/openstack/security.py): SSH between their members stays inside the cluster.
NODE_GROUPS_PARENT = "ocp:openstack:SecurityGroups"
NODE_GROUP_ROLES = ("-master", "-worker")
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
    """The rule's protocol by Neutron's name; None for every protocol (none given, `any`, `0`, or a name not known here)."""
    return protocol_name(props.get("protocol"))


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


def _world_by_measure(props: Mapping[str, Any]) -> list[str]:
    """Why the rule's one source is the world ([]: it is not, or it is a group's members)."""
    prefix = props.get("remoteIpPrefix")
    if not prefix:
        if props.get("remoteGroupId"):
            return []
        return too_wide([_world(6 if str(props.get("ethertype") or "IPv4").lower() == "ipv6" else 4)])
    return too_wide([ip_network(prefix, strict=False)])


def _within(prefix: str, networks: list[str]) -> bool:
    source = ip_network(prefix, strict=False)
    for network in networks:
        allowed = ip_network(network, strict=False)
        if source.version == allowed.version and source.subnet_of(allowed):
            return True
    return False


def validate_world_open(args: ResourceValidationArgs, report: ReportViolation) -> None:
    props = args.props
    if args.resource_type != RULE or props.get("direction") != "ingress":
        return
    wide = _world_by_measure(props)
    protocol, ports = _protocol(props), _ports(props)
    if not wide or world_port(protocol, *(ports or (0, 65535))):
        return
    report(
        f"{args.name} opens {_describe(protocol, ports)} to the world (from {_source(props)}: {', '.join(wide)}): only TCP 6443, 80, 443 "
        "and ICMP may be. Name the clients instead in the stack's ocp:openstack.apiAllowedCidrs, ingressAllowedCidrs, "
        "nodePortAllowedCidrs or sshAllowedCidr."
    )


def stack_name(urn: str) -> str:
    """`urn:pulumi:<stack>::<project>::<type>::<name>` -> stack."""
    return urn.split("::", 1)[0].split(":", 2)[2]


def _networks(value: Any) -> list[str]:
    """ocp:machineNetwork as a stack file or the policy config writes it: one CIDR, a list of one per
    family (dual-stack), or those comma-separated."""
    items = value if isinstance(value, list) else str(value).strip("[]").split(",")
    return [str(item).strip().strip("'\"") for item in items if str(item).strip()]


def ssh_sources(urn: str, config: Mapping[str, Any] | None, directory: Path | None = None) -> tuple[list[str], str]:
    """Where SSH may come from and where that was read: the machine network (each family's) and the
    allowed CIDR. The policy config (--policy-pack-config) wins; else the stack file the program reads its config from."""
    config = dict(config or {})
    if "sshAllowedCidr" in config:
        return [*_networks(config.get("machineNetwork", MACHINE_NETWORK)), config["sshAllowedCidr"]], "the policy config"
    path = (directory or Path.cwd()) / f"Pulumi.{stack_name(urn)}.yaml"
    if not path.is_file():
        return _networks(config.get("machineNetwork", MACHINE_NETWORK)), f"no {path.name} here, no policy config"
    stack = (yaml.safe_load(path.read_text()) or {}).get("config") or {}
    machine = _networks(config.get("machineNetwork", stack.get("ocp:machineNetwork", MACHINE_NETWORK)))
    allowed = (stack.get("ocp:openstack") or {}).get("sshAllowedCidr")
    return [*machine, *([allowed] if allowed else [])], f"{path.name} (ocp:machineNetwork, ocp:openstack.sshAllowedCidr)"


def validate_ssh(args: ResourceValidationArgs, report: ReportViolation) -> None:
    props = args.props
    if args.resource_type != RULE or props.get("direction") != "ingress":
        return
    protocol, ports = _protocol(props), _ports(props)
    if protocol not in (None, "tcp") or (ports is not None and not ports[0] <= 22 <= ports[1]):
        return
    prefix = props.get("remoteIpPrefix")
    if not prefix and props.get("remoteGroupId"):
        return  # a group's members: which group, ssh-from-node-groups judges (it sees the whole stack)
    allowed, read_from = ssh_sources(args.urn, args.get_config())
    if prefix and _within(prefix, allowed):
        return
    report(
        f"{args.name} admits SSH ({_describe(protocol, ports)}) from {_source(props)}: SSH may come only from "
        f"{', '.join(allowed)} (read from {read_from})."
    )


PORT = "openstack:networking/port:Port"
# A node's port on an extra network, as components/openstack/machines.py names it: <pool>-<role>-<index>-port-<N>
# (the bootstrap's: <...>-bootstrap-node-port-<N>; it joins no extra network).
EXTRA_PORT = re.compile(r"-(?:(master|worker)-\d+|(bootstrap)-node)-port-\d+$")


def _stack_file(urn: str, directory: Path | None = None) -> dict[str, Any]:
    path = (directory or Path.cwd()) / f"Pulumi.{stack_name(urn)}.yaml"
    return ((yaml.safe_load(path.read_text()) or {}).get("config") or {}) if path.is_file() else {}


def unfiltered_masters_said(urn: str, config: Mapping[str, Any] | None = None, directory: Path | None = None) -> bool:
    """Whether the policy config, else the stack file, says unfilteredMasterPorts: true of an extra network
    (the pack cannot map a port's network ID to the name an entry may use: any such entry lets the masters'
    unfiltered ports pass)."""
    if config and "unfilteredMasterPorts" in config:
        return config["unfilteredMasterPorts"] is True
    entries = (_stack_file(urn, directory).get("ocp:openstack") or {}).get("additionalNetworks") or []
    return any(isinstance(entry, dict) and entry.get("unfilteredMasterPorts") is True for entry in entries)


def _unfiltered(props: Mapping[str, Any]) -> str | None:
    """How a port is unfiltered: no port security (certainly), or no group (where its network has port
    security off, as provider VLANs do; with port security on, nothing passes); None when it carries groups."""
    if _known(props, "portSecurityEnabled") is False:
        return "has no port security"
    if _known(props, "noSecurityGroups") is True and not _known(props, "securityGroupIds"):
        return "carries no security group (on a network with port security off, nothing filters it)"
    return None


def report_unfiltered_ports(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Lists every node port no group filters: every port of its node, from anything on its network."""
    found = EXTRA_PORT.search(args.name) if args.resource_type == PORT else None
    how = _unfiltered(args.props) if found else None
    if found and how:
        network = _known(args.props, "networkId") or "its network"
        report(f"{args.name} {how}: every port of its node, from anything on {network}.")


def validate_unfiltered_control_plane(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """No master's or bootstrap's port without port security: it would open the machine config server
    (22623, 22624) and etcd to anything on its network. A master's passes where the stack file says
    unfilteredMasterPorts: true; the bootstrap's never."""
    found = EXTRA_PORT.search(args.name) if args.resource_type == PORT else None
    if not found or found[1] == "worker" or _known(args.props, "portSecurityEnabled") is not False:
        return
    if found[1] == "master" and unfiltered_masters_said(args.urn, args.get_config()):
        return
    what = "the bootstrap's" if found[2] else "a master's"
    network = _known(args.props, "networkId") or "its network"
    report(
        f"{args.name} is {what} port without port security: every port of it, the machine config server (22623, 22624) and "
        f"etcd included, from anything on {network}. Keep the network to the workers (pools: [workers])"
        + ("; or say unfilteredMasterPorts: true for it in the stack." if not found[2] else ".")
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


def _known(props: Mapping[str, Any], key: str) -> Any:
    """The property's value, None while the preview cannot know it."""
    try:
        return props.get(key)
    except UnknownValueError:
        return None


def _ingress_rules(resources: Iterable[PolicyResource]) -> list[PolicyResource]:
    return [r for r in resources if r.resource_type == RULE and _known(r.props, "direction") == "ingress"]


def _group_of(rule: PolicyResource) -> str:
    """The rule's security group: the resource it names (known at preview), else its ID."""
    for group in rule.property_dependencies.get("securityGroupId") or []:
        return group.urn
    return str(_known(rule.props, "securityGroupId") or "a group not known yet")


def _world(version: int) -> Any:
    return ip_network("0.0.0.0/0" if version == 4 else "::/0")


def validate_world_open_together(args: StackValidationArgs, report: ReportViolation) -> None:
    """A group's rules added up: for each protocol and port, the union of the sources of every rule
    that admits it (a rule of every protocol admits them all), measured; the world there is refused
    as one rule open to the world would be (0.0.0.0/2 and 64.0.0.0/2 are the world)."""
    groups: dict[str, list[Opening]] = {}
    urns: dict[str, str] = {}
    for rule in _ingress_rules(args.resources):
        props = rule.props
        prefix, remote = _known(props, "remoteIpPrefix"), _known(props, "remoteGroupId")
        if not prefix and (remote or rule.property_dependencies.get("remoteGroupId")):
            continue  # a group's members, not addresses
        version = 6 if str(_known(props, "ethertype") or "IPv4").lower() == "ipv6" else 4
        source = ip_network(prefix, strict=False) if prefix else _world(version)
        protocol, ports = _protocol(props), _ports(props)
        low, high = ports or (0, 65535)
        groups.setdefault(_group_of(rule), []).append(Opening(rule.name, protocol, low, high, source))
        urns[rule.name] = rule.urn
    reported: set[frozenset[str]] = set()
    for group, entries in groups.items():
        for spot in world_open(entries):
            if len(spot.sources) < 2 or any(too_wide([source]) for source in spot.sources):
                continue  # one rule alone: no-world-open-ports judges it
            names = frozenset(spot.names)
            if names in reported:
                continue
            reported.add(names)
            ports = (spot.low, spot.high) if spot.protocol not in ICMP and spot.protocol else None
            report(
                f"{', '.join(spot.names)} (security group {group.rsplit('::', 1)[-1]}) together open "
                f"{_describe(spot.protocol, ports)} to the world "
                f"(from {', '.join(str(s) for s in spot.sources)}: {', '.join(spot.why)}): only TCP 6443, 80, 443 and ICMP may be. Name the "
                "clients instead in ocp:openstack.apiAllowedCidrs, ingressAllowedCidrs, nodePortAllowedCidrs or sshAllowedCidr.",
                urns[min(names)],
            )


def _admits_ssh(props: Mapping[str, Any]) -> bool:
    protocol, ports = _protocol(props), _ports(props)
    return protocol in (None, "tcp") and (ports is None or ports[0] <= 22 <= ports[1])


def validate_ssh_from_groups(args: StackValidationArgs, report: ReportViolation) -> None:
    """SSH from a remote group only from the cluster's own node groups (master, worker): the
    program's own rules name CIDRs; another group's members (another project's, a shared one's)
    are outside the cluster."""
    own = {
        r.urn: r.name
        for r in args.resources
        if r.resource_type == GROUP and r.parent is not None and r.parent.resource_type == NODE_GROUPS_PARENT and r.name.endswith(NODE_GROUP_ROLES)
    }
    for rule in _ingress_rules(args.resources):
        props = rule.props
        remote, named = _known(props, "remoteGroupId"), rule.property_dependencies.get("remoteGroupId") or []
        if _known(props, "remoteIpPrefix") or not (remote or named) or not _admits_ssh(props):
            continue
        if named and all(group.urn in own for group in named):
            continue
        source = ", ".join(group.name for group in named) or str(remote)
        report(
            f"{rule.name} admits SSH ({_describe(_protocol(props), _ports(props))}) from the members of security group "
            f"{source}: SSH from a group may come only from the cluster's own node groups ({', '.join(sorted(own.values())) or 'none here'}); "
            "name the address in ocp:openstack.sshAllowedCidr instead.",
            rule.urn,
        )


POLICIES = [
    ResourceValidationPolicy(
        name="no-world-open-ports",
        description="No security group rule open to the world (more than a /8 of public IPv4 space, a /32 of IPv6, or no source) but TCP 6443, 80, 443 and ICMP.",
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
        name="no-unfiltered-control-plane",
        description="No master's or bootstrap's port without port security (a master's only where the stack says unfilteredMasterPorts).",
        enforcement_level=EnforcementLevel.MANDATORY,
        validate=validate_unfiltered_control_plane,
        config_schema=PolicyConfigSchema(properties={"unfilteredMasterPorts": {"type": "boolean"}}),
    ),
    ResourceValidationPolicy(
        name="unfiltered-ports",
        description="Lists every node port no security group filters: every port of its node, from anything on its network.",
        enforcement_level=EnforcementLevel.ADVISORY,
        validate=report_unfiltered_ports,
    ),
    ResourceValidationPolicy(
        name="tagged-with-cluster-id",
        description="Every OpenStack resource that can carry tags (or metadata) carries openshiftClusterID.",
        enforcement_level=EnforcementLevel.MANDATORY,
        validate=validate_tagged,
    ),
    StackValidationPolicy(
        name="no-world-open-ports-together",
        description="No security group whose rules, added up across sources, open a port to the world but TCP 6443, 80, 443 and ICMP.",
        enforcement_level=EnforcementLevel.MANDATORY,
        validate=validate_world_open_together,
    ),
    StackValidationPolicy(
        name="ssh-from-node-groups",
        description="SSH from a remote security group only from the cluster's own master and worker groups.",
        enforcement_level=EnforcementLevel.MANDATORY,
        validate=validate_ssh_from_groups,
    ),
]
