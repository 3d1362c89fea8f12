"""ocp:installer.extraManifests: every file checked before anything runs, one message per bad
file naming the key and the file; none may replace a manifest of the installer or the program's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cluster.addresses import plan_addresses
from cluster.config import load_config
from cluster.day2 import stack_settings
from cluster.installer import render_install_config, run_environment, run_script
from cluster.manifests import ENVIRONMENT_BUDGET, read_extra_manifests
from ignition.chrony import machine_configs
from tests.conftest import PULL_SECRET, ROOT, run_recording, stack_config, with_section
from tools import real_installer, toolchain
from tools.real_installer import stand_in_oc

KEY = "ocp:installer.extraManifests"
CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: openshift-config\ndata:\n  a: b\n"


def _directory(tmp_path: Path, files: dict[str, str]) -> Path:
    directory = tmp_path / "manifests"
    directory.mkdir(parents=True)
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


def test_good_manifests_are_read_by_name_and_other_files_left_alone(tmp_path):
    directory = _directory(tmp_path, {"a.yaml": CONFIG_MAP.format(name="a"), "b.json": json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}), "README.md": "# notes"})
    files, problems = read_extra_manifests(str(directory))
    assert problems == [] and sorted(files) == ["a.yaml", "b.json"]


def test_each_bad_file_has_its_own_message_naming_the_key_and_the_file(tmp_path):
    directory = _directory(tmp_path, {
        "good.yaml": CONFIG_MAP.format(name="good"),
        "broken.yaml": "apiVersion: v1\nkind: [ConfigMap\n",
        "nokind.yml": "apiVersion: v1\nmetadata:\n  name: x\n",
        "noname.yaml": "apiVersion: v1\nkind: ConfigMap\n",
        "empty.yaml": "---\n",
        "with space.yaml": CONFIG_MAP.format(name="s"),
    })
    files, problems = read_extra_manifests(str(directory))
    assert list(files) == ["good.yaml"]
    by_file = {name: [p for p in problems if p.startswith(f"{KEY}: {name} in {directory} ")] for name in ("broken.yaml", "nokind.yml", "noname.yaml", "empty.yaml", "with space.yaml")}
    assert all(len(found) == 1 for found in by_file.values()), problems
    assert len(problems) == 5
    assert "is not valid YAML at line 3" in by_file["broken.yaml"][0]
    assert "lacks apiVersion or kind" in by_file["nokind.yml"][0]
    assert "has no metadata.name" in by_file["noname.yaml"][0]
    assert "is empty" in by_file["empty.yaml"][0]
    assert "rename it" in by_file["with space.yaml"][0]


def test_a_directory_that_is_not_there_or_holds_no_manifest(tmp_path):
    assert read_extra_manifests(str(tmp_path / "nope"))[1] == [f"{KEY}: {tmp_path / 'nope'} is not a directory: name the directory that holds the manifests to add"]
    (tmp_path / "notes.txt").write_text("x")
    (problem,) = read_extra_manifests(str(tmp_path))[1]
    assert problem.startswith(f"{KEY}: {tmp_path} holds no .yaml, .yml or .json file")


def test_no_file_may_replace_the_chrony_machine_configs_while_ntp_servers_are_set(tmp_path):
    ours = machine_configs(load_config({**stack_config("dev"), "ocp:ntpServers": "10.20.0.1"}))
    (same_name,) = [name for name in ours if "master" in name]
    same_object = "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: 99-worker-chrony\nspec: {}\n"
    directory = _directory(tmp_path, {same_name: same_object.replace("worker", "master"), "mine.yaml": same_object})
    _, problems = read_extra_manifests(str(directory), ours)
    assert [p.split(" in ")[0] for p in problems] == [f"{KEY}: {same_name}", f"{KEY}: mine.yaml"]
    assert "holds MachineConfig 99-worker-chrony, which this program makes from ocp:ntpServers" in problems[1]
    # Without ntpServers the documented way (a 99-worker-chrony of one's own) is the user's to take.
    assert read_extra_manifests(str(directory))[1] == []


def test_manifests_too_big_for_the_installers_command_are_refused_before_anything_runs(tmp_path):
    blob = "x" * (ENVIRONMENT_BUDGET * 3 // 4 + 1024)
    directory = _directory(tmp_path, {"big.yaml": CONFIG_MAP.format(name="big").replace("a: b", f"a: {blob}")})
    (problem,) = read_extra_manifests(str(directory))[1]
    assert problem.startswith(f"{KEY}: the manifests in {directory} take ") and "128 KiB" in problem
    # Just under the budget the whole environment still execs (Linux refuses one string of 128 KiB or more).
    fits = _directory(tmp_path / "fits", {"big.yaml": CONFIG_MAP.format(name="big").replace("a: b", "a: " + "x" * (ENVIRONMENT_BUDGET * 3 // 4 - 2048))})
    files, problems = read_extra_manifests(str(fits))
    assert problems == []
    config = load_config({**stack_config("standalone"), "ocp:ntpServers": "10.20.0.1"})
    plan = plan_addresses(config)
    environment = run_environment(config, "standalone", render_install_config(config, plan, PULL_SECRET), PULL_SECRET, stack_settings(config, plan), {**machine_configs(config), **files})
    assert subprocess.run(["/bin/sh", "-c", "true"], env={"PATH": os.environ["PATH"], **environment}).returncode == 0


def test_a_bad_manifest_stops_the_program_before_any_resource(tmp_path):
    directory = _directory(tmp_path, {"broken.yaml": "kind: [\n"})
    program_run, error = run_recording(with_section(stack_config("dev"), "installer", extraManifests=str(directory)))
    assert error is not None and f"{KEY}: broken.yaml in {directory} is not valid YAML" in str(error)
    assert [r for r in program_run.resources if r.custom] == []


@pytest.mark.parametrize("key,config", [
    ("ocp:installer.extraManifests goes with installer.binary only", {"installer": {"assetsDir": str(ROOT / "samples/installer/ocp4"), "extraManifests": str(ROOT / "samples/manifests")}}),
    ("ocp:ntpServers: masters and workers get them from the MachineConfigs", {"installer": {"assetsDir": str(ROOT / "samples/installer/ocp4")}, "ntpServers": ["10.20.0.1"]}),
])
def test_configs_made_already_cannot_take_what_the_installer_run_adds(key, config):
    from cluster.config import ConfigError

    with pytest.raises(ConfigError) as raised:
        load_config(stack_config("standalone", **config))
    assert [p for p in raised.value.problems if p.startswith(key)], raised.value.problems


def test_the_run_script_never_lets_a_manifest_replace_one_of_the_installers(tmp_path):
    """With the real installer: a file named as one of its own openshift/ manifests stops the run."""
    binary = real_installer.binary()
    if binary is None:
        pytest.skip(toolchain.missing("openshift-install"))
    config = load_config(stack_config("standalone"))
    plan = plan_addresses(config)
    ssh = "99_openshift-machineconfig_99-master-ssh.yaml"
    environment = {
        **run_environment(config, "standalone", render_install_config(config, plan, PULL_SECRET), PULL_SECRET, stack_settings(config, plan), {ssh: CONFIG_MAP.format(name="x").encode()}),
        "PATH": os.environ["PATH"], "OPENSHIFT_INSTALL": str(binary), "OC": str(stand_in_oc(tmp_path)), "INSTALLER_DIR": str(tmp_path / "assets"),
    }
    result = subprocess.run(["bash", "-c", run_script()], env=environment, capture_output=True, text=True, timeout=600)
    assert result.returncode == 3 and result.stdout == ""
    assert f"ocp:installer.extraManifests: {ssh} would replace the installer's own openshift/{ssh}" in result.stderr
    assert "99-master-ssh" in (tmp_path / "assets" / "openshift" / ssh).read_text(), "the installer's file stays"


def test_files_of_the_manifests_subdirectory_go_to_the_installers_manifests(tmp_path):
    directory = _directory(tmp_path, {"a.yaml": CONFIG_MAP.format(name="a")})
    (directory / "manifests").mkdir()
    (directory / "manifests" / "early.yaml").write_text(CONFIG_MAP.format(name="early"))
    (directory / "manifests" / "cloud-provider-config.yaml").write_text(CONFIG_MAP.format(name="cloud-provider-config"))
    files, problems = read_extra_manifests(str(directory))
    assert sorted(files) == ["a.yaml", "manifests/early.yaml"]
    assert problems == [
        f"{KEY}: manifests/cloud-provider-config.yaml in {directory} would replace the installer's cloud provider config (its [Global] "
        "section holds what the installer read from your cloud): write your settings in ocp:installer.cloudProviderConfig instead, which merges them into it"
    ]
    # Only a subdirectory: the key still names manifests.
    only = _directory(tmp_path / "only", {})
    (only / "manifests").mkdir()
    (only / "manifests" / "early.yaml").write_text(CONFIG_MAP.format(name="early"))
    assert read_extra_manifests(str(only)) == ({"manifests/early.yaml": CONFIG_MAP.format(name="early").encode()}, [])


def test_the_real_installer_puts_them_where_the_bootstrap_applies_them(tmp_path):
    """With the real installer (platform none, offline): a file of manifests/ reaches the bootstrap's
    /opt/openshift/manifests/, beside the installer's own; one named as one of those stops the run."""
    binary = real_installer.binary()
    if binary is None:
        pytest.skip(toolchain.missing("openshift-install"))
    config = load_config(stack_config("standalone"))
    plan = plan_addresses(config)

    def run(added: dict[str, bytes], where: Path) -> subprocess.CompletedProcess:
        environment = {
            **run_environment(config, "standalone", render_install_config(config, plan, PULL_SECRET), PULL_SECRET, stack_settings(config, plan), added),
            "PATH": os.environ["PATH"], "OPENSHIFT_INSTALL": str(binary), "OC": str(stand_in_oc(tmp_path)), "INSTALLER_DIR": str(where),
        }
        return subprocess.run(["bash", "-c", run_script()], env=environment, capture_output=True, text=True, timeout=600)

    early = CONFIG_MAP.format(name="early").encode()
    result = run({"manifests/99-early.yaml": early, "late.yaml": CONFIG_MAP.format(name="late").encode()}, tmp_path / "assets")
    assert result.returncode == 0, result.stderr
    from cluster.dataurl import decode_data_url
    from cluster.installer import InstallerAssets, unbundle

    files = {entry["path"]: entry for entry in InstallerAssets.from_files(unbundle(result.stdout)).bootstrap["storage"]["files"]}
    assert decode_data_url(files["/opt/openshift/manifests/99-early.yaml"]["contents"]["source"]) == early
    assert "/opt/openshift/openshift/late.yaml" in files and "/opt/openshift/manifests/cluster-config.yaml" in files
    refused = run({"manifests/cluster-config.yaml": early}, tmp_path / "again")
    assert refused.returncode == 3 and refused.stdout == ""
    assert "ocp:installer.extraManifests: manifests/cluster-config.yaml would replace the installer's own manifests/cluster-config.yaml" in refused.stderr


