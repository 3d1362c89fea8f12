"""The version a user pins: one source (ocp/version.py), what `python -m ocp --version` prints,
and a section of CHANGELOG.md for it. The offline plan's summary naming it: tests/tools/test_plan.py."""

from __future__ import annotations

import re
import subprocess
import sys

from ocp.version import VERSION
from tests.conftest import ROOT

RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", re.M)


def test_python_m_ocp_version_prints_the_version():
    result = subprocess.run([sys.executable, "-m", "ocp", "--version"], cwd=ROOT, capture_output=True, text=True)
    assert (result.returncode, result.stdout, result.stderr) == (0, f"ocp {VERSION}\n", "")


def test_the_version_is_semantic_and_the_changelog_s_newest_release():
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION)
    changelog = (ROOT / "CHANGELOG.md").read_text()
    # Unreleased work above the releases, then the newest release: this checkout's.
    assert changelog.index("## [Unreleased]") < changelog.index(f"## [{VERSION}]")
    releases = RELEASE.findall(changelog)
    assert releases and releases[0][0] == VERSION
    # Each release once, newest first.
    numbers = [tuple(map(int, number.split("."))) for number, _ in releases]
    assert numbers == sorted(set(numbers), reverse=True)
