"""python -m ocp install|approve-csrs|destroy --stack S: see ocp/driver.py. Every preview and up
they run runs with the policy pack (policy/README.md)."""

from __future__ import annotations

import argparse
import sys

from ocp import driver
from ocp.version import VERSION


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ocp", description="Install, tend and remove a cluster of this project's stacks.")
    parser.add_argument("--version", action="version", version=f"ocp {VERSION}")
    commands = parser.add_subparsers(dest="command", required=True)
    install = commands.add_parser("install", help="from nothing (or wherever the cluster is) to an installed cluster, under the policy pack")
    install.add_argument("--yes", action="store_true", help="go on even if the preview would disrupt running machines")
    install.add_argument("--bootstrap-timeout", type=float, default=60, help="minutes (default 60)")
    install.add_argument("--nodes-timeout", type=float, default=40, help="minutes for the workers to be Ready (default 40)")
    approve = commands.add_parser("approve-csrs", help="day 2: approve the new workers' certificates until every worker is Ready")
    approve.add_argument("--timeout", type=float, default=30, help="minutes (default 30)")
    destroy = commands.add_parser("destroy", help="the stack's resources and the cluster's own, with progress")
    destroy.add_argument("--yes", action="store_true", help="do not ask (needed where no one can answer)")
    for sub in (install, approve, destroy):
        sub.add_argument("--stack", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "install":
            driver.install(args.stack, driver.say, args.yes, args.bootstrap_timeout * 60, args.nodes_timeout * 60)
        elif args.command == "approve-csrs":
            return 0 if driver.approve(args.stack, driver.say, args.timeout * 60) else 1
        else:
            return 0 if driver.destroy(args.stack, driver.say, lambda what: args.yes or _confirm(what, args.stack)) else 1
    except driver.Stop as stop:
        print(f"stopped: {stop}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"interrupted: run the same command again to go on (`python -m tools.recover --stack {args.stack}` if pulumi says pending operations)", file=sys.stderr)
        return 130
    return 0


def _confirm(what: str, stack: str) -> bool:
    if not sys.stdin.isatty():
        print(f"{what}: add --yes to go on without a question", file=sys.stderr)
        return False
    return input(f"{what}. Type the stack's name to go on: ").strip() == stack


if __name__ == "__main__":
    sys.exit(main())
