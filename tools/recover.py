"""After an interrupted `pulumi up` (killed, crashed, lost its connection): find what each
interrupted create made in the cloud, and remove it, so the next `pulumi up` makes it again
once, neither a second server of one name nor an orphan port.

    python -m tools.recover --stack dev            # what it would do
    python -m tools.recover --stack dev --yes      # and do it
    python -m tools.recover --stack dev --yes --cancel   # first release the lock the dead run left

An interrupted create leaves a *pending operation* in the state: the engine cannot know whether
the cloud made the resource. Left alone, the next `pulumi up` creates it again, and OpenStack
takes a second server or port of the same name (the cloud provider then cannot tell the nodes
apart). For each pending create this looks the resource up in the cloud by what the program
gave it (name, tags, addresses), with the `openstack` CLI and the stack's `openstack:cloud`:
found, it is deleted (nothing else refers to it yet: its create never finished for Pulumi);
then every pending create is dropped (`pulumi refresh --clear-pending-creates`) and the next
`pulumi up` makes them. Commands (the installer's run, a drain) have nothing in the cloud: they
are dropped and run again. (`pulumi refresh --import-pending-creates URN ID` would keep what
the cloud made, but with this CLI, 3.274.1, it dropped the pending create and imported nothing:
seen against the local cloud.)

A server whose create failed in the cloud (Nova left it in ERROR: a quota met midway, no valid
host) is in the state with its create's error, and the next `pulumi up` only retries it as an
update, which leaves it in ERROR and its port unbound. Each such server found in ERROR (or gone)
is tainted (`pulumi state taint`), so the next `pulumi up` replaces it, the old one deleted first;
a protected one (a master, ocp:protect) is unprotected for that: it never ran, and the program
protects its replacement.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cluster.stackfile import StackFileError, read_stack_file

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Interrupted:
    urn: str
    type: str
    inputs: dict

    @property
    def name(self) -> str:
        return self.urn.rsplit("::", 1)[1]


@dataclass(frozen=True)
class Verdict:
    interrupted: Interrupted
    ids: tuple[str, ...]  # what the cloud holds for it

    @property
    def action(self) -> str:
        return "delete" if self.ids else "clear"


SERVER = "openstack:compute/instance:Instance"


def failed_servers(export: dict) -> dict[str, dict]:
    """The servers of a `pulumi stack export` whose create failed after the cloud made them, by URN."""
    return {
        resource["urn"]: resource
        for resource in export.get("deployment", {}).get("resources") or []
        if resource.get("type") == SERVER and resource.get("initErrors") and resource.get("id")
    }


def in_error(openstack: Openstack, failed: dict[str, dict]) -> list[str]:
    """Those of `failed` that the cloud holds in ERROR, or no longer holds: an update cannot mend them."""
    listed = {row["ID"]: row.get("Status") for row in openstack("server", "list", "-f", "json")}
    return [urn for urn, resource in failed.items() if listed.get(resource["id"], "ERROR") == "ERROR"]


def pending_creates(export: dict) -> list[Interrupted]:
    """The interrupted creates of a `pulumi stack export`."""
    return [
        Interrupted(op["resource"]["urn"], op["resource"]["type"], op["resource"].get("inputs") or {})
        for op in export.get("deployment", {}).get("pending_operations") or []
        if op.get("type") == "creating"
    ]


Openstack = Callable[..., list[dict]]


def _named(openstack: Openstack, kind: list[str], name: str, *filters: str) -> list[str]:
    return [row["ID"] for row in openstack(*kind, "list", *filters, "-f", "json") if row.get("Name") == name]


def _floating_ip(openstack: Openstack, inputs: dict) -> list[str]:
    """By the port it was made for (a port holds one floating IP), else by its first tag: the
    provider tags a floating IP in a second call after the create, which a killed run may never make."""
    port = inputs.get("portId")
    filters = ["--port", port] if port else [f"--tags={tag}" for tag in inputs.get("tags", [])[:1]]
    rows = openstack("floating", "ip", "list", "--long", "-f", "json", *filters)
    return [row["ID"] for row in rows if row.get("Description", "") == inputs.get("description", "") and (row.get("Port") or None) == port]


def _rule(openstack: Openstack, inputs: dict) -> list[str]:
    rows = openstack("security", "group", "rule", "list", inputs["securityGroupId"], "--ingress", "--long", "-f", "json")
    wanted = (inputs.get("protocol"), inputs.get("portRangeMin"), inputs.get("portRangeMax"), inputs.get("remoteIpPrefix"))

    def key(row: dict) -> tuple:
        ports = row.get("Port Range") or ""
        low, _, high = ports.partition(":")
        return (row.get("IP Protocol"), int(low) if low else None, int(high or low) if low else None, row.get("IP Range"))

    return [row["ID"] for row in rows if key(row) == wanted]


def _router_interface(openstack: Openstack, inputs: dict) -> list[str]:
    rows = openstack("port", "list", "--router", inputs["routerId"], "--long", "-f", "json")
    return [row["ID"] for row in rows if inputs.get("subnetId", "") in json.dumps(row.get("Fixed IP Addresses"))]


# How to find each kind the program creates, from the inputs the program gave it.
FINDERS: dict[str, Callable[[Openstack, dict], list[str]]] = {
    "openstack:compute/instance:Instance": lambda o, i: _named(o, ["server"], i["name"], "--name", f"^{i['name']}$"),
    "openstack:compute/serverGroup:ServerGroup": lambda o, i: _named(o, ["server", "group"], i["name"]),
    "openstack:networking/port:Port": lambda o, i: _named(o, ["port"], i["name"], "--name", i["name"]),
    "openstack:networking/network:Network": lambda o, i: _named(o, ["network"], i["name"], "--name", i["name"]),
    "openstack:networking/subnet:Subnet": lambda o, i: _named(o, ["subnet"], i["name"], "--name", i["name"]),
    "openstack:networking/router:Router": lambda o, i: _named(o, ["router"], i["name"], "--name", i["name"]),
    "openstack:networking/secGroup:SecGroup": lambda o, i: _named(o, ["security", "group"], i["name"]),
    "openstack:networking/secGroupRule:SecGroupRule": _rule,
    "openstack:networking/floatingIp:FloatingIp": _floating_ip,
    "openstack:networking/routerInterface:RouterInterface": _router_interface,
    "openstack:images/image:Image": lambda o, i: _named(o, ["image"], i["name"], "--name", i["name"]),
    "openstack:blockstorage/volume:Volume": lambda o, i: _named(o, ["volume"], i["name"], "--name", i["name"]),
}


def verdicts(interrupted: list[Interrupted], openstack: Openstack) -> list[Verdict]:
    found = []
    for item in interrupted:
        finder = FINDERS.get(item.type)
        ids = finder(openstack, item.inputs) if finder is not None and item.inputs else []
        found.append(Verdict(item, tuple(ids)))
    return found


def openstack_cli(cloud: str) -> Openstack:
    def run(*args: str) -> list[dict]:
        done = subprocess.run(["openstack", *args], env={**os.environ, "OS_CLOUD": cloud}, capture_output=True, text=True)
        if done.returncode != 0:
            raise RecoveryError(f"`openstack {' '.join(args)}` failed: {done.stderr.strip()[-500:]}")
        return json.loads(done.stdout) if done.stdout.strip() else []

    return run


class RecoveryError(Exception):
    pass


# How to delete each kind; a router interface's ID is its port's.
DELETE: dict[str, Callable[[dict, str], list[str]]] = {
    "openstack:compute/instance:Instance": lambda i, id_: ["server", "delete", "--wait", id_],
    "openstack:compute/serverGroup:ServerGroup": lambda i, id_: ["server", "group", "delete", id_],
    "openstack:networking/port:Port": lambda i, id_: ["port", "delete", id_],
    "openstack:networking/network:Network": lambda i, id_: ["network", "delete", id_],
    "openstack:networking/subnet:Subnet": lambda i, id_: ["subnet", "delete", id_],
    "openstack:networking/router:Router": lambda i, id_: ["router", "delete", id_],
    "openstack:networking/secGroup:SecGroup": lambda i, id_: ["security", "group", "delete", id_],
    "openstack:networking/secGroupRule:SecGroupRule": lambda i, id_: ["security", "group", "rule", "delete", id_],
    "openstack:networking/floatingIp:FloatingIp": lambda i, id_: ["floating", "ip", "delete", id_],
    "openstack:networking/routerInterface:RouterInterface": lambda i, id_: ["router", "remove", "port", i["routerId"], id_],
    "openstack:images/image:Image": lambda i, id_: ["image", "delete", id_],
    "openstack:blockstorage/volume:Volume": lambda i, id_: ["volume", "delete", id_],
}


def delete_commands(found: list[Verdict]) -> list[list[str]]:
    """The `openstack` commands that remove what the interrupted creates made, servers first (their ports go with them)."""
    commands = [DELETE[v.interrupted.type](v.interrupted.inputs, id_) for v in found for id_ in v.ids]
    return sorted(commands, key=lambda command: command[:2] != ["server", "delete"])


def pulumi(stack: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["pulumi", *args, "--stack", stack, "--non-interactive"], cwd=cwd, capture_output=True, text=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.recover", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", required=True)
    parser.add_argument("--yes", action="store_true", help="delete what the interrupted creates made and drop them from the state")
    parser.add_argument("--cwd", type=Path, default=Path.cwd(), help="the project directory (default: here)")
    parser.add_argument(
        "--cancel", action="store_true",
        help="`pulumi cancel` first: the interrupted run still holds the stack's lock (only when no other `pulumi up` runs on it)",
    )
    arguments = parser.parse_args(argv)
    exported = pulumi(arguments.stack, "stack", "export", cwd=arguments.cwd)
    if exported.returncode != 0:
        print(f"recover: `pulumi stack export` failed: {exported.stderr.strip()[-500:]}", file=sys.stderr)
        return 1
    export = json.loads(exported.stdout)
    interrupted, failed = pending_creates(export), failed_servers(export)
    if not interrupted and not failed:
        print(f"recover: stack {arguments.stack} has no interrupted create and no failed server: `pulumi up` as usual")
        return 0
    try:
        stack_file = read_stack_file(arguments.cwd / f"Pulumi.{arguments.stack}.yaml")
        cloud = stack_file.config.get("openstack:cloud") or os.environ.get("OS_CLOUD", "")
        found = verdicts(interrupted, openstack_cli(cloud))
        broken = in_error(openstack_cli(cloud), failed) if failed else []
    except (RecoveryError, StackFileError) as error:
        print(f"recover: {error}", file=sys.stderr)
        return 1
    for verdict in found:
        what = f"in the cloud as {', '.join(verdict.ids)}: delete it" if verdict.ids else "not in the cloud"
        print(f"  {verdict.interrupted.name:50} {what}; `pulumi up` makes it")
    protected = [urn for urn in broken if failed[urn].get("protect")]
    for urn in broken:
        lifted = " (protected: unprotect it, it never ran)" if urn in protected else ""
        print(f"  {urn.rsplit('::', 1)[1]:50} in ERROR in the cloud: taint it{lifted}; `pulumi up` replaces it")
    if not arguments.yes:
        print("recover: nothing changed; --yes does it")
        return 0
    if arguments.cancel:
        cancelled = pulumi(arguments.stack, "cancel", "--yes", cwd=arguments.cwd)
        if cancelled.returncode != 0:
            print(f"recover: `pulumi cancel` failed: {cancelled.stderr.strip()[-500:]}", file=sys.stderr)
            return 1
    try:
        for command in delete_commands(found):
            openstack_cli(cloud)(*command)
    except RecoveryError as error:
        print(f"recover: {error}", file=sys.stderr)
        return 1
    steps = []
    if interrupted:
        steps.append(("refresh", "--yes", "--skip-preview", "--clear-pending-creates"))
    if protected:
        steps.append(("state", "unprotect", "--yes", *protected))
    if broken:
        steps.append(("state", "taint", "--yes", *broken))
    for step in steps:
        done = pulumi(arguments.stack, *step, cwd=arguments.cwd)
        if done.returncode != 0:
            output = (done.stdout + done.stderr).strip()
            hint = " (the interrupted run's lock: --cancel releases it)" if "currently locked" in output else ""
            print(f"recover: `pulumi {' '.join(step[:2])}` failed{hint}: {output[-2000:]}", file=sys.stderr)
            return 1
    print(f"recover: the state knows what the cloud holds; `pulumi preview --stack {arguments.stack}` then `pulumi up`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