CLOUD_PROVIDER_CONFIG = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cloud-provider-config\n  namespace: openshift-config\ndata:\n  config: |\n    [Global]\n"
CLOUD_CREDENTIALS = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: openstack-credentials\n  namespace: kube-system\nstringData:\n  clouds.yaml: mine\n"


def test_a_file_of_any_name_holding_an_object_the_installer_makes_is_refused_naming_both(tmp_path):
    """The bootstrap applies every file: the installer's cloud provider config or cloud credentials would be replaced
    by a file of another name as surely as by one of the same (as would its Infrastructure, in a second document or a List)."""
    infrastructure = "apiVersion: config.openshift.io/v1\nkind: Infrastructure\nmetadata:\n  name: cluster\nspec: {}\n"
    directory = _directory(tmp_path, {
        "my-cloud.yaml": CLOUD_PROVIDER_CONFIG,
        "two.yaml": CONFIG_MAP.format(name="mine") + "---\n" + infrastructure,
        "list.yaml": "apiVersion: v1\nkind: List\nmetadata:\n  name: mine\nitems:\n" + "".join(f"- {json.dumps(yaml.safe_load(infrastructure))}\n" for _ in (1,)),
        "fine.yaml": CONFIG_MAP.format(name="cloud-provider-config-notes"),
    })
    (directory / "manifests").mkdir()
    (directory / "manifests" / "creds.yaml").write_text(CLOUD_CREDENTIALS)
    files, problems = read_extra_manifests(str(directory))
    assert list(files) == ["fine.yaml"]
    assert problems == [
        f"{KEY}: list.yaml in {directory} holds Infrastructure cluster, which the installer makes and this would replace "
        "(manifests/cluster-infrastructure-02-config.yml; this program sets what it must of it from the stack): leave it out, or change it once the cluster runs",
        f"{KEY}: my-cloud.yaml in {directory} holds ConfigMap openshift-config/cloud-provider-config, which the installer makes and this would "
        "replace (manifests/cloud-provider-config.yaml; its [Global] section holds what the installer read from your cloud): write your settings "
        "in ocp:installer.cloudProviderConfig instead, which merges them into it",
        f"{KEY}: two.yaml in {directory} holds Infrastructure cluster, which the installer makes and this would replace "
        "(manifests/cluster-infrastructure-02-config.yml; this program sets what it must of it from the stack): leave it out, or change it once the cluster runs",
        f"{KEY}: manifests/creds.yaml in {directory} holds Secret kube-system/openstack-credentials, which the installer makes and this would "
        "replace (openshift/99_cloud-creds-secret.yaml; made from your clouds.yaml entry, ocp:openstack.cloud): leave it out",
    ]


