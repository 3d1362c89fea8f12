"""The fake installer (tools/sample_installer) held to the real one, so that it cannot drift.

Platform none: the standalone and kvm stacks' install-configs go through the toolchain's
`openshift-install` (4.19.0-ec.5, offline for platform none) and through the fake, each step
once per module; the shapes must agree (contents are the fake's stand-ins). Platform openstack
needs a cloud to run, so there the fake's Machine API file names are checked against the
installer's own Go source, which the toolchain build downloaded.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster.addresses import plan_addresses
from cluster.config import load_config
from cluster.installer import ASSET_FILES, UPI_REMOVED_MANIFESTS, InstallerAssets, render_install_config, upi_manifests
from tests.conftest import PULL_SECRET, ROOT, stack_config
from tools import sample_installer, toolchain

INSTALLER = toolchain.binary("openshift-install")
needs_installer = pytest.mark.skipif(INSTALLER is None, reason=toolchain.missing("openshift-install"))
# What the real installer writes and the fake may leave out: its log.
LOG = ".openshift_install.log"
MODULE_DIR = ROOT / "toolchain" / "modules" / "openshift-install"


def install_config(stack: str) -> str:
    config = load_config(stack_config(stack))
    return render_install_config(config, plan_addresses(config), PULL_SECRET)


@dataclass(frozen=True)
class Steps:
    """What one installer made of one install-config: the files each step left in its --dir
    (`create manifests` and `create ignition-configs`, each in a fresh directory)."""

    manifests: dict[str, bytes]
    ignition: dict[str, bytes]

    def bootstrap(self) -> dict[str, Any]:
        return json.loads(self.ignition["bootstrap.ign"])

    def config(self, name: str) -> dict[str, Any]:
        return json.loads(self.ignition[name])


def _files(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in directory.rglob("*") if p.is_file()}


def _run_real(text: str, scratch: Path, step: str) -> dict[str, bytes]:
    directory = scratch / f"real-{step}"
    directory.mkdir()
    (directory / "install-config.yaml").write_text(text)
    # A private HOME: nothing of the user's (registries, clouds.yaml) reaches the run.
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(scratch)}
    result = subprocess.run(
        [str(INSTALLER), "create", step, "--dir", str(directory)],
        env=environment, capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode == 0, f"openshift-install create {step}: {result.stderr[-2000:]}"
    return _files(directory)


def _run_fake(text: str, scratch: Path, step: str) -> dict[str, bytes]:
    directory = scratch / f"fake-{step}"
    directory.mkdir()
    (directory / "install-config.yaml").write_text(text)
    assert sample_installer.main(["create", step, "--dir", str(directory)]) == 0
    return _files(directory)


@pytest.fixture(scope="module", params=["standalone", "kvm"])
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Steps, Steps]:
    """(real, fake) for one stack's install-config: each installer, each step, once per module."""
    if INSTALLER is None:
        pytest.skip(toolchain.missing("openshift-install"))
    text = install_config(request.param)
    scratch = tmp_path_factory.mktemp(f"contract-{request.param}")
    real = Steps(*(_run_real(text, scratch, step) for step in ("manifests", "ignition-configs")))
    fake = Steps(*(_run_fake(text, scratch, step) for step in ("manifests", "ignition-configs")))
    return real, fake


def _differences(real: set[Any] | dict[Any, Any], fake: set[Any] | dict[Any, Any], what: str) -> str:
    """A failure message naming what only one side has, and (for mappings) what differs;
    real: openshift-install 4.19.0-ec.5's, fake: this project's."""
    lines = [f"{what}: ours differ from openshift-install 4.19.0-ec.5's"]
    lines += [f"  only the installer's: {item}" for item in sorted(set(real) - set(fake), key=str)]
    lines += [f"  only ours: {item}" for item in sorted(set(fake) - set(real), key=str)]
    if isinstance(real, dict) and isinstance(fake, dict):
        lines += [f"  {key}: installer {real[key]!r}, ours {fake[key]!r}" for key in sorted(set(real) & set(fake), key=str) if real[key] != fake[key]]
    return "\n".join(lines)


