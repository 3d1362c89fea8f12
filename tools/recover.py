"""After an interrupted `pulumi up` (killed, crashed, lost its connection): find what each
interrupted create made in the cloud, and remove it, so the next `pulumi up` makes it again
once, neither a second server of one name nor an orphan port. Also for a server Nova left in
ERROR, and for a node's server that `pulumi refresh` found gone.

    python -m tools.recover --stack dev            # what it would do
    python -m tools.recover --stack dev --yes      # and do it
    python -m tools.recover --stack dev --yes --cancel   # first remove the lock the dead run left

An interrupted create leaves a *pending operation* in the state: the engine cannot know whether
the cloud made the resource. Left alone, the next `pulumi up` creates it again, and OpenStack
takes a second server or port of the same name (the cloud provider then cannot tell the nodes
apart). For each pending create this looks the resource up in the cloud by what the program
gave it, with the `openstack` CLI and the stack's `openstack:cloud`: the IDs the state holds for
what it hangs off (a port's network, a rule's group, a floating IP's port), and its name with
the infra ID's tag (`openshiftClusterID=<infraID>`; Neutron takes tags in a second call, so an
untagged one of that name counts too; server groups carry no tags: name and policy). Never a
name alone: another stack's resource of the same name is never touched. Found, it is deleted (nothing else refers to it yet: its create never finished for Pulumi);
then every pending create is dropped (`pulumi refresh --clear-pending-creates`) and the next
`pulumi up` makes them. Commands (the installer's run, a drain) have nothing in the cloud: they
are dropped and run again. (`pulumi refresh --import-pending-creates URN ID` would keep what
the cloud made, but with this CLI, 3.274.1, it dropped the pending create and imported nothing:
seen against the local cloud.)

A server whose create failed in the cloud (Nova left it in ERROR: a quota met midway, no valid
host) is in the state with its create's error, and the next `pulumi up` only retries it as an
update, which leaves it in ERROR and its port unbound. Each such server is asked for by the ID
the state holds (`openstack server show <id>`), never judged by a listing (which pages, and
shows one cloud): one the cloud holds in ERROR, or answers 404 for while it still holds the
server's port (so this is the stack's cloud), is tainted (`pulumi state taint`), so the next
`pulumi up` replaces it, the old one deleted first; a protected one (a master, ocp:protect) is
unprotected for that: it never ran, and the program protects its replacement. A 404 for the
server and its port too says the cloud asked is not the stack's: nothing is done to it.

A node's server that `pulumi refresh` found gone from the cloud leaves the state, and its pointer
command (integrated mode) stays: the next `pulumi up` would make the server again from the pointer
that command read once, the installer's while the bootstrap was there, which fails TLS once the
4.19 machine config operator has rotated its CA. Each such command is tainted, the cloud not asked,
so that `pulumi up` reads the pointer the cluster serves now.

`--cancel` reads the stack's lock first (ocp/locks.py) and removes only a lock no live run holds:
one whose process is gone from this host. Another host's lock older than any run takes is most
likely a killed run's, but this machine cannot ask that host: it goes only once the user says so,
typing yes when asked (on a terminal), or naming it with `--stale-lock <where the message says it
is>`. A lock of a run on this host that still runs, or of another host's recent run, stops it
with nothing done: `pulumi cancel` would delete that live run's lock too and tell it nothing. Only
where the backend's lock cannot be read here does it fall back to `pulumi cancel`, and says so.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cluster.printable import shown
from cluster.stackfile import StackFileError, read_stack_file
from ocp import locks
from pulumi import automation as auto

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
POINTER_COMMAND = re.compile(r"Pointers\$command:local:Command::.*-pointers-(master|worker)-\d+$")


def _slot(urn: str) -> str:
    """A node's role and index from a URN of its: master-1, worker-2."""
    return "-".join(urn.rsplit("::", 1)[1].rsplit("-", 2)[-2:])


def failed_servers(export: dict) -> dict[str, dict]:
    """The servers of a `pulumi stack export` whose create failed after the cloud made them, by URN."""
    return {
        resource["urn"]: resource
        for resource in export.get("deployment", {}).get("resources") or []
        if resource.get("type") == SERVER and resource.get("initErrors") and resource.get("id")
    }


def pointer_commands(export: dict, servers: list[str]) -> list[str]:
    """The pointer commands (integrated mode) of these servers, by URN: tainted with them, so the
    server made again boots from the pointer the cluster serves now, not the one read with the
    failed server (the installer's, while the bootstrap was there)."""
    slots = {_slot(urn) for urn in servers}
    return [
        resource["urn"]
        for resource in export.get("deployment", {}).get("resources") or []
        if POINTER_COMMAND.search(resource.get("urn", "")) and _slot(resource["urn"]) in slots
    ]


