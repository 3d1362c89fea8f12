"""What the plan's needs table says a stack takes of its project's quotas, held against what the
local cloud charges: the lifecycle reads the cloud before `pulumi up` and holds the table of the same
stack file (planned against that reading, so that vCPUs and RAM are sized) against the cloud after it:

    before = described(cloud)
    table = planned_needs(stack_file, before, tmp_path)
    stack.up(...)
    assert not uncharged(table, before, described(cloud))
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from harness.localcloud.layout import CLOUD, Layout
from tests.localcloud.conftest import ROOT


def described(cloud: Layout, name: str = CLOUD) -> dict[str, Any]:
    """The cloud description `python -m tools.describe_cloud` writes of the local cloud, as the tenant (GETs only)."""
    done = subprocess.run(
        [sys.executable, "-m", "tools.describe_cloud", "--os-cloud", name],
        cwd=ROOT,
        env={**os.environ, "OS_CLIENT_CONFIG_FILE": str(cloud.clouds_yaml)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(done.stdout)


# What the local cloud charges apart from a real one: it runs no Neutron agents (no DHCP agent, no OVN
# metadata), so a network the stack makes holds the router's interface only, not the DHCP or metadata
# port a real cloud adds (cluster/cloud_facts.py NETWORK_OWN_PORTS counts both).
LOCAL_CLOUD = {"ports": -1}


def planned_needs(stack_file: Path, description: dict[str, Any], directory: Path) -> dict[str, Any]:
    """The offline plan's needs.yaml of a stack file, against this description of the cloud."""
    cloud = directory / "described-cloud.yaml"
    cloud.write_text(yaml.safe_dump(description))
    out = directory / "plan-needs"
    done = subprocess.run(
        [sys.executable, "-m", "tools.plan", "--config-file", str(stack_file), "--cloud", str(cloud), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return yaml.safe_load((out / "needs.yaml").read_text())


def uncharged(needs: Path | dict[str, Any], before: dict[str, Any], after: dict[str, Any], apart: dict[str, int] = LOCAL_CLOUD) -> list[str]:
    """Every quota whose charge (in use after minus before) differs from the table's need (plus what
    this cloud charges `apart`); [] when all agree. A quota the cloud shows no usage of (a limit alone,
    or per group) cannot be held and is left out."""
    table = yaml.safe_load(needs.read_text()) if isinstance(needs, Path) else needs
    wrong = []
    for key, row in table["quotas"].items():
        was, now = before["quotas"].get(key), after["quotas"].get(key)
        if not (isinstance(was, list) and isinstance(now, list)) or row["need"] is None:
            continue
        charged = now[1] - was[1]
        if charged != row["need"] + apart.get(key, 0):
            differs = f", {apart[key]:+d} on this cloud" if key in apart else ""
            wrong.append(f"{key}: the needs table says {row['need']} {row['unit']}{differs}, the cloud charged {charged} ({was[1]} -> {now[1]} in use)")
    return wrong
