"""examples/ci/clusters.yml, the GitHub Actions workflow, checked by the real actionlint (toolchain/pins.toml) with
its shellcheck integration: the expressions, the events, the jobs' `if`s and matrices, and every `run:` script
through shellcheck. A copy broken in one script fails it, naming the line: the check can fail."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tools import toolchain

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "ci" / "clusters.yml"

pytestmark = [
    pytest.mark.skipif(toolchain.binary("actionlint") is None, reason=toolchain.missing("actionlint")),
    pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed (.ci/run installs it)"),
]


def actionlint(path: Path) -> subprocess.CompletedProcess:
    # -shellcheck names the binary: an empty or missing one would silently turn the scripts' check off.
    return subprocess.run(
        [str(toolchain.binary("actionlint")), "-no-color", "-shellcheck", shutil.which("shellcheck") or "", str(path)],
        capture_output=True, text=True, timeout=120,
    )


def test_the_workflow_passes_actionlint_and_shellcheck():
    done = actionlint(WORKFLOW)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_a_script_shellcheck_flags_fails_the_check_naming_its_line(tmp_path):
    text = WORKFLOW.read_text()
    quoted = 'pulumi preview --diff --non-interactive --stack "$OCP_STACK"'
    assert text.count(quoted) == 1
    broken = tmp_path / "clusters.yml"
    broken.write_text(text.replace(quoted, quoted.replace('"$OCP_STACK"', "$OCP_STACK")))
    line = next(number for number, row in enumerate(broken.read_text().splitlines(), 1) if "--stack $OCP_STACK" in row)
    done = actionlint(broken)
    assert done.returncode == 1, done
    assert f"clusters.yml:{line}:" in done.stdout and "SC2086" in done.stdout and "[shellcheck]" in done.stdout, done.stdout


def test_an_event_github_does_not_have_fails_the_check(tmp_path):
    # pull_request_target would run a fork's code with the secrets: the workflow must not use it; a typo of an
    # event is caught like any other.
    assert "pull_request_target" not in WORKFLOW.read_text().split("name: clusters", 1)[1]
    broken = tmp_path / "clusters.yml"
    broken.write_text(WORKFLOW.read_text().replace("  pull_request:\n", "  pull_requests:\n", 1))
    done = actionlint(broken)
    assert done.returncode == 1 and 'unknown Webhook event "pull_requests"' in done.stdout, done.stdout
