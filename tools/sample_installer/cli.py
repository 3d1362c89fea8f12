"""The command line, like openshift-install's for the steps it fakes."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import NoReturn, Sequence

from cluster.installer import RELEASE_FILE
from tools.sample_installer.assets import generate, ignition_configs, manifests, write_files
from tools.sample_installer.release import FAKE_MARKER, INSTALLER_VERSION, release_images

_DESCRIPTION = "A deterministic FAKE openshift-install: create manifests | ignition-configs (platform none or openstack)."


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """Report usage errors to main() instead of exiting, so main() returns its status."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{self.format_usage()}{self.prog}: error: {message}")


def _parser() -> _Parser:
    parser = _Parser(prog="python -m tools.sample_installer", description=_DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    create = commands.add_parser("create", help="like openshift-install create (manifests, ignition-configs)")
    create.add_argument("asset", choices=["manifests", "ignition-configs"])
    create.add_argument("--dir", type=Path, default=Path("."), help="assets directory holding install-config.yaml")
    # Accepted so callers can pass the real installer's flag; logging is not simulated.
    create.add_argument("--log-level", choices=["debug", "info", "warn", "error"], default="info")
    commands.add_parser("version", help="like openshift-install version: the release image it installs")
    samples = commands.add_parser(
        "write-samples", help="write the set and the release's images into --out, keeping the install-config"
    )
    samples.add_argument("--out", type=Path, required=True)
    samples.add_argument("--install-config", type=Path, required=True)
    return parser


STATE_FILE = ".openshift_install_state.json"


def _install_config_in(directory: Path) -> str:
    """The install-config of a --dir: the file, or (after `create manifests` consumed it) the state."""
    source = directory / "install-config.yaml"
    if source.is_file():
        return source.read_text()
    state = directory / STATE_FILE
    if state.is_file():
        text = json.loads(state.read_text()).get("install-config")
        if text:
            return text
    raise _UsageError(f"cannot read install-config: no {source}")


# What the installer loads from manifests/ and openshift/; other files there it ignores.
_MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def _manifest_paths(directory: Path) -> list[Path]:
    return sorted(
        path
        for sub in ("manifests", "openshift")
        if (directory / sub).is_dir()
        for path in (directory / sub).iterdir()
        if path.is_file() and path.suffix in _MANIFEST_SUFFIXES
    )


def _manifests_in(directory: Path) -> dict[str, bytes] | None:
    """The manifests `create manifests` left in --dir, as the caller left them; None if there are none."""
    found = {path.relative_to(directory).as_posix(): path.read_bytes() for path in _manifest_paths(directory)}
    return found or None


def _consume(directory: Path, paths: list[Path]) -> None:
    """Like the installer, remove what a step read from disk (it lives on in the state file)."""
    for path in paths:
        path.unlink()
    for sub in ("manifests", "openshift"):
        if (directory / sub).is_dir() and not any((directory / sub).iterdir()):
            (directory / sub).rmdir()


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        if args.command == "version":
            print(f"openshift-install {INSTALLER_VERSION} ({FAKE_MARKER})\nrelease image {release_images()['release']}")
            return 0
        consumed: list[Path] = []
        if args.command == "create":
            text = _install_config_in(args.dir)
            source = args.dir / "install-config.yaml"
        else:
            source = args.install_config
            try:
                text = source.read_text()
            except OSError as err:
                raise _UsageError(f"cannot read install-config: {err}") from err
        try:
            if args.command == "create" and args.asset == "manifests":
                files = manifests(text)
            elif args.command == "create":
                existing = _manifests_in(args.dir)
                files = generate(text) if existing is None else ignition_configs(text, existing)
                consumed = _manifest_paths(args.dir)
            else:
                files = generate(text)
        except ValueError as err:
            raise _UsageError(f"invalid install-config {source}: {err}") from err
    except _UsageError as err:
        print(err, file=sys.stderr)
        return 2
    if args.command == "create":
        write_files(files, args.dir)
        (args.dir / STATE_FILE).write_text(json.dumps({"install-config": text}))
        source.unlink(missing_ok=True)  # the real installer consumes install-config.yaml too
        _consume(args.dir, consumed)
    else:
        # The release's images beside the configs, as ocp:installer.assetsDir wants them.
        release = json.dumps(release_images(), indent=2, sort_keys=True) + "\n"
        write_files({**files, RELEASE_FILE: release.encode()}, args.out)
    return 0

