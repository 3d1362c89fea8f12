"""The installer contract: the run script, run for real with the fake installer, and its update path."""

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
from cluster.install_config import digest_mirror_set
from cluster.day2 import stack_settings
from cluster.installer import (
    ASSET_FILES,
    DIR_MARKER,
    KEPT_BUNDLE,
    RELEASE_COMPONENTS,
    ROOT_FILE,
    InstallerAssets,
    check_assets,
    render_install_config,
    run_environment,
    run_script,
    unbundle,
    NOT_FIPS_CAPABLE,
    update_script,
    upi_manifests,
    pointer_environment,
    pointer_script,
    read_script,
)
from tests.conftest import PULL_SECRET, ROOT, stack_config
from tools import real_installer, sample_installer, toolchain
from tools.real_installer import stand_in_oc

# Linux refuses any single environment string of 128 KiB or more (MAX_ARG_STRLEN).
MAX_ENV_STRING = 128 * 1024


@pytest.fixture(params=["dev", "standalone"])
def environment(request, tmp_path: Path) -> dict[str, str]:
    """What pulumi-command gives the run script for the dev stack (integrated) and the standalone
    stack, with the fake installer and the stand-in oc."""
    return stack_environment(request.param, tmp_path)


def stack_environment(stack_file: str, tmp_path: Path, stack: str | None = None, project: str | None = None, **keys) -> dict[str, str]:
    """The run script's environment for a stack of this stack file (its own name unless `stack`
    names another: a copied stack file), its installer.dir tmp_path/assets; `project`: the stack
    fully qualified as organization/<project>/<stack> (else its bare name, as before that); `keys`:
    settings changed (stack_config's overrides)."""
    config = load_config(stack_config(stack_file, **keys))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    installer = bin_dir / "openshift-install"
    installer.write_text(f'#!/bin/sh\ncd "{ROOT}" && exec "{sys.executable}" -m tools.sample_installer "$@"\n')
    oc = stand_in_oc(bin_dir)
    installer.chmod(0o755)
    config = config.model_copy(
        update={"installer": config.installer.model_copy(update={"binary": str(installer), "oc": str(oc), "dir": str(tmp_path / "assets")})}
    )
    plan = plan_addresses(config)
    return {
        "PATH": os.environ["PATH"],
        **run_environment(
            config, stack or stack_file, render_install_config(config, plan, PULL_SECRET), PULL_SECRET, stack_settings(config, plan),
            stack_id=f"organization/{project}/{stack or stack_file}" if project else None,
        ),
    }


