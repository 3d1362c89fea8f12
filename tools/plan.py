"""Offline plan: evaluate the real program for a stack under mocks and write what it would create.

    python -m tools.plan --stack dev                 # reads Pulumi.dev.yaml
    python -m tools.plan --config-file PATH          # any stack file
    python -m tools.plan --stack dev --assets DIR    # installer configs already generated
    python -m tools.plan --stack dev --out DIR       # default build/plan-<stack>
    python -m tools.plan --stack dev --from DIR      # the next `pulumi up` of a stack deployed as plan DIR
    python -m tools.plan ... --at +21h               # as if run later (or at an ISO 8601 time)
    python -m tools.plan ... --cloud FILE            # check against this cloud description (python -m tools.describe_cloud writes yours)

Writes resources.json (with each resource's options), outputs.json (secrets shown as
"[secret]"), topology.svg (networks, floating IPs and their DNS names, VIPs, nodes by role, security groups: drawn by
Graphviz, tools/topology.py), .ocp-plan (marks the directory as a plan: --out replaces
only an absent or empty directory or an earlier plan), state.json (what the engine would keep: secrets in the clear, like the bootstrap's
keys under nodes/, which is why plan directories are private to the user), and per node
user_data (exactly what the server receives), ignition.json (the config the node ends up
with, data URLs decoded) and files/<path> (every file Ignition writes, appends and drop-ins too). With --from, also
changes.json: what the next `pulumi up` does to every resource (tools/preview.py), printed as
a table, disruption first. Needs no cloud and no Pulumi CLI. The configs come from your own
`openshift-install` where you have one (ocp:installer.binary, else PATH), else the toolchain's
build, else the fake installer; the summary says which. On OpenStack, needs.yaml: what the stack
needs from its cloud (quotas with the cloud's free amount, roles, services, the RHCOS image, DNS,
MTU; tools/needs.py), printed too. The repository's own stacks are checked against
samples/cloud/dev.yaml (the lab they describe); any other stack file only against a description
--cloud names, else its cloud checks are skipped (its names answered as there, no quota), saying so.
A configuration or an edit the program refuses exits 2 with its messages and writes nothing; so do
a secret written in clear in the stack file and whatever the policy pack's rules refuse
(tools/guard_rails.py), as `pulumi preview` would.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from ipaddress import ip_address
from pathlib import Path, PurePosixPath
from typing import Any

import pulumi
import yaml

from cluster.addresses import plan_addresses, server_name
from cluster.config import ClusterConfig, ConfigError, load_config
from cluster.dataurl import written_contents
from cluster.installer import InstallerAssets, unbundle
from cluster.firewall import exposure_table
from cluster.machineset import machineset_notes, worker_machinesets
from cluster.stackfile import StackFileError, read_stack_file
from ignition import assembly
from ignition.networking import node_images
from ocp import checks, private_files
from ocp.version import VERSION
from tools import guard_rails, mock_cloud, needs, real_installer, toolchain, topology
from tools.mock_run import ProgramRun, deployed_from, mask, run_program, unwrap
from tools.preview import Change, Engine, table

ROOT = Path(__file__).resolve().parent.parent
# "off": the plan never takes the user's own openshift-install (the test suite sets it: its results
# must not depend on what a developer has on PATH; tests of that name their PATH and turn it on).
USER_INSTALLER_SWITCH = "OCP_PLAN_USER_INSTALLER"
# Stands in for the encrypted pull secret, which only the Pulumi CLI can decrypt.
SAMPLE_PULL_SECRET = '{"auths":{"fake.example.com":{"auth":"ZmFrZTpmYWtl","email":"fake@example.com"}}}'
SERVER_TYPES = {"openstack:compute/instance:Instance"}
# libvirt: a Domain boots from the Ignition beside it (both children of one ocp:libvirt:Machine).
DOMAIN_TYPES = {"libvirt:index/domain:Domain"}
FW_CFG_TYPES = {"libvirt:index/ignition:Ignition"}
# The commands fed the full bootstrap config: the helper's upload, the Glance image's file.
SERVED_CONFIG_TYPES = {"command:remote:Command", "command:local:Command"}


@dataclass(frozen=True)
class NodeOutput:
    hostname: str
    ip: str | None
    user_data: str
    ignition: dict[str, Any] | None  # None for servers that do not boot from Ignition (the helper)


MACHINESET = "machinesets/worker.yaml"
MACHINESET_NOTE = (
    "# Example worker MachineSets for this cluster (integrated mode), one per zone, 0 replicas: after install,\n"
    "# `oc apply -f` it and `oc scale machineset/<name> -n openshift-machine-api --replicas=N` to let the\n"
    "# Machine API add workers. Its machines run no routers (docs/day2.md: ingress placement).\n"
)
# Names the plan's own directory, so that --out replaces a plan and nothing else.
PLAN_MARKER = ".ocp-plan"
# What a plan holds at its top (plans written before the marker hold resources.json and state.json).
PLAN_ENTRIES = frozenset(
    {PLAN_MARKER, "resources.json", "state.json", "outputs.json", "topology.svg", "images.json", "changes.json", "nodes", "machinesets", "needs.yaml"}
)
DESCRIBE_HOW = "python -m tools.describe_cloud --os-cloud NAME --out cloud.yaml writes one of yours; then add --cloud cloud.yaml"


class PlanError(Exception):
    """A problem with the command's own arguments or files."""


