"""python -m ocp install|up|approve-csrs|destroy --stack S: see ocp/driver.py. Every preview and up
they run runs with the policy pack (policy/README.md)."""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta

from pulumi import automation as auto

from cluster.csr import SETTLE
from ocp import checks, driver, locks, private_files, update
from ocp.status_all import DEFAULT_JOBS
from ocp.version import VERSION


CLEAR_DEAD = (
    "first remove the stack's lock if its process is gone from this host (a killed run's; never another host's, nor a live run's): "
    "see docs/teams.md"
)
STACK_HELP = "the Pulumi stack (Pulumi.<stack>.yaml in this directory, its state in the backend `pulumi login` chose)"
INSTALL = """From nothing (or wherever the cluster is) to an installed cluster: `pulumi preview` (stops if a
running machine would be disrupted), `pulumi up` with progress, a check that this machine resolves
api.<cluster>.<domain> (else the DNS records and /etc/hosts lines to make), `openshift-install wait-for
bootstrap-complete` with the masters' certificates approved beside it, the bootstrap's removal, this stack's
nodes' certificates approved until the workers are Ready, `wait-for install-complete`. Every preview and up runs with the policy pack (policy/). Needs
the Pulumi CLI (the SDK's version or later), openshift-install (ocp:installer.binary, 4.14 or later), oc
or kubectl (ocp:installer.oc): each is checked first. Stopped or interrupted, run it again: it goes on
from where the cluster is."""
UP = """Day 2: applies the stack file's edits as `pulumi up --stack S` would, under the policy pack: `pulumi
preview` first (stops on a guard rail's violation, or if a running machine would be disrupted, unless
--yes), then `pulumi up`. Needs the Pulumi CLI."""
APPROVE = """Day 2, after more workers (ocp:workers.count): approves this stack's new nodes' certificates (no other
cluster's, no other requester's) until every worker is Ready. A worker's client request is approved once it
has stayed its node's only one for 10 min on the API server's clock (a second one, maybe a forger's, holds
both for a name); a master's after the bootstrap, a quiet node's after a long shutdown (its Node
Ready=Unknown), and every client request of a stack without servers' creation times (libvirt), only by name:
--csr NAME, once the node's kubelet journal names it (`journalctl -u kubelet | grep 'Certificate signing
request created'`); a name no kubelet gives, never. While the stack's bootstrap is there (an install by plain
`pulumi up`: the installer's blanket approver is masked), the masters' requests too, by the workers' rules,
until every master and worker is Ready. Needs the Pulumi CLI and oc or kubectl (ocp:installer.oc); reaches
the API by api.<cluster>.<domain> with the stack's kubeconfig."""
STATUS = """Reads the stack and changes nothing: takes no lock, writes nothing to the state, the stack file or
the cloud. It reads the update history (when, by whom, the result, the release of this program that ran
it), the stack's lock (who holds it), a refresh preview (drift from the cloud, per resource and key: what
the running cluster adds on purpose told apart, and what to run about the rest), the cluster through its
API with the stack's kubeconfig (its version and conditions, nodes, Degraded operators, pending
certificate requests with the approver's verdict, approving none, the nearest certificate expiry), and
the project's quotas left for the next worker. Needs the Pulumi CLI and the stack's key (passphrase or
Vault) as any read of its outputs; oc or kubectl (ocp:installer.oc) for the cluster; the clouds.yaml
entry for the quotas. --json prints the report as docs/day2.md ("Every morning") documents it.
Exit codes: 0 healthy; 1 drift or unhealthy; 2 could not tell (a part could not be read and nothing
read says 1).
--all reads every stack of this project in the backend `pulumi login` chose the same way, --jobs N at
once (default 4), with one line per stack on stderr as each is read and the report alone on stdout: a
row per stack (--verbose: then each one's report), or with --json schema ocp-status-all/1. A stack that
cannot be opened or read is said as such and the others are still read. Its exit code: 1 if any stack
drifted or is unhealthy; else 2 if any could not be told, or no stack was found; else 0."""
DESTROY = """Deletes the stack and everything the cluster holds, data included: the masters and workers with their
root volumes, the network, and what an integrated cluster made in the cloud itself: the Cinder volumes of
its persistent volume claims, the Octavia load balancers (and their floating IPs) of its LoadBalancer
Services, the CSI volume snapshots and Manila shares, the image registry's Swift container with every
image pushed to it, MachineSet servers, their trunks and ports, EgressIP ports, the load balancers'
lb-sg-* groups, and Glance images tagged with the cluster (copies of the bootstrap config). Nothing of it
comes back. Workers are drained first. Asks you to type the stack's name (--yes where no one can); stops
while ocp:protect is true. Needs the Pulumi CLI (the cleanup runs with this program's venv)."""


