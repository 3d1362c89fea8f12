"""Tests against the local OpenStack (harness/localcloud), marked `localcloud`. The package's
fixture brings the cloud up once for these tests and takes it down after them, unless it was
already up (then it stays, as the developer or .ci/run left it). The tests own projects lab and lab2:
each module's `cloud` is its group's project, which the fixture first tidies (`python -m harness.localcloud
tidy`: whatever `up` did not prepare there goes).
The quick loop without them: `venv/bin/python -m pytest --quick -n 2`; CI runs everything.

What goes wrong is in the cloud's logs: `python -m harness.localcloud status` names the directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness import vault
from harness.localcloud.cloud import answering
from harness.localcloud.layout import CLOUD, SIDE_PROJECT, STATE_BUCKET, TENANT_USER, Layout
from harness.localcloud.libvirt import PROCESS, Libvirt
from harness.localcloud.libvirt import missing_programs as libvirt_missing
from harness.localcloud.processes import recorded, running
from harness.localcloud.services import DEBIAN_PACKAGES, missing_programs, process_names
from harness.netns import host_links
from tests.conftest import SIDE_GROUP, group_of

ROOT = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/tests/localcloud/" in str(item.path):
            item.add_marker(pytest.mark.localcloud)


def localcloud(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.localcloud", *argv], cwd=ROOT, capture_output=True, text=True)


@dataclass(frozen=True)
class Project(Layout):
    """The local cloud as one tenant project's tests see it: `clouds_yaml` names that project's user as
    the entry `openstack` (the committed stacks' `openstack:cloud`)."""

    project: str = TENANT_USER

    @property
    def clouds_yaml(self) -> Path:
        return self.clouds_yaml_of(self.project)


@pytest.fixture(scope="package")
def local_cloud() -> Layout:
    """The local cloud up (started here, and then stopped after the package, unless it was up already)."""
    missing = missing_programs()
    if missing:
        pytest.skip(f"the local cloud needs {', '.join(missing)} (apt-get install {' '.join(DEBIAN_PACKAGES)}; .ci/run does)")
    layout = Layout.default()
    already = [name for name in process_names() if running(layout, name)]
    started = localcloud("up")
    assert started.returncode == 0, f"`python -m harness.localcloud up` failed:\n{started.stdout[-4000:]}\nlogs: {layout.logs}"
    yield layout
    if not already:
        stopped = localcloud("down")
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr


_tidied: set[str] = set()


@pytest.fixture(scope="module")
def cloud(local_cloud: Layout, request) -> Project:
    """The project this module's group owns (tests/conftest.py: the cloud's second group runs in lab2, the
    rest in lab), tidied the first time this worker uses it: the modules count its resources, so what an
    earlier run killed before its destroy left goes first. A group runs whole in one worker, so no tidy
    removes the stacks of a module running at that moment."""
    module = Path(request.module.__file__).relative_to(ROOT).as_posix()
    project = SIDE_PROJECT if group_of(module) == SIDE_GROUP else TENANT_USER
    if project not in _tidied:
        tidied = localcloud("tidy", "--project", project)
        assert tidied.returncode == 0, f"`python -m harness.localcloud tidy` failed:\n{tidied.stdout[-4000:]}{tidied.stderr[-2000:]}"
        print(tidied.stdout, end="")
        _tidied.add(project)
    return Project(local_cloud.home, project)


@pytest.fixture(scope="module")
def cloud_env(cloud: Project) -> dict[str, str]:
    """The environment a shell gets from `eval "$(python -m harness.localcloud env)"`: the `openstack` CLI on PATH,
    as the tenant of the module's project."""
    assert answering(cloud) is not None
    exports = localcloud("env", "--project", cloud.project).stdout
    environment = dict(os.environ)
    for line in exports.splitlines():
        if line.startswith("export "):
            key, _, value = line.removeprefix("export ").partition("=")
            environment[key] = value.replace("$PATH", os.environ["PATH"]).strip("'")
    assert environment["OS_CLOUD"] == CLOUD
    return environment


def state_url(cloud_env: dict[str, str], prefix: str) -> str:
    """The state bucket's S3 URL under a prefix of the module's own: its stacks apart from the other modules'."""
    return cloud_env["LOCALCLOUD_STATE_URL"].replace(f"s3://{STATE_BUCKET}?", f"s3://{STATE_BUCKET}/{prefix}?")


@pytest.fixture(scope="module")
def vault_server(tmp_path_factory) -> Iterator[vault.Vault]:
    """A real Vault of the module's own (harness/vault.py), stopped after the module."""
    with vault.running(tmp_path_factory.mktemp("vault")) as server:
        yield server


def sdk(cloud: Layout, code: str, **values) -> object:
    """Runs `code` with openstacksdk in the services' virtualenv, `tenant` and `admin` connected,
    `values` as variables; returns what the code puts in `result` (JSON)."""
    program = (
        "import json, sys, openstack\n"
        "tenant = openstack.connect(cloud='openstack'); admin = openstack.connect(cloud='localcloud-admin')\n"
        "globals().update(json.loads(sys.argv[1])); result = None\n"
        f"{code}\n"
        "print(json.dumps(result))\n"
    )
    done = subprocess.run(
        [str(cloud.bin("python")), "-c", program, json.dumps(values)],
        env={**os.environ, "OS_CLIENT_CONFIG_FILE": str(cloud.clouds_yaml)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def status_with_token(url: str, token: str) -> int:
    """The HTTP status a service answers to a GET of `url` with this Keystone token, as the bootstrap's shim sends it."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers={"X-Auth-Token": token}), timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


# --- the local libvirt (harness/localcloud/libvirt.py) ---


def localvirt(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.localcloud", *argv, "--libvirt"], cwd=ROOT, capture_output=True, text=True)


@pytest.fixture(scope="package")
def local_libvirt() -> Libvirt:
    missing = libvirt_missing()
    if missing:
        pytest.skip(f"the local libvirt needs {', '.join(missing)} (.ci/run installs them)")
    if os.geteuid() != 0:
        pytest.skip("the local libvirt needs root")
    layout = Layout.default()
    already = running(layout, PROCESS)
    links = host_links()
    started = localvirt("up")
    assert started.returncode == 0, f"`python -m harness.localcloud up --libvirt` failed:\n{started.stdout[-3000:]}{started.stderr[-3000:]}"
    yield Libvirt(layout)
    if not already:
        stopped = localvirt("down")
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        assert not recorded(layout, PROCESS)
        assert not Path("/run/netns", Libvirt(layout).namespace).exists()
    assert host_links() == links, "the local libvirt changed the host's links"


def libvirt_exports(local_libvirt: Libvirt) -> dict[str, str]:
    done = localvirt("env")
    assert done.returncode == 0, done.stdout + done.stderr
    return {
        key: value.strip("'")
        for key, _, value in (line.removeprefix("export ").partition("=") for line in done.stdout.splitlines() if line.startswith("export "))
    }
