"""The real `openshift-install` for the offline plan and the tests: the program's own run
script (cluster/installer.py `run_script`), run with the toolchain's binary as pulumi-command
would run it, for the offline plan (where it can) and the tests.

Platform none always: there `create ignition-configs` needs nothing from outside. Platform
openstack validates flavors, images, networks and quotas against the cloud the stack names, so
it runs only while the local cloud (harness/localcloud) is up and its clouds.yaml has that cloud;
otherwise those runs keep the fake installer. `OCP_PLAN_LOCALCLOUD=off` keeps the fake for
them even then (the test suite sets it: its results must not depend on whether a developer's
local cloud happens to be up; tests/localcloud asks for the cloud explicitly).
One step of the script cannot run here: `oc adm release info` asks the release's registry for
the on-node networking's images, so a stand-in `oc` answers with the fake release's digests.

The installer makes a new cluster (PKI, infra ID, passwords) on every run; within one process
the output for one environment is made once and reused, as a deployed stack keeps its own.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from functools import cache
from pathlib import Path

import yaml

from cluster.installer import run_script
from harness.localcloud import cloud as localcloud
from tools import toolchain
from tools.sample_installer import release_images

# What the script's environment gets from here, not from the program.
OWN_KEYS = ("OPENSHIFT_INSTALL", "OC", "INSTALLER_DIR", "STACK")
# Only the install record depends on these: the caller writes its own (tools/mock_run.py).
RECORD_KEYS = ("GENERATION", "INSTALL_FACTS")
# "off": integrated stacks keep the fake installer even while the local cloud is up.
LOCALCLOUD_SWITCH = "OCP_PLAN_LOCALCLOUD"


def binary() -> Path | None:
    return toolchain.binary("openshift-install")


def serves(environment: Mapping[str, str], installer: Path | None = None) -> bool:
    """Whether the real installer (the user's `installer`, else the toolchain's) can make these configs here."""
    if (installer or binary()) is None or "INSTALL_CONFIG" not in environment:
        return False
    return environment.get("PLATFORM") == "none" or (environment.get("PLATFORM") == "openstack" and _cloud(environment) is not None)


def _cloud(environment: Mapping[str, str]) -> Path | None:
    """The local cloud's clouds.yaml when it is up, wanted and holds the cloud the stack names."""
    if os.environ.get(LOCALCLOUD_SWITCH) == "off":
        return None
    clouds_yaml = localcloud.answering()
    if clouds_yaml is None or environment.get("OS_CLOUD") not in (yaml.safe_load(clouds_yaml.read_text()) or {}).get("clouds", {}):
        return None
    return clouds_yaml


@cache
def version(installer: Path | None = None) -> str:
    """`openshift-install version` of `installer` (default the toolchain's), first line and release
    image, e.g. 'openshift-install v1.4.19-ec5 (release image ...)'."""
    installer = installer or binary()
    if installer is None:
        return ""
    lines = subprocess.run([installer, "version"], capture_output=True, text=True).stdout.splitlines() or [f"{installer} ?"]
    release = next((line.removeprefix("release image ") for line in lines if line.startswith("release image ")), "?")
    name, _, rest = lines[0].partition(" ")
    return f"{Path(name).name} {rest} (release image {release})"


def bundle(environment: Mapping[str, str], installer: Path | None = None) -> str:
    """What the run script prints for this environment, made once per process, installer and
    install-config: the install record line is the first caller's (replace it)."""
    chosen = installer or binary()
    assert chosen is not None, toolchain.missing("openshift-install")
    key = (str(chosen), *sorted((k, v) for k, v in environment.items() if k not in OWN_KEYS + RECORD_KEYS))
    if key not in _made:
        _made[key] = _run({**dict(key[1:]), **{k: environment[k] for k in RECORD_KEYS}}, chosen)
    return _made[key]


_made: dict[tuple[object, ...], str] = {}

STAND_IN_OC = """#!/bin/sh
# Stands in for `oc adm release info --image-for=NAME`: no registry is reachable here.
for a in "$@"; do case "$a" in --image-for=*) name=${a#--image-for=};; esac; done
case "$name" in
%s
*) echo "stand-in oc: no image $name" >&2; exit 1;;
esac
"""


def stand_in_oc(directory: Path) -> Path:
    """An `oc` in `directory` that answers the release lookups of the run script with the fake
    release's digests (tools/sample_installer/release.py)."""
    oc = directory / "oc"
    cases = "\n".join(f'{name}) echo "{image}";;' for name, image in release_images()["images"].items())
    oc.write_text(STAND_IN_OC % cases)
    oc.chmod(0o755)
    return oc


def _run(items: dict[str, str], installer: Path) -> str:
    with tempfile.TemporaryDirectory(prefix="ocp-installer-") as scratch:
        environment = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            **items,
            "OPENSHIFT_INSTALL": str(installer),
            "OC": str(stand_in_oc(Path(scratch))),
            "INSTALLER_DIR": str(Path(scratch) / "assets"),
            "STACK": "offline-plan",  # the scratch directory's marker: no stack's
        }
        if items.get("PLATFORM") == "openstack":
            environment["OS_CLIENT_CONFIG_FILE"] = str(_cloud(items))
        result = subprocess.run(["bash", "-c", run_script()], env=environment, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"openshift-install failed ({result.returncode}): {result.stderr.strip()[-3000:]}")
    return result.stdout