def stack_config(stack: str | None, config_file: str | None, assets: str | None) -> tuple[str, dict[str, str], list[str]]:
    path = Path(config_file) if config_file else ROOT / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        raise PlanError(f"no stack file {path}: name a committed stack (--stack dev) or a file (--config-file PATH)")
    stack_name = stack or path.stem.removeprefix("Pulumi.")
    stack_file = read_stack_file(path)
    config = dict(stack_file.config)
    clear = [key for key in declared_secrets() if key in config]
    if clear:
        raise PlanError("\n".join(clear_secret_problems(clear, path, stack_name, config)))
    notes = []
    if "ocp:pullSecret" not in config:
        config["ocp:pullSecret"] = SAMPLE_PULL_SECRET
        notes.append("pull secret: a fake sample (the stack's own is encrypted or unset)")
    if assets:
        config["ocp:installer"] = json.dumps({"assetsDir": assets})
        notes.append(f"installer configs: read from {assets}")
    return stack_name, config, notes


def stack_path(stack: str | None, config_file: str | None) -> Path:
    return Path(config_file) if config_file else ROOT / f"Pulumi.{stack}.yaml"


def declared_secrets() -> list[str]:
    """The keys Pulumi.yaml declares `secret: true`: the CLI refuses a stack file holding one in clear."""
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text()) or {}
    declared = project.get("config") or {}
    return [key if ":" in key else f"{project['name']}:{key}" for key, entry in declared.items() if isinstance(entry, dict) and entry.get("secret")]


def clear_secret_problems(keys: list[str], path: Path, stack: str, config: dict[str, str]) -> list[str]:
    """As `pulumi` refuses them ("must be encrypted as it's secret"), with the config's other problems."""
    found = [
        f"{key}: is in clear text in {path}, which pulumi refuses (\"must be encrypted as it's secret\"): remove the line and "
        f"set it with `pulumi config set --secret {key} \"$(cat pull-secret.json)\" --stack {stack}`, which stores it encrypted"
        for key in keys
    ]
    try:
        load_config(config)
    except ConfigError as error:
        found += error.problems
    return found


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def described_network_ids(description: dict[str, Any]) -> dict[str, str]:
    """name -> ID of each network the cloud description lists whose name is its own (neutronNetworks)."""
    listed = description.get("neutronNetworks") or []
    names = [network["name"] for network in listed]
    return {network["name"]: network["id"] for network in listed if names.count(network["name"]) == 1}