def test_only_regular_files_are_read_never_a_link_out_of_the_directory_a_fifo_or_a_device(tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.yaml").write_text(CONFIG_MAP.format(name="from-elsewhere"))
    directory = _directory(tmp_path, {"fine.yaml": CONFIG_MAP.format(name="fine")})
    (directory / "link.yaml").symlink_to(outside / "secret.yaml")
    os.mkfifo(directory / "pipe.yaml")
    (directory / "null.yaml").symlink_to("/dev/null")
    files, problems = read_extra_manifests(str(directory))
    assert list(files) == ["fine.yaml"]
    assert problems == [
        f"{KEY}: link.yaml in {directory} is a symbolic link, which this program does not follow: copy the file itself into the directory",
        f"{KEY}: null.yaml in {directory} is a symbolic link, which this program does not follow: copy the file itself into the directory",
        f"{KEY}: pipe.yaml in {directory} is a FIFO, not a regular file: take it out of the directory",
    ]
    # The subdirectory itself a link out of the directory: refused too.
    linked = _directory(tmp_path / "linked", {"fine.yaml": CONFIG_MAP.format(name="fine")})
    (linked / "manifests").symlink_to(outside)
    assert read_extra_manifests(str(linked)) == ({}, [
        f"{KEY}: manifests/ in {linked} is a symbolic link, which this program does not follow: make it a directory there"
    ])


def test_a_fifo_among_the_manifests_stops_the_offline_plan_in_words_not_a_hang(tmp_path):
    directory = _directory(tmp_path, {"fine.yaml": CONFIG_MAP.format(name="fine")})
    os.mkfifo(directory / "pipe.yaml")
    stack = tmp_path / "Pulumi.standalone.yaml"
    stack.write_text((ROOT / "Pulumi.standalone.yaml").read_text().replace("    dir: assets/standalone\n", f"    dir: assets/standalone\n    extraManifests: {directory}\n"))
    assert f"extraManifests: {directory}" in stack.read_text()
    done = subprocess.run(
        [sys.executable, "-m", "tools.plan", "--config-file", str(stack), "--out", str(tmp_path / "p")], cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2 and f"{KEY}: pipe.yaml in {directory} is a FIFO, not a regular file: take it out of the directory" in done.stderr


def _written_objects(installer: Path | None, stack_file: str, tmp_path: Path) -> dict[tuple[str, str, str, str], str]:
    """What `installer create manifests` (None: the fake) writes for this stack (but the machines a UPI install deletes), by object."""
    from fnmatch import fnmatch

    from cluster.installer import UPI_REMOVED_MANIFESTS
    from cluster.manifests import _objects
    from tests.cluster.test_installer import stack_environment

    environment = stack_environment(stack_file, tmp_path)
    directory = tmp_path / "made"
    directory.mkdir()
    (directory / "install-config.yaml").write_text(environment["INSTALL_CONFIG"])
    made = subprocess.run([str(installer or environment["OPENSHIFT_INSTALL"]), "create", "manifests", "--dir", str(directory)], env={**os.environ, **environment}, capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stderr[-3000:]
    found = {}
    for file in sorted([*(directory / "manifests").iterdir(), *(directory / "openshift").iterdir()]):
        name = f"{file.parent.name}/{file.name}"
        if not any(fnmatch(name, pattern) for pattern in UPI_REMOVED_MANIFESTS):
            found.update({key: name for key in _objects(file.read_bytes())})
    return found


# Platform openstack's own, which only a run against a cloud writes (the real installer's source names them).
OPENSTACK_ONLY = {
    ("", "ConfigMap", "openshift-config", "cloud-provider-config"),
    ("", "Secret", "kube-system", "openstack-credentials"),
    ("rbac.authorization.k8s.io", "Role", "kube-system", "openstack-creds-secret-reader"),
}


@pytest.mark.parametrize("stack_file", ["dev", "standalone"])
def test_every_object_the_fake_installer_writes_is_one_the_checks_know(stack_file, tmp_path):
    from cluster.manifests import INSTALLER_OBJECTS

    written = _written_objects(None, stack_file, tmp_path)
    assert {key: name for key, name in written.items() if key not in INSTALLER_OBJECTS} == {}
    assert all(INSTALLER_OBJECTS[key] == name for key, name in written.items())
    assert (OPENSTACK_ONLY <= set(written)) is (stack_file == "dev")


def test_the_objects_the_checks_know_are_those_the_real_installer_writes(tmp_path):
    """Platform none, offline: every object the real installer's `create manifests` writes, and no other but platform openstack's."""
    from cluster.manifests import INSTALLER_OBJECTS

    binary = real_installer.binary()
    if binary is None:
        pytest.skip(toolchain.missing("openshift-install"))
    written = _written_objects(binary, "standalone", tmp_path)
    assert {key: name for key, name in written.items() if INSTALLER_OBJECTS.get(key) != name} == {}
    assert set(INSTALLER_OBJECTS) - set(written) == OPENSTACK_ONLY