def main(argv: list[str] | None = None, settle: timedelta = SETTLE) -> int:
    """`settle`: how long a worker's client request waits alone (the tests shorten it)."""
    parser = argparse.ArgumentParser(prog="python -m ocp", description="Install, tend and remove a cluster of this project's stacks.")
    parser.add_argument("--version", action="version", version=f"ocp {VERSION}")
    commands = parser.add_subparsers(dest="command", required=True)
    install = commands.add_parser(
        "install", help="from nothing (or wherever the cluster is) to an installed cluster, under the policy pack",
        description=INSTALL, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    install.add_argument("--yes", action="store_true", help="go on even if the preview would disrupt running machines")
    install.add_argument("--bootstrap-timeout", type=float, default=60, help="minutes (default 60)")
    install.add_argument(
        "--nodes-timeout", type=float, default=None, help="minutes for the workers to be Ready (default: the stack's ocp:workers.readyTimeout, 40)"
    )
    edit = commands.add_parser(
        "up", help="day 2: a stack edit, previewed then applied, both under the policy pack",
        description=UP, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    edit.add_argument("--yes", action="store_true", help="go on even if the preview would disrupt running machines")
    edit.add_argument("--replace", action="append", default=[], metavar="URN", help="replace this resource (again for more), as pulumi up --replace")
    approve = commands.add_parser(
        "approve-csrs", help="day 2: approve the new workers' certificates until every worker is Ready",
        description=APPROVE, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    approve.add_argument("--timeout", type=float, default=30, help="minutes (default 30)")
    approve.add_argument(
        "--csr", action="append", default=[], metavar="NAME",
        help="approve exactly this request (again for more), after every check but the wait and the duplicates: a master's client request is approved only so",
    )
    destroy = commands.add_parser(
        "destroy", help="the stack's resources and the cluster's own, data included (volumes, load balancers, the registry's container)",
        description=DESTROY, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    destroy.add_argument("--yes", action="store_true", help="do not ask (needed where no one can answer)")
    status = commands.add_parser(
        "status", help="reads the stack, its drift, its cluster and its quota; changes nothing (exit 0 healthy, 1 drift or unhealthy, 2 could not tell)",
        description=STATUS, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    status.add_argument("--json", action="store_true", help="the report as JSON (schema ocp-status/1, with --all ocp-status-all/1: docs/day2.md)")
    which = status.add_mutually_exclusive_group(required=True)
    which.add_argument("--stack", help=STACK_HELP)
    which.add_argument("--all", action="store_true", help="every stack of this project in the backend `pulumi login` chose, side by side")
    status.add_argument("--jobs", type=_positive, default=None, metavar="N", help=f"with --all: stacks read at once (default {DEFAULT_JOBS})")
    status.add_argument("--verbose", action="store_true", help="with --all: each stack's own report after the table")
    for sub in (install, edit, approve, destroy):
        sub.add_argument("--stack", required=True, help=STACK_HELP)
    for sub in (install, edit, destroy):
        sub.add_argument(locks.FLAG, action="store_true", dest="clear_dead", help=CLEAR_DEAD)
    args = parser.parse_args(argv)
    if args.command == "status" and args.stack and (args.jobs is not None or args.verbose):
        status.error("--jobs and --verbose go with --all")
    try:
        if args.command == "install":
            nodes_timeout = args.nodes_timeout * 60 if args.nodes_timeout is not None else None
            driver.install(args.stack, driver.say, args.yes, args.bootstrap_timeout * 60, nodes_timeout, settle=settle, clear_dead=args.clear_dead)
        elif args.command == "up":
            update.update(args.stack, driver.say, args.yes, tuple(args.replace), args.clear_dead)
        elif args.command == "status":
            return _status_all(args.json, args.jobs or DEFAULT_JOBS, args.verbose) if args.all else _status(args.stack, args.json)
        elif args.command == "approve-csrs":
            return 0 if driver.approve(args.stack, driver.say, args.timeout * 60, tuple(args.csr), settle=settle) else 1
        else:
            return 0 if driver.destroy(args.stack, driver.say, lambda what: args.yes or _confirm(what, args.stack), args.clear_dead) else 1
    except checks.MissingTools as missing:
        for line in missing.lines:
            print(f"missing: {line}", file=sys.stderr)
        return 2
    except (driver.Stop, locks.Locked, locks.Refused, private_files.Refused) as stop:
        print(f"stopped: {stop}", file=sys.stderr)
        return 1
    except auto.ConcurrentUpdateError as error:  # the engine's lock, taken after the driver's check (a destroy's)
        print(f"stopped: {locks.refused(driver._stack(args.stack), error)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        if args.command == "status":
            print("interrupted: nothing was changed", file=sys.stderr)
            return 130
        print(f"interrupted: run the same command again to go on (`python -m tools.recover --stack {args.stack}` if pulumi says pending operations)", file=sys.stderr)
        return 130
    return 0


def _status(name: str, as_json: bool) -> int:
    """Read only: the stack opened as every command does, then ocp/status.py's report printed."""
    import json

    from ocp import status, status_render

    try:
        stack = driver._stack(name)
    except (locks.Refused, auto.CommandError) as error:  # the stack could not be opened: nothing could be told
        print(f"could not tell: {str(error).strip()[-600:]}", file=sys.stderr)
        return 2
    found = status.report(stack, driver._config)
    print(json.dumps(status_render.as_json(found), indent=2) if as_json else status_render.table(found))
    return found.exit_code


def _confirm(what: str, stack: str) -> bool:
    if not sys.stdin.isatty():
        print(f"{what}: add --yes to go on without a question", file=sys.stderr)
        return False
    return input(f"{what}. Type the stack's name to go on: ").strip() == stack


def _status_all(as_json: bool, jobs: int, verbose: bool) -> int:
    """Every stack of this project, read side by side (ocp/status_all.py); one line per stack on stderr as it is read."""
    import json

    from ocp import status, status_all, status_render

    missing = checks.pulumi_problems()
    if missing:
        raise checks.MissingTools(missing)

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    def open_stack(name: str) -> auto.Stack:
        return locks.opened(name, lambda: auto.select_stack(stack_name=name, work_dir=str(driver.PROJECT)))

    try:
        fleet = status_all.read_fleet(
            auto.LocalWorkspace(work_dir=str(driver.PROJECT)), open_stack, lambda stack: status.report(stack, driver._config), jobs, progress
        )
    except status_all.Unlisted as error:
        print(f"could not tell: {error}", file=sys.stderr)
        return 2
    print(json.dumps(status_render.fleet_json(fleet), indent=2) if as_json else status_render.fleet_table(fleet, verbose))
    return fleet.exit_code


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


if __name__ == "__main__":
    sys.exit(main())