def cloud_note(settings: ClusterConfig, description: Path | None) -> str | None:
    """The summary's line naming the cloud the flavors, images and quotas were checked against."""
    if settings.openstack is None:
        return None  # libvirt: no cloud to describe
    if description is None:
        return f"cloud: not checked, no description of your cloud (samples/cloud/{mock_cloud.DEFAULT.name} describes the repository's lab): {DESCRIBE_HOW}"
    if settings.openstack.skip_preflight:
        return f"cloud: not checked (ocp:openstack.skipPreflight), invokes answered from the cloud description {shown(description)}"
    hint = " (tools.plan --cloud FILE to check against yours)" if description == mock_cloud.DEFAULT else ""
    return f'cloud: checked against the cloud description {shown(description)}, standing in for cloud "{settings.openstack.cloud}"{hint}'


def against_description(text: str, config: dict[str, str], description: Path) -> str:
    """The program's messages name the clouds.yaml entry (in cloud "openstack"); offline, the
    cloud that answered is the description: say which, and how to check against another."""
    try:
        settings = load_config(config)
    except Exception:  # a refused config names no cloud
        return text
    if settings.openstack is None:
        return text
    hint = " (tools.plan --cloud FILE to check against yours)" if description == mock_cloud.DEFAULT else ""
    return text.replace(f'in cloud "{settings.openstack.cloud}"', f"in the cloud description {shown(description)}{hint}")


def guard_rails_check(run: ProgramRun, settings: ClusterConfig) -> str:
    """The policy pack's rules on this plan (tools/guard_rails.py): a violation refuses it, as the preview would."""
    try:
        found = guard_rails.violations(run, settings)
    except guard_rails.Unavailable as error:
        return f"guard rails: not checked here ({error})"
    if found:
        raise PlanError("the guard rails (policy/README.md) refuse it, as `pulumi preview` would:\n  " + "\n  ".join(found))
    return f"guard rails: the policy pack's {len(guard_rails.rules())} mandatory rules pass (policy/README.md)"


def user_installer(config: dict[str, str]) -> tuple[Path, str] | None:
    """The user's own openshift-install and where it was found: what ocp:installer.binary names
    where that is here, else `openshift-install` on PATH. None without one (or with assetsDir);
    the toolchain's build found so is the toolchain's, not the user's."""
    if os.environ.get(USER_INSTALLER_SWITCH) == "off":
        return None
    try:
        installer = json.loads(config.get("ocp:installer") or "{}")
    except ValueError:
        return None
    if not isinstance(installer, dict) or installer.get("assetsDir"):
        return None
    named = installer.get("binary")
    found, source = (checks.resolve(str(named)), "ocp:installer.binary") if named else (None, "")
    if found is None:
        found, source = shutil.which("openshift-install"), "openshift-install on PATH"
    if found is None:
        return None
    path = Path(found).resolve()
    built = real_installer.binary()
    return None if built is not None and path == built.resolve() else (path, source)


def user_installer_problems(user: tuple[Path, str] | None, config: dict[str, str]) -> list[str]:
    """The user's installer against the config, as `python -m ocp install` judges it (ocp/checks.py)."""
    if user is None:
        return []
    try:
        settings = load_config(config)
    except ConfigError:
        return []  # the program's run reports those
    return checks.installer_problems(str(user[0]), settings)


def installer_note(run: ProgramRun, settings: ClusterConfig, user: tuple[Path, str] | None = None) -> str | None:
    """Which installer made the configs of this plan (yours, the toolchain's build, or the fake), and why not a real one where it did not."""
    if run.installer is None:
        return None
    against = " against the local cloud (harness.localcloud)" if settings.integrated else ""
    if run.installer_kind == "user" and user is not None:
        return f"installer configs: made by your {run.installer}, {user[0]} ({user[1]}){against}"
    if run.installer_kind == "toolchain":
        return f"installer configs: made by the real {run.installer}{against} (the toolchain's build)"
    if user is not None:
        why = f"your {user[0]} ({user[1]}) validates platform openstack against the cloud, and the offline plan contacts none"
    elif real_installer.binary() is None:
        why = f"no openshift-install of yours (ocp:installer.binary, PATH), and the real one is not built: {toolchain.HOW}"
    else:
        why = "the real one validates platform openstack against a cloud, and none is at hand: `python -m harness.localcloud up` brings one"
    return f"installer configs: made by {run.installer} ({why})"