def lost_servers_pointers(export: dict) -> list[str]:
    """The pointer commands (integrated mode) whose server the state no longer holds (`pulumi refresh`
    found it gone from the cloud), by URN: the next `pulumi up` makes that server again from the
    pointer its command read once (the installer's, while the bootstrap was there). Tainted, they
    read the one the cluster serves now."""
    resources = export.get("deployment", {}).get("resources") or []
    held = {_slot(resource["urn"]) for resource in resources if resource.get("type") == SERVER}
    return [
        resource["urn"]
        for resource in resources
        if POINTER_COMMAND.search(resource.get("urn", "")) and _slot(resource["urn"]) not in held
    ]


# What `server_states` says of a failed server besides the status the cloud gives it.
GONE = "gone"  # 404 by its ID, while the cloud holds its port
UNKNOWN = "not found, nor its port"  # 404 for both: not the stack's cloud?
REPLACED = ("ERROR", GONE)  # an update cannot mend these: tainted


def _shown(openstack: Openstack, kind: tuple[str, ...], id_: str) -> dict | None:
    """One resource by its ID, or None where the cloud answers 404 for it."""
    try:
        return openstack(*kind, "show", id_, "-f", "json")
    except NotFound:
        return None


def server_states(openstack: Openstack, failed: dict[str, dict]) -> dict[str, str]:
    """What the cloud says of each of `failed`, asked by the ID the state holds."""
    states = {}
    for urn, resource in failed.items():
        shown = _shown(openstack, ("server",), resource["id"])
        if shown is not None:
            states[urn] = shown.get("status") or shown.get("Status") or "?"
            continue
        ports = [network["port"] for network in (resource.get("inputs") or {}).get("networks") or [] if network.get("port")]
        here = bool(ports) and _shown(openstack, ("port",), ports[0]) is not None
        states[urn] = GONE if here else UNKNOWN
    return states


def in_error(openstack: Openstack, failed: dict[str, dict]) -> list[str]:
    """Those of `failed` the cloud holds in ERROR or, by their IDs, no longer holds: an update cannot mend them."""
    return [urn for urn, state in server_states(openstack, failed).items() if state in REPLACED]


def pending_creates(export: dict) -> list[Interrupted]:
    """The interrupted creates of a `pulumi stack export`."""
    return [
        Interrupted(op["resource"]["urn"], op["resource"]["type"], op["resource"].get("inputs") or {})
        for op in export.get("deployment", {}).get("pending_operations") or []
        if op.get("type") == "creating"
    ]


Openstack = Callable[..., Any]  # the rows of a listing, or the fields of a `show`
INFRA_TAG = "openshiftClusterID="


def _infra_tag(inputs: dict) -> str | None:
    return next((tag for tag in inputs.get("tags") or [] if tag.startswith(INFRA_TAG)), None)


def _tags(row: dict) -> list[str]:
    tags = row.get("Tags") or []
    return [tag.strip() for tag in tags.split(",")] if isinstance(tags, str) else list(tags)


def _tagged(openstack: Openstack, kind: list[str], inputs: dict, *filters: str, check: Callable[[dict], bool] = lambda row: True) -> list[str]:
    """Of the listing, those of the name the program gave with its infra-ID tag, or with none:
    Neutron and Glance take tags in a call after the create, which a killed run may never make."""
    tag = _infra_tag(inputs)
    if tag is None:  # the program tags every such resource: without its tag, nothing is known to be ours
        return []
    rows = openstack(*kind, "list", *filters, "-f", "json")
    return [row["ID"] for row in rows if row.get("Name") == inputs["name"] and (tag in _tags(row) or not _tags(row)) and check(row)]


def _server(openstack: Openstack, inputs: dict) -> list[str]:
    """By name and the infra-ID tag, which Nova takes with the create (the provider asks for 2.52)."""
    tag = _infra_tag(inputs)
    if tag is None:
        return []
    name = inputs["name"]
    rows = openstack("--os-compute-api-version", "2.26", "server", "list", "--name", f"^{name}$", "--tags", tag, "-f", "json")
    return [row["ID"] for row in rows if row.get("Name") == name]


def _on_network(kind: str) -> Callable[[Openstack, dict], list[str]]:
    """A port or subnet: on the network the state gave it, of its name and tag."""
    def find(openstack: Openstack, inputs: dict) -> list[str]:
        network = ["--network", inputs["networkId"]] if inputs.get("networkId") else []
        return _tagged(openstack, [kind], inputs, "--name", inputs["name"], *network, "--long")

    return find


def _server_group(openstack: Openstack, inputs: dict) -> list[str]:
    """Nova's server groups carry no tags: the name (which holds the infra ID) and the policy."""
    wanted = set(inputs.get("policies") or [])

    def policies(row: dict) -> set[str]:
        value = row.get("Policies", row.get("Policy")) or []
        return {value} if isinstance(value, str) else set(value)

    rows = openstack("server", "group", "list", "-f", "json")
    return [row["ID"] for row in rows if row.get("Name") == inputs["name"] and policies(row) == wanted]


