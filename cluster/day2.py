"""What a stack edit does to a cluster that already runs. Pure Python.

Every setting a stack file can hold is classified in cluster/day2_effects.py (a test checks none is missing):

- `refuse`: cannot change on a running cluster (a new name, network or control plane size
  means a new cluster). A change stops the program before anything changes.
- `warn`: only applies at install time, or only to nodes created from now on. The running
  cluster keeps its value; the warning says how to change it in the cluster.
- `apply`: a day-2 operation this program carries out (scaling, bootstrap teardown, rules,
  floating IPs, tags, an explicit resize).
- `inert`: read only when the installer runs, which it does once; a change does nothing.

The comparison is against the install record: the stack's settings when `openshift-install`
ran, kept in Pulumi state with its output (cluster/installer.py), and what the configs
themselves say (their install-config): configs made for another cluster are refused too.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from cluster.addresses import AddressPlan, server_name
from cluster.config import ClusterConfig
from cluster.day2_effects import EFFECTS, Effect, Kind, effect_of
from cluster.installer import MAX_BOOTSTRAP_AGE_HOURS, InstallerAssets, check_assets, installed_settings
from cluster.installer_output import one_or_all
from cluster.manifests import digests, read_extra_manifests

# The catalogue's names, as the program, the tools and the tests import them from here.
__all__ = ["EFFECTS", "Effect", "Kind", "Review", "effect_of", "installed_plan", "review", "stack_settings"]


def stack_settings(config: ClusterConfig, plan: AddressPlan) -> dict[str, Any]:
    """The stack's settings as the user writes them, flattened to dotted keys, with the VIPs
    the plan resolved and the pull secret as a digest: what the install record keeps."""
    document = config.model_dump(mode="json", by_alias=True, exclude={"pull_secret"})
    document["apiVip"], document["ingressVip"] = one_or_all(plan.api_vips), one_or_all(plan.ingress_vips)  # dual-stack: lists
    secret = config.pull_secret.get_secret_value().encode()
    document["pullSecret"] = "sha256:" + hashlib.sha256(secret).hexdigest()
    if config.installer.extra_manifests is not None:  # what the installer got, not only where from
        manifests, _ = read_extra_manifests(config.installer.extra_manifests)
        document["installer"]["extraManifests"] = {"dir": config.installer.extra_manifests, "files": digests(manifests)}
    return _flatten(document)


def _flatten(document: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in document.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            result.update(_flatten(value, f"{path}."))
        else:
            result[path] = value
    return result


@dataclass(frozen=True)
class Review:
    problems: tuple[str, ...]
    warnings: tuple[str, ...]


def review(config: ClusterConfig, plan: AddressPlan, assets: InstallerAssets, now: float) -> Review:
    """This run's stack against the cluster the configs were made for."""
    record = assets.record
    problems: list[str] = []
    warnings: list[str] = []
    if record is not None and record.stack is not None:
        installed = _with_keys_older_records_lack(dict(record.stack))
        if record.generation != config.installer.generation:
            problems.append(
                f"ocp:installer.generation: {config.installer.generation}, but this cluster's configs are generation "
                f"{record.generation} and its masters were built from them: a new generation would give them a PKI and "
                f"infra ID they do not have. Set it back to {record.generation}; to start over, `pulumi destroy` first"
            )
    else:
        installed = installed_settings(assets)
    settings = stack_settings(config, plan)
    current = _grouped(settings)
    toggled = _set_or_unset(installed, settings) if record is not None and record.stack is not None else {}
    problems += toggled.values()
    for reported, was in _grouped(installed).items():
        now_set = current.get(reported, {})
        effect = effect_of(reported)
        if was == now_set or effect is None or effect.kind in ("apply", "inert") or reported in toggled:
            continue
        if effect.kind == "refuse":
            problems.append(
                f"ocp:{reported}: was {_shown(reported, was)} at install, now {_shown(reported, now_set)}: "
                f"cannot change on a running cluster ({effect.text}). Set it back"
            )
        else:
            warnings.append(f"ocp:{reported}: changed since install; {effect.text}")
    # Configs made for another cluster (the wrong assetsDir) say so themselves.
    refused = {problem.split(":")[1] for problem in problems}
    problems += [
        problem
        for problem in check_assets(config, one_or_all(plan.api_vips), one_or_all(plan.ingress_vips), assets)
        if problem.split(":")[1] not in refused
    ]
    problems += _config_source(config, installed)
    problems += _bootstrap_floating_ip(config, installed)
    kept_problems, kept_warnings = _extra_networks_kept(installed, config)
    problems += kept_problems
    warnings += kept_warnings
    problems += _zone_groups_kept(installed, config)
    refused_routers, warned_routers = _routers(config, plan, assets, installed)
    problems += refused_routers
    warnings += warned_routers
    if config.bootstrap.enabled and record is not None and record.age_hours(now) > MAX_BOOTSTRAP_AGE_HOURS:
        made = datetime.fromtimestamp(record.generated_at, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        problems.append(
            f"ocp:bootstrap.enabled: the installer configs were made {record.age_hours(now):.0f} h ago ({made}); "
            "several of their certificates are valid 24 h, so a bootstrap created from them now fails. If "
            "`openshift-install wait-for bootstrap-complete` already passed, set ocp:bootstrap.enabled: false; "
            "otherwise start over: `pulumi destroy`, then `pulumi up` makes new configs"
        )
    return Review(tuple(problems), tuple(warnings))


def _extra_networks_kept(installed: Mapping[str, Any], config: ClusterConfig) -> tuple[list[str], list[str]]:
    """(problems, warnings): a node's port N is on extra network N: the networks there at install keep
    their places, their pools and their description, so no port is taken from a running server. But
    the masters' ports on a network without port security: they leave when the stack says pools
    without masters in so many words (the exposure closed), and stay, with the reason, when only the
    default changed (issue 49: an unfiltered network goes to the workers unless said)."""
    was_ids = list(installed.get("openstack.additionalNetworkIds") or ())
    now_ids = list(config.openstack.additional_network_ids) if config.openstack else []
    problems = [
        f"ocp:openstack.additionalNetworkIds: {network} was there at install: every node's port on it would be deleted, "
        "which takes it from the running server. Put it back"
        for network in sorted(set(was_ids) - set(now_ids))
    ]
    if problems:
        return problems, []
    warnings: list[str] = []
    entries = list(config.openstack.extra_networks if config.openstack else ())
    now = [each.model_dump(mode="json", by_alias=True) for each in entries]
    was = [{"network": network, "pools": ["masters", "workers"]} for network in was_ids]
    was += list(installed.get("openstack.additionalNetworks") or ())
    for number, before in enumerate(was):
        after = now[number] if number < len(now) else None
        key = f"ocp:openstack.additionalNetworks[{number - len(now_ids)}]" if number >= len(now_ids) else f"ocp:openstack.additionalNetworkIds[{number}]"
        if after is None or after["network"] != before["network"]:
            where = "is gone" if not any(each["network"] == before["network"] for each in now) else "has moved"
            problems.append(
                f"{key}: network {before['network']} was extra network {number + 1} at install and {where}: each node's "
                f"port {number + 1} is on it, and would be taken from its running server. Keep the networks of the install "
                "in their order and add new ones at the end (additionalNetworkIds before additionalNetworks)"
            )
            break
        dropped = sorted(set(before.get("pools") or ()) - set(after["pools"]))
        entry = entries[number]
        if dropped == ["masters"] and not entry.port_security and entry.pools is not None:
            warnings.append(
                f"{key}.pools: the masters' ports on {before['network']}, which has no port security, are deleted: Nova unplugs "
                "them from the running masters (nothing reboots), and nothing on that network reaches the control plane any more"
            )
        elif dropped == ["masters"] and not entry.port_security:
            problems.append(
                f"{key}.pools: unset, and a network without port security now goes to the workers only (anything on it reached "
                f"every port of the masters, the machine config server and etcd included): this cluster's masters have had a port "
                f"on {before['network']} since install, which this run would delete. Say which you want: pools: [workers] takes the "
                "masters' ports away (Nova unplugs them, nothing reboots), or pools: [masters, workers] with "
                "unfilteredMasterPorts: true keeps them as they are"
            )
        elif dropped:
            problems.append(
                f"{key}.pools: {', '.join(dropped)} had a port on {before['network']} at install: it would be taken from "
                "their running servers. Put the pool back"
            )
        # A record from before profile existed lacks it: no port had one then.
        for field in ("portSecurity", "vnicType", "securityGroups", "profile"):
            if (field in before or field == "profile") and before.get(field) != after.get(field):
                problems.append(
                    f"{key}.{field}: was {json.dumps(before[field]) if before.get(field) is not None else 'unset'} at install: "
                    "the running servers' ports were made so. "
                    "Set it back (a network described otherwise is a new entry at the end, on another network)"
                )
    return problems, warnings


def _zone_groups_kept(installed: Mapping[str, Any], config: ClusterConfig) -> list[str]:
    """With a server group per zone, node N's group is its zone's: another zone list would move running
    nodes to other groups (Nova cannot) and delete the groups of zones taken away under their members."""
    problems = []
    for role in ("masters", "workers"):
        section = getattr(config, role)
        was = list(installed.get(f"{role}.availabilityZones") or ())
        if installed.get(f"{role}.serverGroupPerZone") and section.server_group_per_zone and was != list(section.availability_zones):
            problems.append(
                f"ocp:{role}.availabilityZones: was {json.dumps(was)} at install, now {json.dumps(list(section.availability_zones))}: "
                f"with ocp:{role}.serverGroupPerZone each node's server group is its zone's, and a running server cannot "
                f"change group. Set it back to {json.dumps(was)}"
            )
    return problems


def _with_keys_older_records_lack(installed: dict[str, Any]) -> dict[str, Any]:
    """A record written before ocp:libvirt.domainType existed is of a kvm install: every domain
    then was kvm, so a change to qemu is refused there too. One written before
    ocp:bootstrap.configSource existed is of a bootstrap served by the helper. One written before
    ocp:ntpServers, ocp:installer.extraManifests or ocp:installer.cloudProviderConfig existed had none: setting them warns too. One
    written before ocp:loadBalancer existed is of keepalived and haproxy on the nodes: UserManaged is refused. One written
    before ocp:masters.etcdDisk existed kept etcd on the masters' root disk: setting it is refused."""
    if "libvirt.uri" in installed:
        installed.setdefault("libvirt.domainType", "kvm")
    if "openstack.cloud" in installed:
        installed.setdefault("bootstrap.configSource", "helper")
    installed.setdefault("ntpServers", [])
    # Before rootVolume.types and serverGroupPerZone: one type, one group across the zones.
    for role in ("masters", "workers"):
        installed.setdefault(f"{role}.serverGroupPerZone", False)
        if f"{role}.rootVolume.size" in installed:
            installed.setdefault(f"{role}.rootVolume.types", [])
    installed.setdefault("loadBalancer", "OpenShiftManagedDefault")
    if not any(key.split(".")[:2] == ["installer", "extraManifests"] for key in installed):
        installed["installer.extraManifests"] = None
    installed.setdefault("installer.cloudProviderConfig", None)
    # Before masters.etcdDisk: etcd on the root disk; setting it is refused as for a stack recorded without it.
    if not any(key.split(".")[:2] == ["masters", "etcdDisk"] for key in installed):
        installed["masters.etcdDisk"] = None
    return installed


def _bootstrap_floating_ip(config: ClusterConfig, installed: Mapping[str, Any]) -> list[str]:
    """ocp:bootstrap.helper.floatingIp unset is off on a network given without a router (issue 50): a stack
    installed when unset meant on there (its record says true, as every record did then) keeps a bootstrap
    with its floating IP, which this run would release. While the bootstrap is there, it says which it wants."""
    if config.platform != "openstack" or not config.bootstrap.enabled or config.bootstrap.helper.floating_ip is not None:
        return []
    if installed.get("bootstrap.helper.floatingIp") is not True or config.bootstrap_floating_ip:
        return []
    return [
        "ocp:bootstrap.helper.floatingIp: unset, which on a network given without a router (ocp:openstack.existingNetwork, "
        "router false) now means false: this stack was installed when it meant true, and its bootstrap has its floating IP "
        "(and its helper too), which this run would release. Write floatingIp: true to keep it as it is (Neutron maps it "
        "only through a router on the subnet with its gateway on externalNetwork), or false to release it"
    ]


def _config_source(config: ClusterConfig, installed: Mapping[str, Any]) -> list[str]:
    """While the bootstrap exists it keeps fetching from where it was made for: a change would
    delete its helper or image under it (and make the other). Which bootstrap exists is not known
    here, so a bootstrap made again keeps the install's source too."""
    was = installed.get("bootstrap.configSource")
    now = config.bootstrap.config_source
    if config.platform != "openstack" or not config.bootstrap.enabled or was is None or was == now:
        return []
    return [
        f"ocp:bootstrap.configSource: was {json.dumps(was)} at install, now {json.dumps(now)}: cannot change while "
        "ocp:bootstrap.enabled is true (the bootstrap fetches its config from where the install put it: a change "
        f"would delete that under it). Write configSource: {was}"
    ]


_SECRET_KEYS = ("pullSecret",)
_SCALE_ROUTERS = "oc patch ingresscontroller/default -n openshift-ingress-operator --type merge -p '{{\"spec\":{{\"replicas\":{count}}}}}'"


def _routers(
    config: ClusterConfig, plan: AddressPlan, assets: InstallerAssets, installed: Mapping[str, Any]
) -> tuple[list[str], list[str]]:
    """The routers the IngressController runs (set at install: one per router node there was,
    ignition.nodes.ingress_placement) against the router nodes this run leaves."""
    if "workers.count" not in installed:
        return [], []
    installed_workers = int(installed["workers.count"])
    router_count = min(int(installed.get("networking.routerNodes", plan.router_count)), len(plan.worker_slots))
    now_plan = dataclasses.replace(
        plan, routers_on_masters=installed_workers == 0, router_count=router_count, workers_at_install=installed_workers
    )
    routers, left = now_plan.routers, now_plan.router_nodes
    if now_plan.routers_on_masters or len(left) >= routers:
        return [], []
    if not left:
        return [
            f"ocp:workers.count: {config.workers.count}, but the routers run on worker slots (decided at install, "
            f"when workers.count was {installed_workers}): with no router node the console, OAuth and every route "
            f"are down. Keep at least 1 worker ({routers} to keep all {routers} routers running); a cluster without "
            "workers needs a new stack"
        ], []
    names = ", ".join(server_name(config, node, assets.infra_id) for node in left)
    pending = routers - len(left)
    return [], [
        f"ocp:workers.count: {config.workers.count} leaves {len(left)} router node(s) ({names}) for the {routers} "
        f"routers the IngressController runs (set at install, unless changed since): {pending} would stay Pending. "
        f"Before the workers go, lower them: `{_SCALE_ROUTERS.format(count=len(left))}`"
    ]


def _set_or_unset(installed: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, str]:
    """Problems, by key, of keys that may change but not come or go (a key missing from an
    older install record was unset)."""
    found = {}
    for key, effect in EFFECTS.items():
        was, now_value = installed.get(key) or None, current.get(key) or None
        if effect.refused_when_set_or_unset and bool(was) != bool(now_value):
            found[key] = (
                f"ocp:{key}: was {_shown(key, {key: was})} at install, now {_shown(key, {key: now_value})}: cannot be "
                f"set or removed on a running cluster ({effect.refused_when_set_or_unset}). Set it back; the list itself may change"
            )
    return found


def _grouped(settings: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Settings by the most specific classified key they lie under: changes under one object
    key (proxy.httpProxy, proxy.noProxy) are reported once, by it."""
    groups: dict[str, dict[str, Any]] = {}
    for key, value in settings.items():
        parts = key.split(".")
        reported = next((".".join(parts[:end]) for end in range(len(parts), 0, -1) if ".".join(parts[:end]) in EFFECTS), key)
        groups.setdefault(reported, {})[key] = value
    return groups


def _shown(reported: str, values: Mapping[str, Any]) -> str:
    if reported in _SECRET_KEYS:
        return "(secret)"
    shown = values[reported] if list(values) == [reported] else {k.removeprefix(f"{reported}."): v for k, v in values.items()}
    text = "unset" if shown in (None, {}) else json.dumps(shown, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def installed_plan(plan: AddressPlan, assets: InstallerAssets) -> AddressPlan:
    """The plan with what was decided at install: a cluster installed without workers keeps
    its routers (and the Ingress VIP) on the masters when workers are added, and the
    IngressController keeps the router count of the router nodes there were."""
    record = assets.record
    if record is None or record.stack is None or "workers.count" not in record.stack:
        return plan
    workers = int(record.stack["workers.count"])
    return dataclasses.replace(plan, routers_on_masters=workers == 0, workers_at_install=workers)
