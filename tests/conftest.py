"""Shared test helpers: stack configs as the Pulumi CLI would pass them, and mock runs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import pytest

from cluster import libvirt_host
from cluster.stackfile import read_stack_file
from tools.mock_run import ProgramRun, Resource, deployed_from, run_program, unwrap
from tools import toolchain
from tools.preview import Change

ROOT = Path(__file__).resolve().parent.parent
STACK_FILES = sorted(ROOT.glob("Pulumi.*.yaml"))
# The program reads the clouds.yaml entry's cacert in integrated mode: never this machine's own.
os.environ["OS_CLIENT_CONFIG_FILE"] = str(ROOT / "tests" / "no-clouds.yaml")
# Integrated stacks' configs come from the fake installer, whether or not a local cloud is up;
# tests/localcloud turns the real one on where it asks for the cloud.
os.environ["OCP_PLAN_LOCALCLOUD"] = "off"
# Nor from an openshift-install of the developer's on PATH (the offline plan takes the user's own):
# tests of that turn it on and name their PATH (tests/tools/test_plan.py).
os.environ["OCP_PLAN_USER_INSTALLER"] = "off"
# The committed kvm stack (domain type kvm, URI on this machine) must plan on a machine without
# KVM too: in-process runs see a usable device; tests of the check itself name theirs.
libvirt_host.KVM_DEVICE = Path(os.devnull)
# A real ECDSA public key: FIPS mode takes RSA and ECDSA keys only, not the stacks' ed25519 one.
ECDSA_SSH_KEY = (
    "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBHwiFmJ7CYNurCuYIzQniyoIS+3NeYeLF"
    "yxjxcPjQiwJDhV0oe+Yr69d5SF68drBNgo6v4SmA0kU42z3Xwjzfcw= lab@fips"
)
PULL_SECRET = '{"auths":{"registry.example.com":{"auth":"dGVzdDp0ZXN0","email":"test@example.com"}}}'


# --- How the suite runs: the quick loop and the groups run side by side ---

# What needs root's network namespaces, a real daemon or the built toolchain: the quick loop
# (`pytest --quick`) leaves these out, and runs the rest as on a checkout without the toolchain.
REAL_PARTS = {
    "tests/e2e/": "the real Pulumi CLI and language host",
    "tests/localcloud/": "the local OpenStack and libvirt",
    "tests/lab/": "keepalived and haproxy in network namespaces (root)",
    "tests/toolchain/": "the built toolchain",
    "tests/harness/": "the harness's real parts (a Kubernetes API server, the engine)",
    "tests/ignition/test_networking_tools.py": "keepalived, haproxy and nft in network namespaces (root)",
    "tests/ignition/test_real_ignition.py": "the real Ignition (root)",
    "tests/ignition/test_plan_real_ignition.py": "the real Ignition (root)",
    "tests/ocp/test_approver.py": "a real Kubernetes API server",
    "tests/ocp/test_csr_race.py": "a real Kubernetes API server",
    "tests/ocp/test_status_cluster.py": "a real Kubernetes API server",
    "tests/cluster/test_drain_real_api.py": "a real Kubernetes API server",
    "tests/cluster/test_worker_pointer_real_api.py": "a real Kubernetes API server",
    "tests/cluster/test_machineset_real_api.py": "a real Kubernetes API server and a Go build from the module cache",
    "tests/tools/test_installer_contract.py": "the real openshift-install",
    "tests/examples/": "actionlint and gitlab-ci-local from the built toolchain",
}
# Groups that must stay in one worker (pytest-xdist `--dist loadgroup`), longest first: the local
# cloud's modules share one cloud and one project whose resources they count; the lab's modules share
# one lab run. Every other module is a group of its own (its module fixtures made once, its order kept).
SHARED_GROUPS = ("tests/localcloud/", "tests/lab/", "tests/e2e/")
# The local cloud's modules that only deploy their stacks (they count nothing of the project, and the
# faults set its quotas): a group of their own, beside the cloud's, in the second project (lab2,
# tests/localcloud/conftest.py `cloud`).
SIDE_GROUP = "tests/localcloud/lab2"
SIDE_MODULES = (
    "tests/localcloud/test_policy.py",
    "tests/localcloud/test_openstack_faults.py",
    "tests/localcloud/test_install_dev.py",
    "tests/localcloud/test_protect.py",
    "tests/localcloud/test_given_network.py",
    "tests/localcloud/test_zones.py",
    "tests/localcloud/test_slaac.py",
    "tests/localcloud/test_status.py",
    "tests/localcloud/test_status_all_swift.py",
    "tests/localcloud/test_pipeline.py",
)
# The local libvirt's modules touch nothing of OpenStack: a group of their own, beside the cloud's.
# `.ci/run` starts the local libvirt first, so that neither worker stops it under the other.
LIBVIRT_GROUP = "tests/localcloud/libvirt"
# test_install_kvm's played cluster serves 6443 on 127.0.0.2, test_install_dev's on 127.0.0.1. None of them may
# ask for the `cloud` fixture: its tidy would remove the stacks the cloud's group has up at that moment.
LIBVIRT_MODULES = ("tests/localcloud/test_libvirt.py", "tests/localcloud/test_libvirt_lifecycle.py", "tests/localcloud/test_install_kvm.py")


# Run first, alone (the `alone` mark): the lab's timing targets, and the local cloud's restarts, which
# would fail the stacks of the cloud's other group.
ALONE = ("tests/lab/",)


def group_of(path: str) -> str:
    """The group a test module runs in: its shared group, or the module itself."""
    if path in LIBVIRT_MODULES:
        return LIBVIRT_GROUP
    if path in SIDE_MODULES:
        return SIDE_GROUP
    return next((shared for shared in SHARED_GROUPS if path.startswith(shared)), path)


def _rank(path: str) -> int:
    """The lab first (in the run of what runs alone, before the cloud's restarts and their load), then the longest
    groups first: the cloud's two, the libvirt's, the end-to-end ones, then the rest."""
    order = ("tests/lab/", SHARED_GROUPS[0], SIDE_GROUP, LIBVIRT_GROUP, "tests/e2e/")
    return order.index(group_of(path)) if group_of(path) in order else len(order)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--quick", action="store_true", help="only what needs no toolchain, no cloud and no root (about four minutes with -n 2 on 2 cores)")


def pytest_configure(config: pytest.Config) -> None:
    # Started with Ctrl-C ignored (`bash .ci/run &` from a script: a shell without job control has its
    # background jobs ignore SIGINT), every process the tests start would ignore it too: the driver's
    # interrupted install and the Pulumi CLI's cancel of its language host (which then never exits)
    # are tested as a terminal makes them. Python's own handler here; exec gives children the default.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if config.getoption("--quick"):
        # As on a checkout where `bash .ci/toolchain` never ran: the real installer is not used either.
        # The environment too: the offline plan and the installer's run script run as processes of their own.
        os.environ["OCP_TOOLCHAIN_LAYOUT"] = str(ROOT / "tests" / "no-toolchain")
        toolchain.LAYOUT = toolchain.BIN = ROOT / "tests" / "no-toolchain"


def _part(item: pytest.Item) -> str:
    return item.path.relative_to(ROOT).as_posix()


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """`--dist loadgroup` by our groups (SHARED_GROUPS, else the module): xdist's own loadgroup reads
    `xdist_group` marks through a node ID suffix that pytest 9 no longer keeps (tried: a marked
    group's tests went to both workers), so its scope scheduler is given our groups instead."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid.split("::", 1)[0])

    return GroupScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--quick"):
        real = [item for item in items if any(_part(item).startswith(part) for part in REAL_PARTS)]
        if real:
            config.hook.pytest_deselected(items=real)
            items[:] = [item for item in items if item not in set(real)]
    for item in items:
        if _part(item).startswith(ALONE):
            item.add_marker(pytest.mark.alone)
    beside_the_cloud = [item.nodeid for item in items if group_of(_part(item)) == LIBVIRT_GROUP and "cloud" in getattr(item, "fixturenames", ())]
    if beside_the_cloud:
        raise pytest.UsageError(f"{', '.join(beside_the_cloud)}: the libvirt group runs beside the cloud's and may not use the `cloud` fixture")
    # The longest group first, so that a worker takes it at once and the others fill in beside it.
    items.sort(key=lambda item: _rank(_part(item)))


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """Each module's time (setup, call and teardown of its tests added up), the slowest first: where the
    suite's minutes go, also under xdist, where a module runs whole in one worker."""
    seconds: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if isinstance(report, pytest.TestReport):
                module = report.nodeid.split("::", 1)[0]
                seconds[module] = seconds.get(module, 0.0) + report.duration
    slowest = sorted(seconds.items(), key=lambda item: -item[1])[:15]
    if slowest:
        terminalreporter.write_sep("=", "slowest modules")
        for module, total in slowest:
            terminalreporter.write_line(f"{total:8.1f}s {module}")
    # The groups that each run whole in one worker: the longest of them bounds the run.
    groups: dict[str, float] = {}
    for module, total in seconds.items():
        group = group_of(module) if group_of(module) != module else "modules of their own"
        groups[group] = groups.get(group, 0.0) + total
    if len(groups) > 1:
        terminalreporter.write_sep("=", "time by group")
        for group, total in sorted(groups.items(), key=lambda item: -item[1]):
            terminalreporter.write_line(f"{total:8.1f}s {group}")

def stack_config(stack: str = "dev", **overrides: Any) -> dict[str, str]:
    """A committed stack's config plus a test pull secret; overrides as `key=value` (objects as dicts,
    None removes the key)."""
    config = dict(read_stack_file(ROOT / f"Pulumi.{stack}.yaml").config)
    config["ocp:pullSecret"] = PULL_SECRET
    for key, value in overrides.items():
        if value is None:
            config.pop(f"ocp:{key}", None)
        else:
            config[f"ocp:{key}"] = json.dumps(value) if isinstance(value, (dict, list)) else str(value)
    return config


def with_helper(config: dict[str, str]) -> dict[str, str]:
    """The stack with its bootstrap's config served by the helper VM (bootstrap.configSource: helper)."""
    return with_section(config, "bootstrap", configSource="helper")


def with_section(config: dict[str, str], key: str, **changes: Any) -> dict[str, str]:
    """A copy of `config` with fields of one object key changed (None removes a field)."""
    section = json.loads(config.get(f"ocp:{key}", "{}"))
    for name, value in changes.items():
        if value is None:
            section.pop(name, None)
        else:
            section[name] = value
    return {**config, f"ocp:{key}": json.dumps(section)}


def run(config: dict[str, str], stack: str = "dev") -> ProgramRun:
    return run_program(config, stack=stack)


def run_recording(config: dict[str, str], stack: str = "dev") -> tuple[ProgramRun, Exception | None]:
    """Run the program, keeping what it registered even when it fails."""
    recorded = ProgramRun()
    try:
        run_program(config, stack=stack, into=recorded)
        return recorded, None
    except Exception as error:  # noqa: BLE001 - the error is what the test looks at
        return recorded, error


def diff(before: dict[str, str], after: dict[str, str]) -> tuple[set[str], set[str], set[str]]:
    """Resource names added, removed and changed between two `inputs_by_name` results."""
    added = set(after) - set(before)
    removed = set(before) - set(after)
    changed = {name for name in set(before) & set(after) if before[name] != after[name]}
    return added, removed, changed


def inputs_by_name(program_run: ProgramRun) -> dict[str, str]:
    """Every resource's inputs, secrets revealed, as canonical JSON keyed by logical name."""
    return {
        resource.name: json.dumps(unwrap(resource.inputs), sort_keys=True) for resource in program_run.resources
    }


def ignition_validate(text: str, tmp_path: Path, name: str = "config.ign") -> subprocess.CompletedProcess:
    if shutil.which("ignition-validate") is None:
        pytest.skip("ignition-validate is not installed (Debian package 'ignition')")
    path = tmp_path / name
    path.write_text(text)
    return subprocess.run(["ignition-validate", str(path)], capture_output=True, text=True)


@pytest.fixture(scope="session")
def dev_run() -> ProgramRun:
    """The dev stack (integrated mode) under mocks, shared by read-only tests (each run is itself isolated)."""
    return run(stack_config("dev"))


@pytest.fixture(scope="session")
def dev_helper_run() -> ProgramRun:
    """The dev stack with its bootstrap's config on the helper VM (bootstrap.configSource: helper), under mocks."""
    return run(with_helper(stack_config("dev")))


@pytest.fixture(scope="session")
def standalone_run() -> ProgramRun:
    """The standalone stack (the dev cluster in standalone mode) under mocks, shared by read-only tests."""
    return run(stack_config("standalone"), stack="standalone")


@dataclass
class Preview:
    """The next `pulumi up` of a deployed stack: each resource's step, the warnings, or the refusal."""

    changes: dict[str, Change]
    warnings: list[str]
    error: str | None
    registered: list[Resource]

    def names(self, *actions: str) -> set[str]:
        return {name for name, change in self.changes.items() if change.action in actions}

    @property
    def disruptive(self) -> set[str]:
        return {name for name, change in self.changes.items() if change.disruptive}


def deploy(config: dict[str, str], stack: str = "dev") -> list[dict[str, Any]]:
    """The state a `pulumi up` of this config leaves behind."""
    return run(config, stack).state()


def preview(state: list[dict[str, Any]], config: dict[str, str], stack: str = "dev", hours_later: float = 0) -> Preview:
    """What the next `pulumi up` with `config` does to a stack deployed as `state`."""
    engine = deployed_from(state)
    recorded = ProgramRun()
    try:
        program_run = run_program(config, stack=stack, into=recorded, engine=engine, now=time.time() + hours_later * 3600)
    except pulumi.RunError as error:
        return Preview({}, recorded.warnings, str(error), recorded.resources)
    return Preview({c.name: c for c in engine.all_changes()}, program_run.warnings, None, program_run.resources)