def _volume(openstack: Openstack, inputs: dict) -> list[str]:
    """By name and the infra ID in its metadata (volumes take no tags), given with the create."""
    infra_id = (inputs.get("metadata") or {}).get("openshiftClusterID")
    if not infra_id:
        return []
    rows = openstack("volume", "list", "--name", inputs["name"], "--property", f"openshiftClusterID={infra_id}", "-f", "json")
    return [row["ID"] for row in rows if row.get("Name") == inputs["name"]]


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
    "openstack:compute/instance:Instance": _server,
    "openstack:compute/serverGroup:ServerGroup": _server_group,
    "openstack:networking/port:Port": _on_network("port"),
    "openstack:networking/network:Network": lambda o, i: _tagged(o, ["network"], i, "--name", i["name"], "--long"),
    "openstack:networking/subnet:Subnet": _on_network("subnet"),
    "openstack:networking/router:Router": lambda o, i: _tagged(o, ["router"], i, "--name", i["name"], "--long"),
    "openstack:networking/secGroup:SecGroup": lambda o, i: _tagged(
        o, ["security", "group"], i, check=lambda row: row.get("Description", "") == i.get("description", "")
    ),
    "openstack:networking/secGroupRule:SecGroupRule": _rule,
    "openstack:networking/floatingIp:FloatingIp": _floating_ip,
    "openstack:networking/routerInterface:RouterInterface": _router_interface,
    "openstack:images/image:Image": lambda o, i: _tagged(o, ["image"], i, "--name", i["name"], "--long"),
    "openstack:blockstorage/volume:Volume": _volume,
}


def verdicts(interrupted: list[Interrupted], openstack: Openstack) -> list[Verdict]:
    found = []
    for item in interrupted:
        finder = FINDERS.get(item.type)
        ids = finder(openstack, item.inputs) if finder is not None and item.inputs else []
        found.append(Verdict(item, tuple(ids)))
    return found


# How the CLI says the cloud answered 404 (openstacksdk's find, older clients' find_resource).
NOT_FOUND = re.compile(r"No \w+ found for |No \w+ with a name or ID of |\(HTTP 404\)")


def openstack_cli(cloud: str) -> Openstack:
    def run(*args: str) -> Any:
        done = subprocess.run(["openstack", *args], env={**os.environ, "OS_CLOUD": cloud}, capture_output=True, text=True)
        if done.returncode != 0:
            error = NotFound if NOT_FOUND.search(done.stderr) else RecoveryError
            raise error(f"`openstack {' '.join(args)}` failed: {done.stderr.strip()[-500:]}")
        return json.loads(done.stdout) if done.stdout.strip() else []

    return run


class RecoveryError(Exception):
    pass


class NotFound(RecoveryError):
    """The cloud answered 404 for what was asked by its ID."""


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


def _typed_yes(question: str) -> bool:
    """The user's answer, where a user is there to give one (stdin a terminal)."""
    if not sys.stdin.isatty():
        return False
    try:
        return input(f"{question} Type yes to remove it: ").strip() == "yes"
    except EOFError:
        return False


