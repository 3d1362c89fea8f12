"""`python -m harness.command_standin install [--pulumi-home DIR] [--pulumi PATH]`: install the
stand-in pulumi-resource-command 1.2.1 into a PULUMI_HOME (default: $PULUMI_HOME, else
~/.pulumi). `... serve ENGINE_ADDRESS`: run the plugin (what the engine starts)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

if __package__ in (None, ""):  # run by path, as the plugin wrapper does: the checkout is the import root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))


def main(argv: list[str]) -> int:
    if argv[:1] == ["serve"]:
        from harness.command_standin.provider import serve

        serve(argv[1:])
        return 0
    from harness.command_standin import InstallError, install

    parser = argparse.ArgumentParser(prog="python -m harness.command_standin", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    installing = commands.add_parser("install", help="install the stand-in as resource plugin command 1.2.1")
    installing.add_argument("--pulumi-home", type=Path, default=Path(os.environ.get("PULUMI_HOME") or Path.home() / ".pulumi"))
    installing.add_argument("--pulumi", default="pulumi", help="the Pulumi CLI (default: pulumi on PATH)")
    commands.add_parser("serve", help="run the plugin: the engine's address follows")
    options = parser.parse_args(argv)
    try:
        print(install(options.pulumi_home, options.pulumi).strip() or f"installed into {options.pulumi_home}")
    except InstallError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
