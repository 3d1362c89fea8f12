"""The real engine runs the real program: the Pulumi CLI and the Python language host built
here (.toolchain), this program, on a local file backend, inside a network namespace that
has only loopback, with every connect() recorded: nothing is downloaded or called home.

What runs without a cloud and without provider plugins: the CLI's own check of the stack
config against Pulumi.yaml, and the program up to its first resource. These runs have an empty
PULUMI_HOME (the plugins built here run in tests/localcloud), so a valid stack stops at the
first provider, and says which."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from ipaddress import ip_address
from pathlib import Path

import pytest

from harness import netns
from tests.conftest import PULL_SECRET, ROOT
from tools import toolchain

PASSPHRASE = "e2e-only-passphrase"


def _needs() -> str | None:
    for name in ("pulumi", "pulumi-language-python"):
        if toolchain.binary(name) is None:
            return toolchain.missing(name)
    return netns.unavailable() or (None if shutil.which("strace") else "strace is not installed")


pytestmark = pytest.mark.skipif(_needs() is not None, reason=str(_needs()))


@dataclass
class Result:
    returncode: int
    output: str
    connects: list[str]  # every connect() address but loopback and unix sockets
    loopback: int  # connect()s to loopback: the CLI, its host and the program talk gRPC there


@pytest.fixture(scope="module")
def isolated():
    """A namespace with loopback only."""
    with netns.lab("e2e") as lab:
        yield lab, lab.namespace("engine")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the program (stack files written by the CLI stay out of the checkout)."""
    copy = tmp_path / "project"
    shutil.copytree(
        ROOT, copy, ignore=shutil.ignore_patterns(".git", ".toolchain", "venv", "build", "assets", "tests", "__pycache__")
    )
    (copy / "venv").symlink_to(ROOT / "venv")
    return copy


def pulumi(isolated, project: Path, *args: str, stdin: str | None = None) -> Result:
    lab, namespace = isolated
    environment = toolchain.pulumi_env(project.parent / "home", project.parent / "state", ROOT / "venv")
    environment["PULUMI_CONFIG_PASSPHRASE"] = PASSPHRASE
    (project.parent / "state").mkdir(exist_ok=True)
    trace = project.parent / "connects.trace"
    argv = ["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(trace), "pulumi", *args, "--non-interactive"]
    done = lab.run(namespace, argv, cwd=project, env=environment, input=stdin, timeout=300)
    addresses = _connected(trace.read_text())
    foreign = [address for address in addresses if not _is_loopback(address)]
    return Result(done.returncode, done.stdout + done.stderr, foreign, len(addresses) - len(foreign))


def _is_loopback(text: str) -> bool:
    address = ip_address(text)
    return address.is_loopback or bool(getattr(address, "ipv4_mapped", None) and address.ipv4_mapped.is_loopback)


def _connected(trace: str) -> list[str]:
    """The inet addresses of every connect() in an strace log."""
    return [
        match.group(1)
        for line in trace.splitlines()
        if "connect(" in line and (match := re.search(r'inet_(?:addr|pton)\((?:AF_INET6?, )?"([^"]+)"', line))
    ]


def init_stack(isolated, project: Path, stack: str) -> None:
    assert pulumi(isolated, project, "stack", "init", stack).returncode == 0
    result = pulumi(isolated, project, "config", "set", "--secret", "ocp:pullSecret", "--stack", stack, stdin=PULL_SECRET)
    assert result.returncode == 0, result.output
    stored = (project / f"Pulumi.{stack}.yaml").read_text()
    assert "ocp:pullSecret:\n    secure: " in stored and "auths" not in stored  # encrypted by the CLI


def test_bad_input_stops_the_program_with_its_messages_before_any_resource(isolated, project):
    stack_file = project / "Pulumi.standalone.yaml"
    stack_file.write_text(stack_file.read_text().replace("ocp:clusterName: ocp4", "ocp:clusterName: Bad_Name!"))
    init_stack(isolated, project, "standalone")
    result = pulumi(isolated, project, "preview", "--stack", "standalone")
    assert result.returncode != 0
    assert "error: invalid stack configuration:\n" in result.output
    assert "ocp:clusterName: 'Bad_Name!' is not a DNS label" in result.output
    assert "resource plugin" not in result.output and "ocp:openstack:Cluster" not in result.output
    assert PULL_SECRET not in result.output
    assert result.connects == [] and result.loopback > 0


@pytest.mark.parametrize("stack", ["dev", "standalone", "kvm"])
def test_each_committed_stack_passes_the_clis_check_and_runs_to_the_first_provider(isolated, project, stack):
    init_stack(isolated, project, stack)
    result = pulumi(isolated, project, "preview", "--stack", stack)
    assert "validating stack config" not in result.output and "invalid stack configuration" not in result.output
    # No provider plugin in this PULUMI_HOME: the program gets as far as its first one.
    missing = re.search(r"no resource plugin 'pulumi-resource-(\w+)' found in the workspace at version v([\d.]+)", result.output)
    assert missing is not None, result.output
    assert result.returncode != 0
    assert PULL_SECRET not in result.output
    assert result.connects == [] and result.loopback > 0


def test_the_cli_refuses_a_pull_secret_stored_in_the_clear(isolated, project):
    assert pulumi(isolated, project, "stack", "init", "standalone").returncode == 0
    result = pulumi(isolated, project, "config", "set", "--plaintext", "ocp:pullSecret", "--stack", "standalone", stdin=PULL_SECRET)
    preview = pulumi(isolated, project, "preview", "--stack", "standalone")
    assert result.returncode != 0 or "must be encrypted as it's secret" in preview.output
    assert preview.returncode != 0


def test_a_stack_without_a_required_key_is_refused_by_the_cli_naming_it(isolated, project):
    stack_file = project / "Pulumi.standalone.yaml"
    stack_file.write_text(re.sub(r"\n  ocp:sshKey: [^\n]*", "", stack_file.read_text()))
    init_stack(isolated, project, "standalone")
    result = pulumi(isolated, project, "preview", "--stack", "standalone")
    assert result.returncode != 0
    assert "missing configuration value 'sshKey'" in result.output