def release_dead_locks(stack_name: str, cwd: Path, named: Sequence[str] = ()) -> str | None:
    """Removes the stack's locks that no live run holds: those whose process is gone from this host, and
    another host's stale ones the user confirmed (`named` by where they are, or a yes typed); None when
    done, else why nothing was removed."""
    found = locks.find(auto.select_stack(stack_name=stack_name, work_dir=str(cwd)))
    if found.skipped or found.store is None:
        print(f"recover: the stack's lock cannot be read here ({found.skipped}): `pulumi cancel` removes every lock of the stack")
        cancelled = pulumi(stack_name, "cancel", "--yes", cwd=cwd)
        return f"`pulumi cancel` failed: {cancelled.stderr.strip()[-500:]}" if cancelled.returncode != 0 else None
    now = datetime.now(UTC)
    alive = [lock for lock in found.locks if lock.state(now) in ("live", "elsewhere", "unknown")]
    if alive:
        return "\n".join([
            f"--cancel removes no lock a run may still hold, so nothing was done; stack {stack_name} is locked:",
            *[lock.line(now, found.store) for lock in alive],
            "Wait for that run to end (or check on its host that it ended), then run this again.",
        ])
    store = found.store
    unconfirmed = [
        lock for lock in found.locks
        if lock.state(now) == "stale" and store.where(lock.key) not in named
        and not _typed_yes(f"{lock.line(now, store).strip()}\nHave you checked on {shown(lock.host)} that no run of stack {stack_name} is alive (`ps -p {lock.pid}` there)?")
    ]
    if unconfirmed:
        return "\n".join([
            "--cancel removes another host's lock only once you confirm that its run is gone (this machine cannot ask that host), so nothing was done:",
            *[lock.line(now, store) for lock in unconfirmed],
            "Check on that host that no run of the stack is alive (its pid, or its CI job ended), then run this again and type yes "
            "when asked, or add the lock's place:",
            *[f"  --stale-lock {shlex.quote(shown(store.where(lock.key)))}" for lock in unconfirmed],
        ])
    for lock in found.locks:
        store.delete(lock.key)
        gone = "no longer running" if lock.state(now) == "gone" else "on another host, confirmed gone"
        print(f"recover: removed the lock of {lock.holder} (pid {lock.pid}, {gone}): {shown(store.where(lock.key))}")
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.recover", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", required=True)
    parser.add_argument("--yes", action="store_true", help="delete what the interrupted creates made and drop them from the state")
    parser.add_argument("--cwd", type=Path, default=Path.cwd(), help="the project directory (default: here)")
    parser.add_argument(
        "--cancel", action="store_true",
        help="first remove the lock the interrupted run left (never one a live run may hold: that stops it, nothing done)",
    )
    parser.add_argument(
        "--stale-lock", action="append", default=[], metavar="WHERE",
        help="with --cancel: another host's stale lock (where the message names it) that you checked is a dead run's",
    )
    arguments = parser.parse_args(argv)
    if arguments.stale_lock and not arguments.cancel:
        parser.error("--stale-lock goes with --cancel (and --yes)")
    exported = pulumi(arguments.stack, "stack", "export", cwd=arguments.cwd)
    if exported.returncode != 0:
        print(f"recover: `pulumi stack export` failed: {exported.stderr.strip()[-500:]}", file=sys.stderr)
        return 1
    export = json.loads(exported.stdout)
    interrupted, failed, lost = pending_creates(export), failed_servers(export), lost_servers_pointers(export)
    if not interrupted and not failed and not lost:
        if arguments.yes and arguments.cancel:  # a run killed before it made anything leaves its lock all the same
            refusal = release_dead_locks(arguments.stack, arguments.cwd, arguments.stale_lock)
            if refusal:
                print(f"recover: {refusal}", file=sys.stderr)
                return 1
        print(f"recover: stack {arguments.stack} has no interrupted create, no failed server and no server lost from the state: `pulumi up` as usual")
        return 0
    try:
        stack_file = read_stack_file(arguments.cwd / f"Pulumi.{arguments.stack}.yaml")
        cloud = stack_file.config.get("openstack:cloud") or os.environ.get("OS_CLOUD", "")
        found = verdicts(interrupted, openstack_cli(cloud))
        states = server_states(openstack_cli(cloud), failed) if failed else {}
    except (RecoveryError, StackFileError) as error:
        print(f"recover: {error}", file=sys.stderr)
        return 1
    for verdict in found:
        what = f"in the cloud as {', '.join(verdict.ids)}: delete it" if verdict.ids else "not in the cloud"
        print(f"  {verdict.interrupted.name:50} {what}; `pulumi up` makes it")
    broken = [urn for urn, state in states.items() if state in REPLACED]
    protected = [urn for urn in broken if failed[urn].get("protect")]
    for urn, state in states.items():
        name, id_ = urn.rsplit("::", 1)[1], failed[urn]["id"]
        lifted = " (protected: unprotect it, it never ran)" if urn in protected else ""
        if state == "ERROR":
            print(f"  {name:50} in ERROR in the cloud: taint it{lifted}; `pulumi up` replaces it")
        elif state == GONE:
            print(f"  {name:50} gone from the cloud (404 for {id_}, its port still there): taint it{lifted}; `pulumi up` replaces it")
        elif state == UNKNOWN:
            print(
                f"  {name:50} the cloud answers 404 for {id_} and for its port: is cloud {cloud!r} the stack's "
                "(openstack:cloud, OS_CLOUD)? left as it is"
            )
        else:
            print(f"  {name:50} {state} in the cloud: left as it is; `pulumi up` updates it")
    for urn in lost:
        print(f"  {urn.rsplit('::', 1)[1]:50} its server is gone from the state: taint it; `pulumi up` reads the pointer the cluster serves now for the server it makes again")
    if not arguments.yes:
        print("recover: nothing changed; --yes does it")
        return 0
    if arguments.cancel:
        refusal = release_dead_locks(arguments.stack, arguments.cwd, arguments.stale_lock)
        if refusal:
            print(f"recover: {refusal}", file=sys.stderr)
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
    if broken or lost:
        steps.append(("state", "taint", "--yes", *broken, *pointer_commands(export, broken), *lost))
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
