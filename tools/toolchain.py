"""The real toolchain as the tests and the offline plan find it: `.toolchain/` of this
checkout, laid out by `bash .ci/toolchain` (toolchain/build.py). Read by the offline plan and the tests.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from toolchain.build import CLI_SWITCHES

ROOT = Path(__file__).resolve().parent.parent
# OCP_TOOLCHAIN_LAYOUT names another layout, or none (the quick loop, tests/conftest.py: as if never built).
LAYOUT = Path(os.environ.get("OCP_TOOLCHAIN_LAYOUT") or ROOT / ".toolchain")
BIN = LAYOUT / "bin"
HOW = "run `bash .ci/toolchain`"


def binary(name: str) -> Path | None:
    """A built binary of .toolchain/bin, or None when the toolchain lacks it."""
    path = BIN / name
    return path if path.is_file() and os.access(path, os.X_OK) else None


def status() -> dict[str, Any]:
    """What toolchain/build.py built and what it found missing (`missing`: why)."""
    path = LAYOUT / "status.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def missing(name: str) -> str:
    """Why a component is absent, for a skip message."""
    reason = status().get(name, {}).get("missing")
    return f"{name}: {reason}" if reason else f"{name} is not built: {HOW}"


def pulumi_env(home: Path, backend: Path, project_venv: Path | None = None) -> dict[str, str]:
    """The environment `.toolchain/env` gives, with a private PULUMI_HOME and file backend."""
    path = [str(BIN)]
    if project_venv is not None:
        path.append(str(project_venv / "bin"))  # the language host takes Python from PATH
    return {
        **os.environ,
        "PATH": os.pathsep.join([*path, os.environ.get("PATH", "")]),
        "PULUMI_HOME": str(home),
        "PULUMI_BACKEND_URL": f"file://{backend}",
        **dict.fromkeys(CLI_SWITCHES, "true"),
    }