# --------------------------------------------------------------------------- platform none, run for real


@needs_installer
def test_the_fake_is_the_toolchains_version() -> None:
    lines = subprocess.run([str(INSTALLER), "version"], capture_output=True, text=True, check=True, timeout=60).stdout.splitlines()
    real_version = lines[0].split()[1]
    real_release = next(line.removeprefix("release image ") for line in lines if line.startswith("release image "))
    assert (sample_installer.INSTALLER_VERSION, sample_installer.RELEASE_IMAGE) == (real_version, real_release), (
        "tools/sample_installer/release.py names another release than the toolchain's openshift-install: "
        "bring the fake to that release and rerun this contract"
    )


@pytest.mark.parametrize("step", ["manifests", "ignition"])
def test_each_step_writes_the_same_files(runs: tuple[Steps, Steps], step: str) -> None:
    real, fake = (set(getattr(steps, step)) for steps in runs)
    real.discard(LOG)
    assert real == fake, _differences(real, fake, f"files `create {step}` writes")


def test_create_manifests_names_the_same_manifests(runs: tuple[Steps, Steps]) -> None:
    real, fake = ({name for name in steps.manifests if name.startswith(("manifests/", "openshift/"))} for steps in runs)
    assert real, "openshift-install wrote no manifests"
    assert real == fake, _differences(real, fake, "manifests of `create manifests`")


def test_the_asset_files_are_the_programs(runs: tuple[Steps, Steps]) -> None:
    real, _ = runs
    assert set(ASSET_FILES) <= set(real.ignition), _differences(set(ASSET_FILES), set(real.ignition), "cluster.installer.ASSET_FILES")


@pytest.mark.parametrize("name", ["bootstrap.ign", "master.ign", "worker.ign"])
def test_ignition_versions(runs: tuple[Steps, Steps], name: str) -> None:
    real, fake = (steps.config(name)["ignition"]["version"] for steps in runs)
    assert real == fake == sample_installer.IGNITION_VERSION, f"{name}: real {real}, fake {fake}, fake's IGNITION_VERSION {sample_installer.IGNITION_VERSION}"


@pytest.mark.parametrize("role", ["master", "worker"])
def test_pointer_configs_differ_only_in_their_ca(runs: tuple[Steps, Steps], role: str) -> None:
    pointers = []
    for steps in runs:
        pointer = steps.config(f"{role}.ign")
        (authority,) = pointer["ignition"]["security"]["tls"]["certificateAuthorities"]
        assert authority["source"].startswith("data:text/plain;charset=utf-8;base64,"), authority["source"][:60]
        authority["source"] = "<CA>"
        pointers.append(pointer)
    real, fake = pointers
    assert real == fake, f"{role}.ign: real {json.dumps(real)}\nfake {json.dumps(fake)}"


