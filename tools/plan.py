"""Offline plan: evaluate the real program for a stack under mocks and write what it would create.

    python -m tools.plan --stack dev                 # reads Pulumi.dev.yaml
    python -m tools.plan --config-file PATH          # any stack file
    python -m tools.plan --stack dev --assets DIR    # installer configs already generated
    python -m tools.plan --stack dev --out DIR       # default build/plan-<stack>

Writes resources.json and outputs.json (secrets shown as "[secret]"), and per node
user_data (exactly what the server receives), ignition.json (the config the node ends up
with, data URLs decoded) and files/<path> (every file Ignition writes). Needs no cloud and
no Pulumi CLI. An invalid configuration exits 2 with one message and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from ipaddress import ip_address
from pathlib import Path
from typing import Any

import pulumi

from cluster.stackfile import read_stack_file
from ignition import assembly
from tools.mock_run import ProgramRun, mask, run_program, unwrap

ROOT = Path(__file__).resolve().parent.parent
# Stands in for the encrypted pull secret, which only the Pulumi CLI can decrypt.
SAMPLE_PULL_SECRET = '{"auths":{"fake.example.com":{"auth":"ZmFrZTpmYWtl","email":"fake@example.com"}}}'
SERVER_TYPES = {"openstack:compute/instance:Instance"}
# libvirt: a Domain boots from the Ignition beside it (both children of one ocp:libvirt:Machine).
DOMAIN_TYPES = {"libvirt:index/domain:Domain"}
FW_CFG_TYPES = {"libvirt:index/ignition:Ignition"}
SERVED_CONFIG_TYPES = {"command:remote:Command"}


@dataclass(frozen=True)
class NodeOutput:
    hostname: str
    ip: str | None
    user_data: str
    ignition: dict[str, Any] | None  # None for servers that do not boot from Ignition (the helper)


class PlanError(Exception):
    """A problem with the command's own arguments or files."""


def stack_config(stack: str | None, config_file: str | None, assets: str | None) -> tuple[str, dict[str, str], list[str]]:
    path = Path(config_file) if config_file else ROOT / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        raise PlanError(f"no stack file {path}: name a committed stack (--stack dev) or a file (--config-file PATH)")
    stack_name = stack or path.stem.removeprefix("Pulumi.")
    stack_file = read_stack_file(path)
    config = dict(stack_file.config)
    notes = []
    if "ocp:pullSecret" not in config:
        config["ocp:pullSecret"] = SAMPLE_PULL_SECRET
        notes.append("pull secret: a fake sample (the stack's own is encrypted or unset)")
    if assets:
        config["ocp:installer"] = json.dumps({"assetsDir": assets})
        notes.append(f"installer configs: read from {assets}")
    else:
        notes.append("installer configs: the fake installer's (tools/sample_installer.py)")
    return stack_name, config, notes


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
    ips = run.outputs.get("nodes", {})
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


def write_plan(run: ProgramRun, out: Path) -> list[NodeOutput]:
    resources = [
        {"type": r.type, "name": r.name, "parent": r.parent, "inputs": mask(r.inputs)} for r in run.resources
    ]
    _write(out / "resources.json", json.dumps(resources, indent=2, sort_keys=True) + "\n")
    outputs = {key: "[secret]" if key in run.secret_outputs else value for key, value in run.outputs.items()}
    _write(out / "outputs.json", json.dumps(outputs, indent=2, sort_keys=True) + "\n")
    nodes = node_outputs(run)
    for node in nodes:
        directory = out / "nodes" / node.hostname
        _write(directory / "user_data", node.user_data)
        if node.ignition is None:
            continue
        _write(directory / "ignition.json", json.dumps(assembly.readable(node.ignition), indent=2, sort_keys=True) + "\n")
        for entry in node.ignition.get("storage", {}).get("files", []):
            contents = assembly.file_contents(entry)
            if contents is not None:
                _write(directory / "files" / entry["path"].lstrip("/"), contents)
        for unit in node.ignition.get("systemd", {}).get("units", []):
            if "contents" in unit:
                _write(directory / "files/etc/systemd/system" / unit["name"], unit["contents"])
    return nodes


def _write(path: Path, contents: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(contents.encode() if isinstance(contents, str) else contents)


def summary(stack: str, out: Path, run: ProgramRun, nodes: list[NodeOutput], notes: list[str]) -> str:
    lines = [f"offline plan of stack {stack!r} -> {out}", *[f"  {note}" for note in notes], "", "resources by type:"]
    counts = Counter(resource.type for resource in run.resources)
    lines += [f"  {count:4d}  {type_}" for type_, count in sorted(counts.items())]
    lines += [f"  {sum(counts.values()):4d}  in all", "", "nodes:"]
    width = max((len(node.hostname) for node in nodes), default=0)
    for node in nodes:
        lines.append(f"  {node.hostname:<{width}}  {node.ip or '-':<15}  user_data {len(node.user_data.encode()):6d} B")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.plan", description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="stack name: reads Pulumi.<stack>.yaml")
    source.add_argument("--config-file", help="path of a Pulumi.<stack>.yaml")
    parser.add_argument("--assets", help="directory of installer configs (bootstrap.ign, ..., auth/)")
    parser.add_argument("--out", help="output directory (default build/plan-<stack>)")
    args = parser.parse_args(argv)
    try:
        stack, config, notes = stack_config(args.stack, args.config_file, args.assets)
        run = run_program(config, stack=stack)
    except (PlanError, pulumi.RunError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    out = Path(args.out or ROOT / "build" / f"plan-{stack}")
    # Written aside and moved into place: a failure leaves the previous plan, never half a new one.
    staging = Path(tempfile.mkdtemp(prefix=".plan-", dir=out.parent if out.parent.exists() else None))
    try:
        nodes = write_plan(run, staging)
        if out.exists():
            shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    print(summary(stack, out, run, nodes, notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