def node_outputs(run: ProgramRun) -> list[NodeOutput]:
    served = {
        assembly.sha512_tag(text): text
        for resource in run.resources
        if resource.type in SERVED_CONFIG_TYPES and isinstance(text := unwrap(resource.inputs.get("stdin")), str)
    }
    fw_cfg = {
        resource.parent: unwrap(resource.inputs.get("content", ""))
        for resource in run.resources
        if resource.type in FW_CFG_TYPES
    }
    ips = {name: addresses[0] if isinstance(addresses, list) else addresses for name, addresses in run.outputs.get("nodes", {}).items()}  # the primary's
    result = []
    for resource in run.resources:
        if resource.type in SERVER_TYPES:
            user_data = unwrap(resource.inputs.get("userData", ""))
        elif resource.type in DOMAIN_TYPES:
            user_data = fw_cfg.get(resource.parent, "")
        else:
            continue
        hostname = unwrap(resource.inputs["name"])
        result.append(NodeOutput(hostname, ips.get(hostname), user_data, _full_ignition(user_data, served)))
    # Resources register in no fixed order: list nodes by address (bootstrap, masters, workers).
    return sorted(result, key=lambda node: (node.ip is None, ip_address(node.ip) if node.ip else 0, node.hostname))


def _full_ignition(user_data: str, served: dict[str, str]) -> dict[str, Any] | None:
    try:
        config = json.loads(user_data)
    except ValueError:
        return None  # cloud-config, not Ignition
    for source in config.get("ignition", {}).get("config", {}).get("merge", []):
        text = served.get(source.get("verification", {}).get("hash", ""))
        if text is not None:
            config = assembly.resolve_merge(config, json.loads(text))
    return config


