"""The toolchain as `bash .ci/toolchain` leaves it: the pinned versions run, `.toolchain/env`
gives what it promises, and a second run on this machine only lays out .toolchain/."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from tests.conftest import ROOT
from tools import toolchain
from toolchain.build import load_npm_pins, load_pins

PINS = {component.name: component for component in load_pins()}


def need(name: str):
    path = toolchain.binary(name)
    if path is None:
        pytest.skip(toolchain.missing(name))
    return path


def sourced(command: str) -> subprocess.CompletedProcess:
    """A bash that sourced .toolchain/env, with a clean environment but for HOME and a basic PATH."""
    environment = {"HOME": str(ROOT), "PATH": "/usr/local/bin:/usr/bin:/bin"}
    script = f". {ROOT}/.toolchain/env && {command}"
    return subprocess.run(["bash", "-c", script], env=environment, capture_output=True, text=True, timeout=120)


def test_pulumi_and_its_language_host_are_the_pinned_versions():
    need("pulumi")
    result = sourced("pulumi version && command -v pulumi pulumi-language-python pulumi-language-python-exec")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split()
    assert lines[0] == PINS["pulumi"].version
    assert all(line.startswith(str(toolchain.BIN)) for line in lines[1:]) and len(lines) == 4
    for name in ("pulumi", "pulumi-language-python"):
        assert built_from(need(name)) == (PINS[name].module, PINS[name].version)


def built_from(binary) -> tuple[str, str]:
    """The pinned module a binary's build info names (`go version -m`)."""
    info = subprocess.run(["go", "version", "-m", str(binary)], capture_output=True, text=True, check=True).stdout
    modules = {PINS[name].module for name in PINS}
    for line in info.splitlines():
        fields = line.split()
        if fields[:1] in (["mod"], ["dep"]) and fields[1] in modules:
            return fields[1], fields[2]
    raise AssertionError(info)


def test_openshift_install_is_the_pinned_version_with_its_release_image():
    need("openshift-install")
    result = sourced("openshift-install version")
    assert result.returncode == 0, result.stderr
    pin = PINS["openshift-install"]
    assert result.stdout.splitlines()[0].split()[-1] == pin.version
    assert built_from(toolchain.status()["openshift-install"]["path"] + "/bin/openshift-install") == (pin.module, pin.version)
    assert f"release image {pin.extra['release_image']}" in result.stdout


def test_the_cloud_controller_is_the_pinned_release():
    binary = need("openstack-cloud-controller-manager")
    pin = PINS["openstack-cloud-controller-manager"]
    info = subprocess.run(["go", "version", "-m", str(binary)], capture_output=True, text=True, check=True).stdout
    assert ["mod", pin.module, pin.version] in [line.split()[:3] for line in info.splitlines()], info  # the main package's module
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.split() == ["Kubernetes", pin.version], version


def test_the_env_file_sets_a_private_home_a_local_backend_and_no_downloads():
    need("pulumi")
    result = sourced("env")
    assert result.returncode == 0, result.stderr
    env = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    assert env["PULUMI_HOME"] == str(ROOT / ".toolchain" / "pulumi-home")
    assert env["PULUMI_BACKEND_URL"] == f"file://{ROOT / '.toolchain' / 'state'}"
    for switch in ("PULUMI_SKIP_UPDATE_CHECK", "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION", "PULUMI_IGNORE_AMBIENT_PLUGINS"):
        assert env[switch] == "true"
    assert env["PATH"].split(":")[:2] == [str(toolchain.BIN), str(ROOT / "venv" / "bin")]


def test_plugins_the_proxy_refuses_are_reported_with_its_answer():
    need("pulumi")
    status = toolchain.status()
    listed = sourced("pulumi plugin ls --json")
    assert listed.returncode == 0, listed.stderr
    installed = {(p["name"], p["version"]) for p in json.loads(listed.stdout or "[]")}
    for component in (c for c in PINS.values() if c.plugin):
        if (component.plugin, component.plugin_version) in installed:
            continue
        reason = status[component.name]["missing"]
        assert f"{component.module}@{component.version}" in reason


def test_a_second_run_on_this_machine_only_lays_out_the_checkout():
    need("pulumi")
    started = time.monotonic()
    result = subprocess.run(["bash", ".ci/toolchain"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    seconds = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert "building" not in result.stdout and "built before" in result.stdout
    assert seconds < 60, f"{seconds:.0f} s"


def test_each_plugin_built_is_installed_at_its_sdks_version_and_answers_the_engine():
    need("pulumi")
    built = [c for c in PINS.values() if c.plugin and c.buildable]
    assert built, "no provider plugin is built"
    listed = json.loads(sourced("pulumi plugin ls --json").stdout or "[]")
    installed = {(p["name"], p["kind"], p["version"]): p for p in listed}
    for component in built:
        plugin = installed.get((component.plugin, "resource", component.plugin_version))
        assert plugin, f"{component.plugin} {component.plugin_version} is not in .toolchain/pulumi-home: {sorted(installed)}"
        # The engine starts a plugin, which prints the port it serves gRPC on, then stops it.
        executable = ROOT / ".toolchain" / "pulumi-home" / "plugins" / f"resource-{component.plugin}-v{component.plugin_version}" / f"pulumi-resource-{component.plugin}"
        started = subprocess.Popen([executable], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            assert started.stdout.readline().strip().isdigit()
        finally:
            started.kill()
            started.wait()


def test_actionlint_and_gitlab_ci_local_are_the_pinned_versions():
    assert subprocess.run([need("actionlint"), "-version"], capture_output=True, text=True).stdout.splitlines()[0] == PINS["actionlint"].version
    (gitlab_ci_local,) = [package for package in load_npm_pins() if package.name == "gitlab-ci-local"]
    assert subprocess.run([need("gitlab-ci-local"), "--version"], capture_output=True, text=True).stdout.strip() == gitlab_ci_local.version