def _file_shapes(bootstrap: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    """path -> (mode, overwrite, contents or append, owner) of bootstrap.ign's storage.files."""
    return {
        entry["path"]: (
            oct(entry.get("mode", 0)),
            entry.get("overwrite"),
            "append" if "append" in entry else "contents",
            entry.get("user", {}).get("name"),
        )
        for entry in bootstrap["storage"]["files"]
    }


def test_bootstrap_files_have_the_same_paths_and_modes(runs: tuple[Steps, Steps]) -> None:
    real, fake = (_file_shapes(steps.bootstrap()) for steps in runs)
    assert "/usr/local/bin/bootkube.sh" in real and "/usr/local/bin/bootkube.sh" in fake, "bootkube.sh is missing"
    assert real == fake, _differences(real, fake, "bootstrap.ign storage.files (mode, overwrite, contents/append, owner)")


def test_bootstrap_data_urls_have_the_same_shape(runs: tuple[Steps, Steps]) -> None:
    def shapes(bootstrap: dict[str, Any]) -> set[tuple[str, ...]]:
        return {
            (tuple(sorted(entry["contents"])), entry["contents"]["source"].partition(",")[0])
            for entry in bootstrap["storage"]["files"]
            if "contents" in entry
        }

    real, fake = (shapes(steps.bootstrap()) for steps in runs)
    assert real == fake, _differences(real, fake, "bootstrap.ign contents (keys, data URL header)")


def test_bootstrap_units_have_the_same_names_flags_and_dropins(runs: tuple[Steps, Steps]) -> None:
    def units(bootstrap: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
        return {
            unit["name"]: (unit.get("enabled"), "contents" in unit, [d["name"] for d in unit.get("dropins", [])])
            for unit in bootstrap["systemd"]["units"]
        }

    real, fake = (units(steps.bootstrap()) for steps in runs)
    assert real == fake, _differences(real, fake, "systemd units (enabled, has contents, dropins)")


def test_bootstrap_ignition_section(runs: tuple[Steps, Steps]) -> None:
    real, fake = (steps.bootstrap()["ignition"] for steps in runs)
    assert real == fake, f"bootstrap.ign ignition: real {real}, fake {fake}"


def test_bootstrap_passwd_shape(runs: tuple[Steps, Steps]) -> None:
    def shape(bootstrap: dict[str, Any]) -> list[tuple[str, list[str], list[tuple[str, bool]]]]:
        users = bootstrap["passwd"]["users"]
        keys = [[(key.split(" ")[0], key.endswith("\n")) for key in u["sshAuthorizedKeys"]] for u in users]
        return [(u["name"], sorted(u), k) for u, k in zip(users, keys)]

    real, fake = (shape(steps.bootstrap()) for steps in runs)
    assert real == fake, f"passwd (user, fields, (key type, ends in a newline)): real {real}, fake {fake}"
    (real_user,), (fake_user,) = (steps.bootstrap()["passwd"]["users"] for steps in runs)
    assert real_user["sshAuthorizedKeys"][0] == fake_user["sshAuthorizedKeys"][0], "the install-config's key comes first"
    for key in (real_user["sshAuthorizedKeys"][1], fake_user["sshAuthorizedKeys"][1]):
        assert base64.b64decode(key.split()[1]).startswith(b"\0\0\0\x07ssh-rsa"), f"not an RSA key line: {key[:40]}"


def test_metadata_has_the_same_keys(runs: tuple[Steps, Steps]) -> None:
    real, fake = (json.loads(steps.ignition["metadata.json"]) for steps in runs)
    assert list(real) == list(fake), f"metadata.json keys: real {list(real)}, fake {list(fake)}"
    same = ("clusterName", "featureSet", "customFeatureSet")
    assert {k: real[k] for k in same} == {k: fake[k] for k in same}, f"metadata.json: real {real}, fake {fake}"
    assert real["infraID"].rsplit("-", 1)[0] == fake["infraID"].rsplit("-", 1)[0], f"infraID: real {real['infraID']}, fake {fake['infraID']}"


def test_auth_files_have_the_same_shape(runs: tuple[Steps, Steps]) -> None:
    def kubeconfig(steps: Steps) -> dict[str, Any]:
        document = yaml.safe_load(steps.ignition["auth/kubeconfig"])
        return {
            "keys": sorted(document),
            "servers": [c["cluster"]["server"] for c in document["clusters"]],
            "clusters": [(c["name"], sorted(c["cluster"])) for c in document["clusters"]],
            "contexts": [(c["name"], c["context"]) for c in document["contexts"]],
            "current": document["current-context"],
            "users": [(u["name"], sorted(u["user"])) for u in document["users"]],
        }

    real, fake = (kubeconfig(steps) for steps in runs)
    assert real == fake, _differences(real, fake, "auth/kubeconfig")
    for side, steps in zip(("real", "fake"), runs):
        password = steps.ignition["auth/kubeadmin-password"].decode()
        assert re.fullmatch(r"[A-Za-z0-9]{5}(-[A-Za-z0-9]{5}){3}", password), f"{side} kubeadmin-password {password!r}"


def test_the_program_reads_the_install_config_where_both_put_it(runs: tuple[Steps, Steps]) -> None:
    real, fake = (InstallerAssets.from_files(steps.ignition).install_config for steps in runs)
    assert real and real == fake, _differences(real, fake, "the install-config in manifests/cluster-config.yaml")


# --------------------------------------------------------------------------- platform openstack, against the source


@pytest.fixture(scope="module")
def installer_source() -> Path:
    """The installer module's source as the toolchain build downloaded it (Go's module cache)."""
    if shutil.which("go") is None:
        pytest.skip("go is not on PATH: the installer's source is found with `go list -m`")
    environment = {**os.environ, "GOFLAGS": "-mod=readonly", "GOTOOLCHAIN": "local", "GOPROXY": "off"}
    result = subprocess.run(
        ["go", "list", "-m", "-json", "github.com/openshift/installer"],
        cwd=MODULE_DIR, env=environment, capture_output=True, text=True, timeout=120, check=False,
    )
    directory = json.loads(result.stdout).get("Dir") if result.returncode == 0 else None
    if not directory or not Path(directory).is_dir():
        pytest.skip(f"the installer's module is not downloaded ({result.stderr.strip()[-300:]}): {toolchain.HOW}")
    return Path(directory)


def _go_strings(path: Path) -> dict[str, str]:
    """`name = "value"` string constants of a Go file."""
    return dict(re.findall(r'^\s*(\w+)\s*=\s*"([^"]*)"', path.read_text(), flags=re.MULTILINE))


@pytest.fixture(scope="module")
def machine_file_names(installer_source: Path) -> dict[str, str]:
    machines = installer_source / "pkg" / "asset" / "machines"
    names = {**_go_strings(machines / "master.go"), **_go_strings(machines / "worker.go")}
    wanted = ("directory", "masterMachineFileName", "workerMachineSetFileName", "controlPlaneMachineSetFileName")
    missing = [name for name in wanted if name not in names]
    assert not missing, f"pkg/asset/machines of the installer no longer defines {missing}: find the new names"
    return names


def _padded(index: int, count: int) -> str:
    """The installer numbers files zero-padded to the width of the count."""
    return str(index).zfill(len(str(count)))


def test_openstack_machine_manifests_have_the_installers_names(machine_file_names: dict[str, str]) -> None:
    config = load_config(stack_config("dev"))
    text = install_config("dev")
    manifests = sample_installer.manifests(text)
    kinds = {"Machine", "MachineSet", "ControlPlaneMachineSet"}
    fake = {name for name, data in manifests.items() if yaml.safe_load(data).get("kind") in kinds}
    folder = machine_file_names["directory"]
    masters = config.masters.count
    expected = {
        *(f"{folder}/" + machine_file_names["masterMachineFileName"] % _padded(i, masters) for i in range(masters)),
        # One MachineSet per compute zone; the dev stack names none, so one.
        f"{folder}/" + machine_file_names["workerMachineSetFileName"] % _padded(0, 1),
        f"{folder}/" + machine_file_names["controlPlaneMachineSetFileName"],
    }
    assert fake == expected, _differences(expected, fake, "Machine API manifests of `create manifests` (openstack)")


def test_upi_removed_manifests_are_the_installers_patterns(machine_file_names: dict[str, str]) -> None:
    folder = machine_file_names["directory"]
    installers = {
        f"{folder}/" + machine_file_names["masterMachineFileName"] % "*",
        f"{folder}/" + machine_file_names["workerMachineSetFileName"] % "*",
        f"{folder}/" + machine_file_names["controlPlaneMachineSetFileName"],
    }
    assert set(UPI_REMOVED_MANIFESTS) == installers, _differences(installers, set(UPI_REMOVED_MANIFESTS), "cluster.installer.UPI_REMOVED_MANIFESTS")
    manifests = sample_installer.manifests(install_config("dev"))
    for pattern in UPI_REMOVED_MANIFESTS:
        assert any(fnmatch(name, pattern) for name in manifests), f"{pattern} matches none of the fake's manifests"
    left = [name for name, data in upi_manifests(manifests).items() if yaml.safe_load(data).get("kind") in {"Machine", "MachineSet", "ControlPlaneMachineSet"}]
    assert left == [], f"Machine API objects left after the UPI deletions: {left}"
