"""The Neutron part of the mock cloud (tools/mock_cloud.py): networks and subnets by name or ID, as
the provider's lookups and cluster/cloud_probe.py read them, from a description's `neutronNetworks`
and `subnets`; without them, whatever a stack names is there and fits."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from cluster.config_fields import is_openstack_id

Answer = dict[str, Any] | tuple[dict[str, Any], list[tuple[str, str]]]


def not_found(what: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    return {}, [("name", f"Your query returned no results ({what})")]


def several_found(kind: str, name: Any) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    return {}, [("name", f"Your query returned more than one result ({kind} {name})")]


def fake_id(kind: str, name: str) -> str:
    return f"{kind}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


class NeutronAnswers:
    """Mixed into MockCloud: `d` is the description."""

    d: dict[str, Any]

    def __init__(self) -> None:
        # Undescribed networks and subnets the probe was asked of: there, and fit, for the lookups after it.
        self._asked_networks: dict[str, dict[str, Any]] = {}
        self._asked_subnets: dict[str, dict[str, Any]] = {}

    def _network(self, args: Mapping[str, Any]) -> Answer:
        name, network_id = args.get("name"), args.get("networkId")
        if network_id is not None:  # the described networks' IDs are network-<name>
            name = next((known for known in self.d["networks"] if f"network-{known}" == network_id), name)
        if name in self.d["networks"] and network_id in (None, f"network-{name}"):
            return {"id": f"network-{name}", "name": name, "external": self.d["networks"][name]}
        found = [each for each in self._neutron("neutronNetworks", self._asked_networks) if each["id"] == network_id or (network_id is None and each["name"] == name)]
        if len(found) != 1:
            return not_found(f"network {network_id or name}") if not found else several_found("network", name)
        each = found[0]
        return {"id": each["id"], "name": each["name"], "external": False, "mtu": each.get("mtu"), "subnets": sorted(each.get("subnets") or ())}

    def _subnet(self, args: Mapping[str, Any]) -> Answer:
        name, subnet_id, network_id = args.get("name"), args.get("subnetId"), args.get("networkId")
        found = [
            each
            for each in self._neutron("subnets", self._asked_subnets)
            if (each["id"] == subnet_id or (subnet_id is None and each["name"] == name)) and (network_id is None or each["network"] in ("", network_id))
        ]
        if len(found) != 1:
            return not_found(f"subnet {subnet_id or name}") if not found else several_found("subnet", name)
        each = found[0]
        return {"id": each["id"], "name": each["name"], "networkId": each["network"] or network_id or "", "cidr": each["cidr"] or ""}

    def _neutron(self, key: str, asked: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
        """The described networks or subnets; undescribed, those the probe was asked of (each taken as there)."""
        described = self.d.get(key)
        return list(described) if described is not None else list(asked.values())

    def _networks_named(self, ref: str) -> list[dict[str, Any]]:
        """What cluster/cloud_probe.py reads of a network name or ID; undescribed: one that fits any use."""
        described = self.d.get("neutronNetworks")
        if described is None:
            known = f"network-{ref}" if ref in self.d["networks"] else fake_id("network", ref)
            fits = {"id": ref if is_openstack_id(ref) else known, "name": ref, "portSecurity": True, "subnets": [fake_id("subnet", ref)], "mtu": None, "project": ""}
            self._asked_networks[ref] = fits
            return [fits]
        by_id = [each for each in described if each["id"] == ref] if is_openstack_id(ref) else []
        return [
            {
                "id": each["id"],
                "name": each["name"],
                "portSecurity": each.get("portSecurity", True),
                "subnets": sorted(each.get("subnets") or ()),
                "mtu": each.get("mtu"),
                "project": each.get("project") or f"project-{self.d['project']}",
                "cidrs": sorted(subnet["cidr"] for subnet in self.d.get("subnets") or () if subnet["id"] in (each.get("subnets") or ())),
            }
            for each in sorted(by_id or [each for each in described if each["name"] == ref], key=lambda each: each["id"])
        ]

    def _subnets_named(self, ref: str) -> list[dict[str, Any]]:
        described = self.d.get("subnets")
        if described is None:  # its network and CIDR unknown: held against nothing
            fits = {"id": ref if is_openstack_id(ref) else fake_id("subnet", ref), "name": ref, "network": "", "cidr": None}
            self._asked_subnets[ref] = fits
            return [fits]
        by_id = [each for each in described if each["id"] == ref] if is_openstack_id(ref) else []
        return [
            {
                **{key: each[key] for key in ("id", "name", "network", "cidr")},
                "pools": each.get("pools") or [],
                **({"ipv6AddressMode": each.get("ipv6AddressMode")} if ":" in str(each["cidr"] or "") else {}),
                **({"routers": each["routers"]} if each.get("routers") is not None else {}),
            }
            for each in sorted(by_id or [each for each in described if each["name"] == ref], key=lambda each: each["id"])
        ]
