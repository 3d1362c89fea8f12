"""The user's own security groups on the nodes (ocp:openstack.additionalSecurityGroupIds, the
pools' additionalSecurityGroupIds, an additional network's securityGroups), measured as the
program's own are (cluster/exposure.py): a group whose rules, added up per protocol and port,
open more than a /8 of public space to a port other than TCP 6443, 80, 443 or ICMP stops the
preflight, as would an ID the cloud does not know. Pure Python: cluster/cloud_probe.py reads the
groups' rules with openstacksdk, components/openstack/preflight.py hands them here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cluster.config import ClusterConfig
from cluster.exposure import ICMP, Opening, network, protocol_name, world_open


@dataclass(frozen=True)
class SecurityGroup:
    """A group as the probe read it: its name and ingress rules as openings."""

    id: str
    name: str
    openings: tuple[Opening, ...]


def group_keys(config: ClusterConfig) -> tuple[tuple[str, str], ...]:
    """(key as the user writes it, group ID) of every group of the user's the nodes' ports carry."""
    openstack = config.openstack
    if openstack is None:
        return ()
    keyed = [(f"ocp:openstack.additionalSecurityGroupIds[{i}]", ref) for i, ref in enumerate(openstack.additional_security_group_ids)]
    for role in ("masters", "workers"):
        keyed += [(f"ocp:{role}.additionalSecurityGroupIds[{i}]", ref) for i, ref in enumerate(getattr(config, role).additional_security_group_ids)]
    for i, extra in enumerate(openstack.additional_networks):
        if isinstance(extra.security_groups, tuple):
            keyed += [(f"ocp:openstack.additionalNetworks[{i}].securityGroups[{j}]", ref) for j, ref in enumerate(extra.security_groups)]
    return tuple(keyed)


def opening(rule: Mapping[str, Any]) -> Opening | None:
    """An ingress rule as Neutron lists it (port_range_min...); None for egress, or a source that is
    a group's members or an address group (no addresses to count here)."""
    if rule.get("direction") != "ingress" or rule.get("remote_group_id") or rule.get("remote_address_group_id"):
        return None
    prefix = rule.get("remote_ip_prefix") or ("::/0" if str(rule.get("ethertype")).lower() == "ipv6" else "0.0.0.0/0")
    low, high = rule.get("port_range_min"), rule.get("port_range_max")
    low, high = (0, 65535) if not low and not high else (int(low or high), int(high or low))
    return Opening(str(rule.get("id") or "?"), protocol_name(rule.get("protocol")), low, high, network(prefix))


def parse_groups(stdout: str | None) -> dict[str, SecurityGroup | None] | None:
    """The probe line's "groups" ({ID: {id, name, rules} or null: not found}); None where it has none
    (it failed, or it was not asked: the offline plan's described cloud answers no groups)."""
    try:
        answer = json.loads(stdout or "")
    except ValueError:
        return None
    found = answer.get("groups") if isinstance(answer, dict) else None
    if not isinstance(found, dict):
        return None
    return {
        str(ref): None if group is None else SecurityGroup(
            str(group["id"]), str(group.get("name") or ""), tuple(o for o in map(opening, group.get("rules") or ()) if o is not None)
        )
        for ref, group in found.items()
    }


def _spans(group: SecurityGroup) -> str:
    spots = world_open(group.openings)
    parts = []
    for spot in spots:
        ports = "" if spot.protocol in ICMP or spot.protocol is None and (spot.low, spot.high) == (0, 65535) else (
            f" {spot.low}" if spot.low == spot.high else f" {spot.low}-{spot.high}"
        )
        # Sorted: Neutron lists rules in its own order.
        parts.append(f"{spot.protocol or 'every protocol'}{ports} from {', '.join(map(str, sorted(spot.sources)))} ({'; '.join(spot.why)})")
    return "; ".join(dict.fromkeys(parts))


def group_problems(config: ClusterConfig, groups: Mapping[str, SecurityGroup | None] | None, failure: str, where: str) -> Iterable[str]:
    """One message per key whose group is missing or open to the world; `groups` None: not read
    (`failure` says why, "" when the probe answers no groups at all)."""
    for key, ref in group_keys(config):
        if groups is None:
            if failure:
                yield (
                    f"{key}: the rules of security group {ref} could not be read {where} ({failure}): the preflight measures "
                    "what each group of yours opens; run `OS_CLOUD=<cloud> venv/bin/python -m cluster.cloud_probe` to see why"
                )
            continue
        if ref not in groups:
            continue
        group = groups[ref]
        if group is None:
            yield f"{key}: security group {ref} does not exist {where} (or this project cannot see it): name one from `openstack security group list`"
            continue
        spans = _spans(group)
        if spans:
            yield (
                f"{key}: security group {ref} ({group.name}) opens to the world {spans}: only TCP 6443, 80, 443 and ICMP "
                f"may be open that wide on the nodes. Narrow its rules to your clients' networks (`openstack security group "
                f"rule list {ref}`), or name another group"
            )