def run(script: str, environment: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", script], env=environment, capture_output=True, text=True, timeout=120)


def test_the_run_script_prints_the_configs_record_and_release(environment):
    assert all(len(value.encode()) < MAX_ENV_STRING for value in environment.values())
    result = run(run_script(), environment)
    assert result.returncode == 0, result.stderr
    files = unbundle(result.stdout)
    assets = InstallerAssets.from_files(files)
    config = load_config(stack_config("dev" if environment["PLATFORM"] == "openstack" else "standalone"))
    assert check_assets(config, "10.0.0.5", "10.0.0.7", assets) == []
    assert assets.record is not None and assets.record.generation == 1
    assert assets.record.stack["clusterName"] == "ocp4" and assets.record.stack["workers.count"] == 2
    assert assets.release_image and "@sha256:" in assets.release_image
    if environment["PLATFORM"] == "none":  # the on-node networking's images, pinned
        assert set(assets.release_images) == set(RELEASE_COMPONENTS)
        assert all("@sha256:" in ref for ref in assets.release_images.values())
    else:  # the MCO brings its own; the installer's machines are gone from the bootstrap config
        assert assets.release_images == {}
        paths = {entry["path"] for entry in assets.bootstrap["storage"]["files"]}
        assert not [p for p in paths if "cluster-api_master-machines" in p or "worker-machineset" in p or "control-plane-machine-set" in p]
        assert any(p.endswith("99_cloud-creds-secret.yaml") for p in paths)
    directory = Path(environment["INSTALLER_DIR"])
    assert (directory / DIR_MARKER).exists() and not (directory / ".pull-secret.json").exists()
    assert not (directory / "install-config.yaml").exists()  # consumed, as by the real installer


def test_the_update_path_re_prints_a_realistic_bundle(environment):
    first = run(run_script(), environment)
    assert first.returncode == 0, first.stderr
    assert len(first.stdout.encode()) > 3 * MAX_ENV_STRING  # ~400 KB: would never fit one environment string
    # pulumi-command's update gets no previous stdout (addPreviousOutputInEnv: false).
    assert "PULUMI_COMMAND_STDOUT" not in environment
    again = run(update_script(), environment)
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout


def test_the_update_path_without_its_kept_bundle_fails_clearly(environment):
    assert run(run_script(), environment).returncode == 0
    (Path(environment["INSTALLER_DIR"]) / KEPT_BUNDLE).unlink()
    result = run(update_script(), environment)
    assert result.returncode == 3 and "kept in Pulumi state" in result.stderr and result.stdout == ""


def test_a_directory_this_program_did_not_make_is_never_deleted(environment):
    directory = Path(environment["INSTALLER_DIR"])
    directory.mkdir()
    (directory / "thesis.tex").write_text("years of work")
    result = run(run_script(), environment)
    assert result.returncode == 3 and "ocp:installer.dir" in result.stderr
    assert (directory / "thesis.tex").read_text() == "years of work"


def _planted(environment: dict[str, str], tmp_path: Path) -> Path:
    """The installer directory as someone who can write where it goes would leave it: this stack's marker, and
    auth/kubeconfig a link to a file of theirs, to receive the cluster's admin kubeconfig."""
    directory = Path(environment["INSTALLER_DIR"])
    (directory / "auth").mkdir(parents=True)
    (directory / DIR_MARKER).write_text(f"{environment['STACK_ID']}\n")
    (directory / "auth" / "kubeconfig").symlink_to(tmp_path / "stolen")
    return directory


def test_an_installer_directory_others_may_write_is_refused_before_anything(tmp_path):
    environment = stack_environment("standalone", tmp_path)
    directory = _planted(environment, tmp_path)
    directory.chmod(0o777)  # a shared path
    result = run(run_script(), environment)
    assert (result.returncode, result.stdout) == (3, ""), result.stderr
    assert result.stderr == (
        f"ocp:installer.dir: {directory} is writable by its group and everyone (mode 777): they could replace the cluster's "
        f"secrets written there with links of their own. `chmod 700 {directory}`, or name a directory of your own\n"
    )
    assert not (tmp_path / "stolen").exists() and (directory / "auth" / "kubeconfig").is_symlink()


@pytest.mark.skipif(os.geteuid() != 0, reason="a directory of another user's is made here as root")
def test_an_installer_directory_of_another_users_is_refused_before_anything(tmp_path):
    environment = stack_environment("standalone", tmp_path)
    directory = _planted(environment, tmp_path)
    os.chown(directory, 65534, 65534)
    result = run(run_script(), environment)
    assert (result.returncode, result.stdout) == (3, ""), result.stderr
    assert result.stderr.startswith(f"ocp:installer.dir: {directory} belongs to nobody (uid 65534), not to you (root (uid 0)): ")
    assert not (tmp_path / "stolen").exists()


def test_an_installer_directory_that_is_a_link_is_refused(tmp_path):
    environment = stack_environment("standalone", tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    Path(environment["INSTALLER_DIR"]).symlink_to(elsewhere)
    result = run(run_script(), environment)
    assert (result.returncode, result.stdout) == (3, ""), result.stderr
    assert f"ocp:installer.dir: {environment['INSTALLER_DIR']} is a symbolic link (to {elsewhere}), which this program does not follow" in result.stderr
    assert list(elsewhere.iterdir()) == []


def test_another_stack_given_the_same_directory_is_refused_before_anything_is_emptied(tmp_path):
    """A copied stack file carries ocp:installer.dir: the copy must not empty the first stack's auth/ and metadata.json."""
    first = stack_environment("standalone", tmp_path)
    assert run(run_script(), first).returncode == 0
    directory = Path(first["INSTALLER_DIR"])
    kept = {name: (directory / name).read_bytes() for name in ("auth/kubeconfig", "auth/kubeadmin-password", "metadata.json", KEPT_BUNDLE)}
    copy = stack_environment("standalone", tmp_path, stack="staging")
    assert copy["INSTALLER_DIR"] == first["INSTALLER_DIR"]
    result = run(run_script(), copy)
    assert result.returncode == 3 and result.stdout == ""
    assert result.stderr.startswith(
        f"ocp:installer.dir: {directory} holds the installer files of stack standalone (auth/, metadata.json, its installer state), "
        "and this is stack staging: refusing to empty it. Give stack staging a directory of its own: "
        "`pulumi config set --path ocp:installer.dir assets/staging --stack staging`"
    )
    assert {name: (directory / name).read_bytes() for name in kept} == kept
    # The stack that made it runs again in it (a new generation, a retried install).
    assert run(run_script(), first).returncode == 0


def test_a_directory_marked_before_markers_named_a_stack(tmp_path):
    """Made by a release whose marker was empty: with a cluster's files in it, which stack's is unknown,
    so it is refused until the user says; without, the first stack to run takes it over."""
    environment = stack_environment("standalone", tmp_path)
    directory = Path(environment["INSTALLER_DIR"])
    (directory / "auth").mkdir(parents=True)
    (directory / DIR_MARKER).write_text("")
    (directory / "metadata.json").write_text('{"infraID": "ocp4-x7k2p"}')
    result = run(run_script(), environment)
    assert result.returncode == 3 and (directory / "metadata.json").read_text() == '{"infraID": "ocp4-x7k2p"}'
    assert f"If they are stack standalone's own: `echo standalone > {directory / DIR_MARKER}` and run again" in result.stderr
    (directory / DIR_MARKER).write_text("standalone\n")
    assert run(run_script(), environment).returncode == 0
    # Nothing of a cluster's: taken over, saying so.
    for name in os.listdir(directory):
        subprocess.run(["rm", "-rf", str(directory / name)], check=True)
    (directory / DIR_MARKER).write_text("")
    (directory / "install-config.yaml").write_text("left by a failed run")
    result = run(run_script(), environment)
    assert result.returncode == 0, result.stderr
    assert "made by this program before its marker named a stack, and holds no cluster's files: stack standalone takes it over" in result.stderr
    assert (directory / DIR_MARKER).read_text() == "standalone\n"


def test_two_projects_stacks_of_one_name_never_share_a_directory(tmp_path):
    """The marker holds organization/project/stack: project b's `standalone` must not empty project a's."""
    first = stack_environment("standalone", tmp_path, project="a")
    assert run(run_script(), first).returncode == 0
    directory = Path(first["INSTALLER_DIR"])
    assert (directory / DIR_MARKER).read_text() == "organization/a/standalone\n"
    kept = {name: (directory / name).read_bytes() for name in ("auth/kubeadmin-password", "metadata.json", KEPT_BUNDLE)}
    result = run(run_script(), stack_environment("standalone", tmp_path, project="b"))
    assert result.returncode == 3 and result.stdout == ""
    assert result.stderr.startswith(
        f"ocp:installer.dir: {directory} holds the installer files of stack organization/a/standalone (auth/, metadata.json, "
        "its installer state), and this is stack organization/b/standalone: refusing to empty it"
    )
    assert {name: (directory / name).read_bytes() for name in kept} == kept


def test_a_directory_marked_with_the_bare_stack_name_is_taken_over(tmp_path):
    """Marked before markers named the project: this stack's own; the marker takes the full name, the command's
    inputs aside (a new environment never runs the installer again: tests/components/test_installer.py)."""
    environment = stack_environment("standalone", tmp_path, project="ocp")
    directory = Path(environment["INSTALLER_DIR"])
    (directory / "auth").mkdir(parents=True)
    (directory / DIR_MARKER).write_text("standalone\n")
    (directory / "metadata.json").write_text('{"infraID": "ocp4-x7k2p"}')
    # Refused later on (FIPS on a host without it): the files stay, the marker is the stack's full name already.
    refused = run(run_script(), {**environment, "FIPS": "true", "OCP_FIPS_STATE_FILE": str(tmp_path / "nothing")})
    assert refused.returncode == 3 and "FIPS" in refused.stderr
    assert (directory / "metadata.json").read_text() == '{"infraID": "ocp4-x7k2p"}'
    assert (directory / DIR_MARKER).read_text() == "organization/ocp/standalone\n"
    assert f"{directory} was marked with the bare stack name standalone before markers named the project: stack organization/ocp/standalone takes it over" in refused.stderr
    (directory / DIR_MARKER).write_text("standalone\n")
    result = run(run_script(), environment)
    assert result.returncode == 0, result.stderr
    assert (directory / DIR_MARKER).read_text() == "organization/ocp/standalone\n"
    # Another project's stack of that name is still refused: the bare name is only this stack's.
    (directory / DIR_MARKER).write_text("standalone\n")
    other = run(run_script(), stack_environment("standalone", tmp_path, project="other"))
    assert other.returncode == 0 and (directory / DIR_MARKER).read_text() == "organization/other/standalone\n"


def test_the_installer_directory_and_its_parents_are_the_owners_alone(tmp_path):
    """They hold the cluster's CA keys, kubeconfig and kubeadmin password."""
    environment = stack_environment("standalone", tmp_path)
    environment["INSTALLER_DIR"] = str(tmp_path / "made" / "assets" / "standalone")
    result = run(run_script(), environment)
    assert result.returncode == 0, result.stderr
    for directory in (tmp_path / "made", tmp_path / "made" / "assets", tmp_path / "made" / "assets" / "standalone"):
        assert directory.stat().st_mode & 0o777 == 0o700, directory
    # One made 0755 by an earlier release: 0700 after the next run.
    (tmp_path / "made" / "assets" / "standalone").chmod(0o755)
    assert run(run_script(), environment).returncode == 0
    assert (tmp_path / "made" / "assets" / "standalone").stat().st_mode & 0o777 == 0o700


def test_each_install_gets_its_own_random_root(tmp_path):
    """32 random bytes beside the configs, kept with them (the update path re-prints them): the root of every
    secret derived for the cluster, which the kubeadmin password no longer is."""
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first = stack_environment("standalone", tmp_path / "one")
    second = stack_environment("standalone", tmp_path / "two")
    one, two = (unbundle(run(run_script(), environment).stdout) for environment in (first, second))
    assert len(one[ROOT_FILE]) == len(two[ROOT_FILE]) == 32 and one[ROOT_FILE] != two[ROOT_FILE]
    assert unbundle(run(update_script(), first).stdout)[ROOT_FILE] == one[ROOT_FILE]
    identities = [InstallerAssets.from_files(files).identity for files in (one, two)]
    assert not any(identity.legacy for identity in identities)
    assert identities[0].derive("keepalived-api", 8) != identities[1].derive("keepalived-api", 8)


def test_configs_the_user_generated_get_a_random_root_and_need_a_kubeadmin_password(tmp_path):
    made = stack_environment("standalone", tmp_path)
    assert run(run_script(), made).returncode == 0
    environment = {"PATH": os.environ["PATH"], "ASSETS_DIR": made["INSTALLER_DIR"], "GENERATION": "1", "INSTALL_FACTS": "{}"}
    files = unbundle(run(read_script(), environment).stdout)
    assert len(files[ROOT_FILE]) == 32 and not InstallerAssets.from_files(files).identity.legacy
    (Path(made["INSTALLER_DIR"]) / "auth/kubeadmin-password").write_text("\n")
    result = run(read_script(), environment)
    assert result.returncode == 3 and result.stdout == ""
    assert f"ocp:installer.assetsDir: {made['INSTALLER_DIR']}/auth/kubeadmin-password is empty" in result.stderr


def test_an_infra_id_the_installer_would_not_make_is_refused(tmp_path):
    """It names directories (tools.plan's nodes/<server>) and the cloud's resources: `../..` and the like never pass."""
    made = stack_environment("standalone", tmp_path)
    files = unbundle(run(run_script(), made).stdout)
    assert InstallerAssets.from_files(files).infra_id.startswith("ocp4-")
    for infra_id in ("../../ocp4-x7k2p", "ocp4-x7k2p/..", "ocp4", "ocp4-X7K2P", "a" * 22 + "-x7k2p", "ocp4--x7k2p", "-x7k2p", 7):
        metadata = json.loads(files["metadata.json"]) | {"infraID": infra_id}
        with pytest.raises(ValueError, match="is not an infra ID openshift-install makes"):
            InstallerAssets.from_files({**files, "metadata.json": json.dumps(metadata).encode()})
    for infra_id in ("ocp4-x7k2p", "a" * 21 + "-x7k2p", "my-Cluster-2-bcd45"):
        metadata = json.loads(files["metadata.json"]) | {"infraID": infra_id}
        assert InstallerAssets.from_files({**files, "metadata.json": json.dumps(metadata).encode()}).infra_id == infra_id


def test_the_pull_secret_is_removed_when_oc_fails(tmp_path):
    environment = stack_environment("standalone", tmp_path)
    assert environment["RELEASE_COMPONENTS"]  # platform none: the payload's images are read with oc
    failing = tmp_path / "bin/oc-failing"
    failing.write_text('#!/bin/sh\necho "error: unable to read image: unauthorized" >&2\nexit 1\n')
    failing.chmod(0o755)
    result = run(run_script(), {**environment, "OC": str(failing)})
    assert result.returncode != 0 and "unauthorized" in result.stderr
    directory = Path(environment["INSTALLER_DIR"])
    assert (directory / "metadata.json").is_file()  # the installer ran; oc came after it
    assert not (directory / ".pull-secret.json").exists()
    assert not [path for path in directory.rglob("*") if path.is_file() and PULL_SECRET.encode() in path.read_bytes()]


MIRRORS = [
    {"source": "quay.io/openshift-release-dev/ocp-release", "mirrors": ["mirror.lab:5000/ocp/release"]},
    {"source": "quay.io/openshift-release-dev/ocp-v4.0-art-dev", "mirrors": ["mirror.lab:5000/ocp/release", "mirror2.lab/ocp"]},
]
# Records each release lookup's arguments and the ImageDigestMirrorSet file it names, read while oc runs.
RECORDING_OC = """#!/bin/sh
for a in "$@"; do case "$a" in --idms-file=*) cat "${a#--idms-file=}" >> "$(dirname "$0")/idms"; echo >> "$(dirname "$0")/idms";; esac; done
echo "$*" >> "$(dirname "$0")/calls"
exec "$(dirname "$0")/oc" "$@"
"""


def test_standalone_release_lookups_read_the_release_through_the_stacks_mirrors(tmp_path):
    """Issue 50, finding 9: `oc adm release info --idms-file` (oc 4.14 and later: pkg/cli/admin/release/info.go,
    which openshift/oc's release-4.14 branch has and release-4.13 lacks) reads one ImageDigestMirrorSet
    (pkg/cli/image/strategy/onerror.go readIDMSsFromFile: runtime.Decode of one config.openshift.io/v1 object) and
    tries the source, then its mirrors. The file is the installer's own conversion of imageDigestSources
    (pkg/asset/manifests/imagedigestmirrorset.go ConvertImageDigestMirrorSet: name image-digest-mirror)."""
    environment = stack_environment("standalone", tmp_path, imageDigestSources=MIRRORS)
    recording = tmp_path / "bin" / "oc-recording"
    recording.write_text(RECORDING_OC)
    recording.chmod(0o755)
    result = run(run_script(), {**environment, "OC": str(recording)})
    assert result.returncode == 0, result.stderr
    calls = (tmp_path / "bin" / "calls").read_text().splitlines()
    directory = Path(environment["INSTALLER_DIR"])
    assert len(calls) == len(RELEASE_COMPONENTS) and all(f"--idms-file={directory / '.image-digest-mirror-set.json'} " in call for call in calls), calls
    documents = [json.loads(line) for line in (tmp_path / "bin" / "idms").read_text().splitlines()]
    assert documents == [{
        "apiVersion": "config.openshift.io/v1", "kind": "ImageDigestMirrorSet", "metadata": {"name": "image-digest-mirror"},
        "spec": {"imageDigestMirrors": MIRRORS},
    }] * len(RELEASE_COMPONENTS)
    # What the pullspecs are: the release's own, which the nodes pull through the cluster's mirrors.
    assert all(ref.startswith("quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:") for ref in InstallerAssets.from_files(unbundle(result.stdout)).release_images.values())
    # No mirrors: no flag, as before.
    (tmp_path / "plain").mkdir()
    plain = stack_environment("standalone", tmp_path / "plain")
    (tmp_path / "plain" / "bin" / "oc-recording").write_text(RECORDING_OC)
    (tmp_path / "plain" / "bin" / "oc-recording").chmod(0o755)
    assert "IMAGE_DIGEST_MIRRORS" not in plain
    assert run(run_script(), {**plain, "OC": str(tmp_path / "plain" / "bin" / "oc-recording")}).returncode == 0
    assert "--idms-file" not in (tmp_path / "plain" / "bin" / "calls").read_text()


@pytest.mark.skipif(toolchain.binary("openshift-install") is None, reason="needs the real openshift-install (bash .ci/toolchain)")
def test_the_mirror_file_is_the_image_digest_mirror_set_the_real_installer_makes(tmp_path):
    """The real installer's manifests/image-digest-mirror-set.yaml of the same imageDigestSources, object for object."""
    config = load_config(stack_config("standalone", imageDigestSources=MIRRORS))
    directory = tmp_path / "assets"
    directory.mkdir()
    (directory / "install-config.yaml").write_text(render_install_config(config, plan_addresses(config), PULL_SECRET))
    made = subprocess.run([str(toolchain.binary("openshift-install")), "create", "manifests", "--dir", str(directory)], capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stderr[-3000:]
    installers = yaml.safe_load((directory / "manifests" / "image-digest-mirror-set.yaml").read_text())
    assert json.loads(digest_mirror_set(config)) == {key: value for key, value in installers.items() if key != "status"} | {
        "metadata": {key: value for key, value in installers["metadata"].items() if key != "creationTimestamp"}
    }


def test_assets_of_another_cluster_are_refused():
    config = load_config(stack_config("standalone"))
    other = load_config(stack_config("standalone", clusterName="other", machineNetwork="10.1.0.0/16"))
    samples = ROOT / "samples/installer/ocp4"
    assets = InstallerAssets.from_files({name: (samples / name).read_bytes() for name in ASSET_FILES})
    assert check_assets(config, "10.0.0.5", "10.0.0.7", assets) == []
    problems = check_assets(other, "10.1.0.5", "10.1.0.7", assets)
    assert [p.split(":")[1] for p in problems] == ["clusterName", "machineNetwork"]
    assert "the stack says other but the installer configs were made for ocp4" in problems[0]


def test_provider_facts_cover_the_pinned_provider_versions():
    facts = json.loads((ROOT / "tools/providers.json").read_text())
    pins = dict(
        line.split("==") for line in (ROOT / "requirements.txt").read_text().splitlines() if "==" in line and not line.startswith("#")
    )
    for package, version in facts["versions"].items():
        assert pins.get(package) == version, f"{package} is pinned at {pins.get(package)}; tools/providers.json has facts for {version}: re-derive them"


def _sample_assets() -> InstallerAssets:
    samples = ROOT / "samples/installer/ocp4"  # platform none
    return InstallerAssets.from_files({name: (samples / name).read_bytes() for name in ASSET_FILES})


def test_configs_of_the_other_mode_are_refused():
    problems = check_assets(load_config(stack_config("dev")), "10.0.0.5", "10.0.0.7", _sample_assets())
    assert problems == [
        "ocp:openstack.mode: the stack needs configs for platform: openstack but the installer configs were made for "
        "platform: none: make them with platform: openstack, or leave ocp:installer.assetsDir out so that the program "
        "runs the installer with this stack's install-config"
    ]


def test_integrated_configs_that_still_hold_the_installers_machines_are_refused():
    config = load_config(stack_config("dev"))
    install_config = render_install_config(config, plan_addresses(config), PULL_SECRET)
    # `create ignition-configs` straight away: the Machine manifests go into the bootstrap config.
    assets = InstallerAssets.from_files(sample_installer.generate(install_config))
    [problem] = check_assets(config, "10.0.0.5", "10.0.0.7", assets)
    assert problem.startswith(
        "ocp:installer.assetsDir: the configs still hold the installer's machines "
        "(openshift/99_openshift-cluster-api_master-machines-0.yaml, openshift/99_openshift-cluster-api_master-machines-1.yaml"
    )
    assert "the Machine API would make servers beside this program's" in problem


def _integrated_assets(release: str | None, monkeypatch) -> InstallerAssets:
    if release:
        monkeypatch.setenv("SAMPLE_INSTALLER_RELEASE", release)
    config = load_config(stack_config("dev"))
    text = render_install_config(config, plan_addresses(config), PULL_SECRET)
    files = sample_installer.ignition_configs(text, upi_manifests(sample_installer.manifests(text)))
    return InstallerAssets.from_files(files)


@pytest.mark.parametrize("release", [None, "4.14.0", "4.17.3", "4.18.9", "4.20.1"])
def test_day_2_nodes_get_the_pointer_the_cluster_serves_whatever_release_it_was_installed_at(release, monkeypatch):
    # The configs name the install release, not the one the cluster runs: installed at 4.17 and upgraded to
    # 4.19, the MCO rotates its config server's CA all the same, and the managed secret is there from 4.14.
    assets = _integrated_assets(release, monkeypatch)
    assert assets.pointer_from_cluster(bootstrap_enabled=False) is True
    # While the bootstrap exists the cluster is being installed: the installer's pointer, always.
    assert assets.pointer_from_cluster(bootstrap_enabled=True) is False


@pytest.mark.parametrize("role", ["master", "worker"])
def test_the_pointer_script_passes_shellcheck(tmp_path, role):
    import shutil

    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed")
    script = tmp_path / "pointer.sh"
    script.write_text(pointer_script(role))
    result = subprocess.run(["shellcheck", "-s", "sh", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_the_installers_pointer_needs_no_cluster(monkeypatch):
    assets = _integrated_assets(None, monkeypatch)
    config = load_config(stack_config("dev"))
    environment = pointer_environment(config, assets, "w", from_cluster=False)
    assert set(environment) == {"POINTER_SOURCE", "INSTALL_POINTER"}  # no kubeconfig kept for it
    result = subprocess.run(["/bin/sh", "-c", pointer_script()], env={"PATH": os.environ["PATH"], **environment}, capture_output=True, text=True)
    assert result.returncode == 0 and json.loads(result.stdout) == assets.worker


def test_the_clusters_pointer_is_read_from_the_api_the_admin_kubeconfig_names(monkeypatch):
    assets = _integrated_assets(None, monkeypatch)
    config = load_config(stack_config("dev"))
    server = yaml.safe_load(assets.kubeconfig)["clusters"][0]["cluster"]["server"]
    assert server.startswith("https://api.")
    for role in ("master", "worker"):
        environment = pointer_environment(config, assets, "w", from_cluster=True, role=role)
        assert environment["API_URL"] == server and environment["KUBECONFIG_DATA"] == assets.kubeconfig


def _fips_run(tmp_path, installer: str, host_state: str, **extra) -> subprocess.CompletedProcess:
    state = tmp_path / "fips_enabled"
    state.write_text(host_state + "\n")
    environment = {
        "PATH": os.environ["PATH"], "INSTALLER_DIR": str(tmp_path / "assets"), "OPENSHIFT_INSTALL": installer,
        "FIPS": "true", "OCP_FIPS_STATE_FILE": str(state), "INSTALL_CONFIG": "", "STACK": "dev", **extra,
    }
    return subprocess.run(["bash", "-c", run_script()], env=environment, capture_output=True, text=True, timeout=60)


def test_fips_is_refused_before_the_installer_runs_unless_host_and_binary_can(tmp_path):
    binary = real_installer.binary()
    if binary is None:
        pytest.skip(toolchain.missing("openshift-install"))
    # The toolchain's is a wrapper; the ELF it runs is what a user's download is.
    elf = next(line for line in Path(binary).read_text().splitlines() if "exec -a" in line).split()[-2]
    off = _fips_run(tmp_path, elf, "0")
    assert off.returncode == 3
    assert off.stderr.startswith(f"ocp:fips: true, but {elf} is not built FIPS-capable")
    assert "and this host is not in FIPS mode" in off.stderr and "set ocp:fips: false" in off.stderr
    assert not (tmp_path / "assets").exists(), "nothing ran"
    on = _fips_run(tmp_path, elf, "1")
    assert on.returncode == 3 and "this host" not in on.stderr and "is not built FIPS-capable" in on.stderr
    # As the installer, OPENSHIFT_INSTALL_SKIP_HOSTCRYPT_VALIDATION skips it (then the installer runs).
    skipped = _fips_run(tmp_path, "/bin/false", "0", OPENSHIFT_INSTALL_SKIP_HOSTCRYPT_VALIDATION="1")
    assert "ocp:fips" not in skipped.stderr


def test_the_fips_check_agrees_with_the_real_installer(tmp_path):
    """The installer itself refuses a FIPS install-config with this build on this host: the run
    script's check only says it first, naming ocp:fips."""
    binary = real_installer.binary()
    if binary is None:
        pytest.skip(toolchain.missing("openshift-install"))
    ecdsa = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBEmKSENjQEezOmxkZMy7opKgwFB9nkt5YRrYMjNuG5N87uRgg6CLrbo5wAdT/y6v0mKV0U2w7IPIs+ZP+nPhVmI= lab@osd2019"
    config = load_config({**stack_config("standalone"), "ocp:fips": "true", "ocp:sshKey": ecdsa})
    directory = tmp_path / "assets"
    directory.mkdir()
    (directory / "install-config.yaml").write_text(render_install_config(config, plan_addresses(config), PULL_SECRET))
    done = subprocess.run([binary, "create", "manifests", "--dir", str(directory)], capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert NOT_FIPS_CAPABLE in done.stdout + done.stderr, (done.stdout + done.stderr)[-2000:]
