"""The real `openshift-install` (the toolchain's) against the local cloud, with the dev stack's
integrated install-config (`platform: openstack`), as the program's run script calls it.

What `create manifests` of 4.19.0-ec.5 checks through the cloud's APIs, seen here: the external
network must exist (fatal otherwise); flavors are read (a 40 GB disk is warned about, 100 GB
recommended); a missing flavor or image only disables the pre-flight validation with a warning;
quotas are not checked at this step."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cluster.addresses import plan_addresses
from cluster.config import load_config
from cluster.installer import render_install_config
from tests.conftest import PULL_SECRET, stack_config
from tests.localcloud.conftest import ROOT, sdk
from tools import real_installer
from tools.sample_installer.release import FAKE_MARKER


@pytest.fixture(scope="module")
def installer():
    binary = real_installer.binary()
    if binary is None:
        pytest.skip("openshift-install is not built: run `bash .ci/toolchain`")
    return binary


def create_manifests(installer, cloud_env, tmp_path, edit=lambda text: text) -> subprocess.CompletedProcess:
    config = load_config(stack_config("dev"))
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "install-config.yaml").write_text(edit(render_install_config(config, plan_addresses(config), PULL_SECRET)))
    environment = {**cloud_env, "OS_CLOUD": config.openstack.cloud}
    return subprocess.run([installer, "create", "manifests", "--dir", str(tmp_path)], env=environment, capture_output=True, text=True, timeout=300)


def test_create_manifests_of_the_dev_stack_validates_against_the_local_cloud(installer, cloud, cloud_env, tmp_path):
    made = create_manifests(installer, cloud_env, tmp_path)
    assert made.returncode == 0, made.stderr
    assert f'Credentials loaded from file "{cloud.clouds_yaml}"' in made.stderr
    # The master flavor's disk, as Nova reports it (samples/cloud/dev.yaml: 40 GB).
    assert "It is recommended to have 100 GB Disk, had 40 GB" in made.stderr
    assert (tmp_path / "manifests" / "cloud-provider-config.yaml").exists()


def test_create_manifests_refuses_an_external_network_the_cloud_lacks(installer, cloud_env, tmp_path):
    made = create_manifests(installer, cloud_env, tmp_path, lambda text: text.replace("externalNetwork: external", "externalNetwork: nowhere"))
    assert made.returncode != 0
    assert "failed to fetch external network nowhere: Unable to find network with name nowhere" in made.stderr


def test_the_offline_plan_of_dev_uses_the_real_installer_while_the_local_cloud_is_up(installer, cloud, tmp_path):
    out = tmp_path / "plan"
    environment = {key: value for key, value in os.environ.items() if key != real_installer.LOCALCLOUD_SWITCH}
    planned = subprocess.run(
        [sys.executable, "-m", "tools.plan", "--stack", "dev", "--out", str(out)], cwd=ROOT, env=environment, capture_output=True, text=True
    )
    assert planned.returncode == 0, planned.stderr[-3000:]
    assert f"installer configs: made by the real {real_installer.version()} against the local cloud (harness.localcloud)" in planned.stdout
    bootstrap = next(path for path in (out / "nodes").iterdir() if path.name.endswith("-bootstrap"))
    assert FAKE_MARKER not in (bootstrap / "ignition.json").read_text()


def test_the_cloud_provider_settings_reach_the_bootstrap_merged_into_the_installers(installer, cloud, cloud_env, tmp_path):
    """ocp:installer.cloudProviderConfig through the program's run script and the real installer: the bootstrap's
    copy of manifests/cloud-provider-config.yaml holds the installer's [Global] and [LoadBalancer] (the local cloud's
    external network) with the user's keys in their sections."""
    from cluster.day2 import stack_settings
    from cluster.installer import InstallerAssets, run_environment, run_script, unbundle
    from tests.cluster.test_cloud_provider_config import bootstrap_cloud_provider_config
    from tests.conftest import with_section

    settings = "[BlockStorage]\nignore-volume-az = yes\n[LoadBalancer]\nlb-provider = amphora\nmax-shared-lb = 2\n"
    config = load_config(with_section(stack_config("dev"), "installer", cloudProviderConfig=settings))
    plan = plan_addresses(config)
    environment = {
        **cloud_env, **run_environment(config, "dev", render_install_config(config, plan, PULL_SECRET), PULL_SECRET, stack_settings(config, plan)),
        "PATH": os.environ["PATH"], "OPENSHIFT_INSTALL": str(installer), "INSTALLER_DIR": str(tmp_path / "assets"),
    }
    result = subprocess.run(["bash", "-c", run_script()], env=environment, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    merged = bootstrap_cloud_provider_config(InstallerAssets.from_files(unbundle(result.stdout)))
    external = sdk(cloud, "result = tenant.network.find_network('external', ignore_missing=False).id")  # type: ignore[attr-defined]
    assert merged == (
        "[Global]\nsecret-name = openstack-credentials\nsecret-namespace = kube-system\n"
        f"region = RegionOne\n\n[LoadBalancer]\nfloating-network-id = {external}\nlb-provider = amphora\nmax-shared-lb = 2\n"
        "\n[BlockStorage]\nignore-volume-az = yes\n"
    ), merged
