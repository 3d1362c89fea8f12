"""A copy of this project whose program is a small stand-in, for the tests of the engine's lock and the
stack's keys (tests/e2e/test_locks.py, test_vault.py, tests/localcloud/test_swift_state.py): the lock
and the key are the engine's and the backend's business, whatever the program makes, and a cluster
stack would hold a run for minutes of cloud calls where a gate file does. Test harness."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tools import toolchain

# Three components; held (with the stack's lock, in an up) at the gate file GATE_UP or GATE_PREVIEW names
# until the test makes it.
GATED = '''
import os, time, pulumi

class Part(pulumi.ComponentResource):
    def __init__(self, name):
        super().__init__("ocp:test:Part", name, {})
        self.register_outputs({})

Part("network")
Part("master-0")
gate = os.environ.get("GATE_PREVIEW" if pulumi.runtime.is_dry_run() else "GATE_UP")
if gate:
    open(gate + ".waiting", "w").close()
    while not os.path.exists(gate):
        time.sleep(0.1)
Part("worker-0")
'''
GATED_PARTS = ["master-0", "network", "ocp-{stack}", "worker-0"]


def needs(*binaries: str) -> str | None:
    """Why such a project cannot run here, or None."""
    for name in ("pulumi", "pulumi-language-python", *binaries):
        if toolchain.binary(name) is None:
            return toolchain.missing(name)
    return None if (ROOT / "policy" / "venv").is_dir() else "the policy pack's virtualenv policy/venv is missing: bash .ci/setup"


def copy_project(work: Path, program: str) -> Path:
    """The project (driver, policy pack, their virtualenvs) in `work/project`, with `program` as its __main__.py."""
    copy = work / "project"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".git", ".toolchain", "venv", "build", "assets", "tests", "__pycache__", "Pulumi.*.yaml"))
    (copy / "venv").symlink_to(ROOT / "venv")
    (copy / "policy" / "venv").symlink_to(ROOT / "policy" / "venv")
    (copy / "Pulumi.yaml").write_text("name: ocp\nruntime: python\n")
    (copy / "__main__.py").write_text(program)
    return copy


class Run:
    """`python -m ocp ARGS` of the project copy, as a user runs it there, in a session of its own."""

    def __init__(self, project: Path, env: dict[str, str], *args: str, **gates: Path):
        self.process = subprocess.Popen(
            [str(ROOT / "venv" / "bin" / "python"), "-m", "ocp", *args], cwd=project, env={**env, **{k: str(v) for k, v in gates.items()}},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )

    def finish(self, timeout: float = 300) -> tuple[int, str, str]:
        out, err = self.process.communicate(timeout=timeout)
        return self.process.returncode, out, err

    def kill_leftovers(self) -> None:
        """SIGKILL to whatever of its session still runs: a killed CLI leaves its language host and program, and
        its policy pack, which runs in a process group of its own (the session is the run's)."""
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                session = int(stat.read_text().rsplit(")", 1)[1].split()[3])
            except (OSError, IndexError, ValueError):
                continue
            if session == self.process.pid:
                try:
                    os.kill(int(stat.parent.name), signal.SIGKILL)
                except ProcessLookupError:
                    pass


class Runs:
    """The runs a module's tests start in one project copy, each killed at `close` if it still runs."""

    def __init__(self, project: Path, env: dict[str, str]):
        self.project, self.env, self.started = project, env, []

    def __call__(self, *args: str, **gates: Path) -> Run:
        self.started.append(Run(self.project, self.env, *args, **gates))
        return self.started[-1]

    def close(self) -> None:
        for run in self.started:
            if run.process.poll() is None:
                run.kill_leftovers()
                run.process.wait()


def waiting(gate: Path, run: Run, timeout: float = 180) -> None:
    """Until the run's program waits at `gate`."""
    deadline = time.monotonic() + timeout
    while not Path(f"{gate}.waiting").exists():
        if run.process.poll() is not None:
            pytest.fail(f"the run ended ({run.process.returncode}) before its gate: {run.finish()}")
        assert time.monotonic() < deadline, f"no run waited at {gate} within {timeout} s"
        time.sleep(0.1)


def since(fields: dict) -> str:
    """A lock's time as the driver prints it."""
    return datetime.fromisoformat(fields["timestamp"]).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def named_gone(stack: str, fields: dict, where: str) -> list[str]:
    """The driver's first two lines for a stack whose lock (`fields`, kept at `where`) a killed run left."""
    return [
        f"stopped: stack {stack} is locked by a run that is gone, so nothing was done here:",
        f"  {fields['username']}@{fields['hostname']}, pid {fields['pid']}, since {since(fields)} UTC (0 min ago): "
        f"no such process on this host: the run was killed before it could unlock (lock {where})",
    ]