def check_out(out: Path) -> None:
    """--out is replaced whole: only when it is absent, empty or an earlier plan."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise PlanError(f"--out {out}: is not a directory: name a new directory or an earlier plan's")
    if not out.exists():
        return
    names = {entry.name for entry in out.iterdir()}
    foreign = sorted(names - PLAN_ENTRIES)
    if not names or (not foreign and (PLAN_MARKER in names or {"resources.json", "state.json"} <= names)):
        return
    held = foreign or sorted(names)
    listed = ", ".join(held[:5]) + (f" and {len(held) - 5} more" if len(held) > 5 else "")
    raise PlanError(
        f"--out {out}: holds {listed}, not an offline plan; it would be replaced whole, so nothing "
        "was written: name a new directory or an earlier plan's (default build/plan-<stack>)"
    )


def _inside(directory: Path, path: str, hostname: str) -> Path:
    """Where a file a node's config names goes in the plan: a relative path, or one with '..',
    would land outside it (Ignition wants absolute paths; on the node '..' stops at /): refused."""
    parts = PurePosixPath(path).parts
    if not path.startswith("/") or ".." in parts or "\0" in path or len(parts) < 2:
        raise PlanError(
            f"{hostname}: its config names the file {path!r}, relative or with '..', which would be written "
            "outside the plan directory: fix the installer configs (--assets) to name absolute paths without '..'"
        )
    return directory.joinpath(*parts[1:])


def _unit(directory: Path, name: str, hostname: str) -> Path:
    if not name or "/" in name or name in (".", ".."):
        raise PlanError(f"{hostname}: its config names the systemd unit {name!r}, not a unit's file name: fix the installer configs (--assets)")
    return directory / name


def write_plan(run: ProgramRun, out: Path) -> list[NodeOutput]:
    resources = [
        {"type": r.type, "name": r.name, "parent": r.parent, "inputs": mask(r.inputs), "options": r.options}
        for r in run.resources
    ]
    _write(out / "resources.json", json.dumps(resources, indent=2, sort_keys=True) + "\n")
    _write(out / "state.json", json.dumps(run.state(), indent=1, sort_keys=True) + "\n", private=True)
    outputs = {key: "[secret]" if key in run.secret_outputs else value for key, value in run.outputs.items()}
    _write(out / "outputs.json", json.dumps(outputs, indent=2, sort_keys=True) + "\n")
    _write(out / PLAN_MARKER, "an offline plan (python -m tools.plan): --out replaces this directory whole\n")
    nodes = node_outputs(run)
    for node in nodes:
        # A node's files hold its keys, tokens and the cluster's CA keys: the owner's alone.
        directory = _node_directory(out, node.hostname)
        _write(directory / "user_data", node.user_data, private=True)
        if node.ignition is None:
            continue
        _write(directory / "ignition.json", json.dumps(assembly.readable(node.ignition), indent=2, sort_keys=True) + "\n", private=True)
        for entry in node.ignition.get("storage", {}).get("files", []):
            contents = written_contents(entry)
            if contents is not None:
                _write(_inside(directory / "files", entry["path"], node.hostname), contents, private=True)
        units = directory / "files/etc/systemd/system"
        for unit in node.ignition.get("systemd", {}).get("units", []):
            if unit.get("contents"):  # empty: Ignition only enables the unit the image has
                _write(_unit(units, unit["name"], node.hostname), unit["contents"], private=True)
            for dropin in unit.get("dropins", []):
                dropin_path = _unit(units, f"{unit['name']}.d", node.hostname) / _unit(units, dropin["name"], node.hostname).name
                _write(dropin_path, dropin.get("contents", ""), private=True)
    return nodes


def _node_directory(out: Path, hostname: str) -> Path:
    """nodes/<server name>: the name comes from the installer's infra ID, which the configs carry; one
    that would lead out of nodes/ is refused (cluster.installer_output checks the infra ID too)."""
    nodes = (out / "nodes").resolve()
    directory = (nodes / hostname).resolve()
    if not hostname or "/" in hostname or "\0" in hostname or directory.parent != nodes:
        raise PlanError(
            f"a node is named {hostname!r}, which would be written outside the plan directory: fix the installer "
            "configs (--assets), whose metadata.json's infraID names the servers"
        )
    return directory


def _write(path: Path, contents: str | bytes, private: bool = False) -> None:
    """Directories the owner's alone (0700); a private file 0600 from its first byte (ocp/private_files.py)."""
    private_files.write(path, contents, "--out", mode=0o600 if private else 0o644)


def parse_time(text: str | None) -> float | None:
    """`+21h` (hours from now) or an ISO 8601 time; None: the real clock."""
    if text is None:
        return None
    relative = re.fullmatch(r"\+(\d+(?:\.\d+)?)h", text)
    if relative:
        return time.time() + float(relative.group(1)) * 3600
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise PlanError(f"--at {text!r}: write +<hours>h (e.g. +21h) or an ISO 8601 time (2026-11-23T10:00:00+00:00)") from None


def deployed_state(directory: str | None, stack: str) -> Engine | None:
    if directory is None:
        return None
    path = Path(directory) / "state.json"
    if not path.is_file():
        raise PlanError(f"--from {directory}: no state.json there: name the directory of an earlier plan of this stack")
    state = json.loads(path.read_text())
    # A resource's URN names its stack: another stack's plan would make every resource look new.
    stacks = sorted({item["urn"].split("::")[0].removeprefix("urn:pulumi:") for item in state if item.get("urn")})
    if stacks and stacks != [stack]:
        raise PlanError(
            f"--from {directory}: that is a plan of stack {', '.join(stacks)}, and this is stack {stack}: "
            f"name a plan of {stack} (python -m tools.plan --stack {stack} --out DIR)"
        )
    return deployed_from(state)


def node_images_of(settings: ClusterConfig, run: ProgramRun) -> dict[str, dict[str, dict[str, str]]]:
    """Which images each node runs and where each came from (the release payload the installer
    recorded, or ocp:networking.images): this program's own on-node networking only."""
    if settings.integrated:
        return {}
    command = next((r for r in run.resources if r.type == "command:local:Command" and r.name == "installer-run"), None)
    if command is None:
        return {}
    identity = InstallerAssets.from_files(unbundle(command.outputs["stdout"])).identity
    plan = plan_addresses(settings)
    return {
        server_name(settings, node, identity.infra_id): {
            name: {"image": image, "source": source} for name, (image, source) in node_images(settings, node, identity).items()
        }
        for node in plan.nodes
    }


def images_summary(images: dict[str, dict[str, dict[str, str]]]) -> list[str]:
    distinct = sorted({(name, entry["image"], entry["source"]) for per_node in images.values() for name, entry in per_node.items()})
    return [f"  {name:<22} {image} ({source})" for name, image, source in distinct]


def exposure(config: dict[str, str]) -> list[str]:
    """Every rule open beyond the machine network, with why (cluster/firewall.py)."""
    settings = load_config(config)
    rows = exposure_table(settings, plan_addresses(settings))
    return [f"  {row.group:<8} {row.rule:<16} from {row.source:<18} {row.why}" for row in rows]


def summary(stack: str, out: Path, run: ProgramRun, nodes: list[NodeOutput], notes: list[str], config: dict[str, str]) -> str:
    outputs = run.outputs
    lines = [
        f"offline plan of stack {stack!r} by ocp {VERSION} -> {out} (private to you, mode 0700: it holds the cluster's secrets)",
        *[f"  {note}" for note in notes],
        "",
        f"API       {outputs.get('apiUrl')}  VIP {outputs.get('apiVip')}  floating IP {outputs.get('apiFloatingIp') or '-'}",
        f"Ingress   {outputs.get('consoleUrl')}  VIP {outputs.get('ingressVip')}  floating IP {outputs.get('ingressFloatingIp') or '-'}",
        "",
        "open beyond the machine network (everything not listed here is closed to it):",
        *(exposure(config) or ["  nothing (no security groups on this platform)"]),
        "",
        "resources by type:",
    ]
    counts = Counter(resource.type for resource in run.resources)
    lines += [f"  {count:4d}  {type_}" for type_, count in sorted(counts.items())]
    lines += [f"  {sum(counts.values()):4d}  in all", "", "nodes:"]
    width = max((len(node.hostname) for node in nodes), default=0)
    for node in nodes:
        lines.append(f"  {node.hostname:<{width}}  {node.ip or '-':<15}  user_data {len(node.user_data.encode()):6d} B")
    images = node_images_of(load_config(config), run)
    if images:
        lines += ["", "images of this program's on-node networking (per node: images.json):", *images_summary(images)]
    if run.warnings:
        lines += ["", "warnings:", *[f"  {warning}" for warning in run.warnings]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.plan", description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="stack name: reads Pulumi.<stack>.yaml")
    source.add_argument("--config-file", help="path of a Pulumi.<stack>.yaml")
    parser.add_argument("--assets", help="directory of installer configs (bootstrap.ign, ..., auth/)")
    parser.add_argument("--out", help="output directory (default build/plan-<stack>)")
    parser.add_argument("--from", dest="deployed", metavar="PLANDIR", help="preview the next `pulumi up` of a stack deployed as this earlier plan")
    parser.add_argument(
        "--at", metavar="TIME",
        help="run the program's clock as if at this time, +<hours>h or ISO 8601 (default now): with --from, whether a "
        "later `pulumi up` still works, e.g. a bootstrap from installer configs whose certificates expire 24 h after they were made",
    )
    parser.add_argument(
        "--cloud", metavar="FILE",
        help="a YAML description of your cloud (flavors, images, external networks, zones, volume types, quotas; "
        "`python -m tools.describe_cloud --os-cloud NAME --out FILE` writes it from your cloud) that the preflight's flavor, "
        "image, network and quota checks read instead of your cloud, which the plan never contacts; default: "
        f"{shown(mock_cloud.DEFAULT)} for the repository's own stacks, none for yours (the cloud checks are skipped)",
    )
    args = parser.parse_args(argv)
    engine = None
    description = Path(args.cloud).resolve() if args.cloud else mock_cloud.DEFAULT
    config: dict[str, str] = {}
    try:
        cloud = mock_cloud.read(args.cloud or description)
        stack, config, notes = stack_config(args.stack, args.config_file, args.assets)
        out = Path(args.out or ROOT / "build" / f"plan-{stack}")
        check_out(out)
        engine = deployed_state(args.deployed, stack)
        user = user_installer(config)
        unfit = user_installer_problems(user, config)
        if unfit:
            raise PlanError("\n".join(unfit))
        own = not args.cloud and not mock_cloud.describes(stack_path(args.stack, args.config_file))
        unchecked = mock_cloud.stand_in(config, cloud) if own else None
        run = run_program(
            config, stack=stack, engine=engine, now=parse_time(args.at), cloud=unchecked or cloud, installer=user[0] if user else None
        )
        settings = load_config(config)
        checked_against = None if unchecked else description
        notes += filter(None, [cloud_note(settings, checked_against), installer_note(run, settings, user), guard_rails_check(run, settings)])
    except mock_cloud.DescriptionError as error:
        print(f"error: --cloud: {error}", file=sys.stderr)
        return 2
    except (PlanError, StackFileError, pulumi.RunError) as error:
        print(f"error: {against_description(str(error), config, description)}", file=sys.stderr)
        return 2
    run.warnings[:] = [against_description(warning, config, description) for warning in run.warnings]
    stack_needs = (
        needs.of_stack(settings, plan_addresses(settings), run.outputs, cloud if checked_against else None, needs.rhcos_stream(user[0] if user else real_installer.binary()))
        if settings.openstack
        else None
    )
    changes: list[Change] = engine.all_changes() if engine is not None else []
    # Written aside (mode 0700) and moved into place: a failure leaves the previous plan, never half a new one.
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".plan-", dir=out.parent))
    try:
        nodes = write_plan(run, staging)
        settings = load_config(config)
        images = node_images_of(settings, run)
        if images:
            _write(staging / "images.json", json.dumps(images, indent=2, sort_keys=True) + "\n")
        if settings.integrated:
            network_ids = described_network_ids(cloud) if checked_against else {}
            machinesets = worker_machinesets(settings, run.outputs["infraId"], network_ids)
            unsaid = machineset_notes(settings, network_ids)
            header = MACHINESET_NOTE + "".join(f"# NOTE {note}\n" for note in unsaid)
            _write(staging / MACHINESET, header + yaml.safe_dump_all(machinesets, sort_keys=False))
            notes += [f"{MACHINESET}: {note}" for note in unsaid]
        svg = topology.render(run.state(), run.outputs, f"stack {stack}")
        if svg is not None:
            _write(staging / "topology.svg", svg)
        notes.append("picture: topology.svg" if svg is not None else f"picture: none, Graphviz's dot is missing: {topology.HOW}")
        if engine is not None:
            _write(staging / "changes.json", json.dumps([c.as_json() for c in changes], indent=2) + "\n")
        if stack_needs is not None:
            _write(staging / "needs.yaml", needs.render(stack_needs, f"the cloud description {shown(description)}" if checked_against else "no cloud description"))
        if out.exists():
            shutil.rmtree(out)
        os.rename(staging, out)
    except (PlanError, private_files.Refused) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    print(summary(stack, out, run, nodes, notes, config))
    if stack_needs is not None:
        print("\nwhat the cloud must give this stack (needs.yaml; docs/openstack.md: the checklist):")
        print("\n".join(needs.summary_lines(stack_needs)))
    if engine is not None:
        print(f"\nnext `pulumi up` of the stack deployed as {args.deployed} (changes.json):")
        print(table(changes, ()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
