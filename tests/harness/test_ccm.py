"""harness/ccm.py: the real OpenStack cloud controller manager given the config as OpenShift gives it.

What the CCM operator makes of the installer's config (CloudConfigTransformer, read in
openshift/cluster-cloud-controller-manager-operator release-4.20 pkg/cloud/openstack/openstack.go), and
the real controller (openstack-cloud-controller-manager v1.33.0 from the toolchain) reading it: every key
ocp:installer.cloudProviderConfig takes, with a value it takes, gets the controller past its config to its
cloud (here a closed port on loopback: no cloud is needed to see that); a bad value a user could write
stops the controller at its config, and the program refuses it first (cluster/cloud_provider_config.py)."""

from __future__ import annotations

import socket

import pytest
import yaml

from cluster.cloud_provider_config import BOOL, DURATION, INT, LIST, SECTIONS, UINT, problems
from harness import ccm

GLOBAL = "[Global]\nsecret-name = openstack-credentials\nsecret-namespace = kube-system\nregion = RegionOne\n\n"
INSTALLERS = GLOBAL + "[LoadBalancer]\nfloating-network-id = 6a4e1c2e-0000-4000-8000-000000000001\n\n"
SAMPLE_VALUES = {BOOL: "true", INT: "2", UINT: "3", DURATION: "5s", LIST: "private"}


def test_the_operator_drops_the_in_tree_keys_and_block_storage_and_adds_the_clouds_yaml_and_its_defaults(tmp_path):
    source = INSTALLERS + "[BlockStorage]\nignore-volume-az = yes\n"
    assert ccm.operator_config(source, tmp_path / "clouds.yaml") == (
        f"[Global]\nregion = RegionOne\nuse-clouds = true\nclouds-file = {tmp_path / 'clouds.yaml'}\ncloud = openstack\n\n"
        "[LoadBalancer]\nfloating-network-id = 6a4e1c2e-0000-4000-8000-000000000001\nmax-shared-lb = 1\nmanage-security-groups = true\n"
    )


def test_the_users_load_balancer_settings_stand_and_use_octavia_goes(tmp_path):
    source = INSTALLERS.replace("\n\n[LoadBalancer]\n", "\n\n[LoadBalancer]\nuse-octavia = true\nmax-shared-lb = 2\nmanage-security-groups = false\n")
    lines = ccm.operator_config(source, tmp_path / "clouds.yaml").split("[LoadBalancer]\n")[1].splitlines()
    assert lines == ["max-shared-lb = 2", "manage-security-groups = false", "floating-network-id = 6a4e1c2e-0000-4000-8000-000000000001"]


@pytest.mark.parametrize("edit", ["secret-name = mine", "secret-namespace = openshift-config", "kubeconfig-path = /etc/kubernetes/kubeconfig"])
def test_the_operator_refuses_in_tree_keys_of_other_values(tmp_path, edit):
    key = edit.split(" = ")[0]
    source = INSTALLERS.replace("region = RegionOne", f"region = RegionOne\n{edit}") if key == "kubeconfig-path" else INSTALLERS.replace(
        f"{key} = {'openstack-credentials' if key == 'secret-name' else 'kube-system'}", edit
    )
    with pytest.raises(ccm.CCMError, match=f"'\\[Global\\] {key}' is set to a non-default value"):
        ccm.operator_config(source, tmp_path / "clouds.yaml")


# --------------------------------------------------------------------------- the real controller


@pytest.fixture
def built():
    reason = ccm.missing()
    if reason:
        pytest.skip(reason)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _files(config: str) -> ccm.InstallerFiles:
    """The installer's files for a cloud whose Keystone is a closed port on loopback."""
    cloud = {"auth": {"auth_url": f"http://127.0.0.1:{_closed_port()}/v3", "username": "u", "password": "p", "project_name": "lab",
                      "user_domain_name": "Default", "project_domain_name": "Default"}, "region_name": "RegionOne"}
    return ccm.InstallerFiles(config=config, clouds_yaml=yaml.safe_dump({"clouds": {"openstack": cloud}}))


def _kubeconfig(directory) -> str:
    path = directory / "kubeconfig"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{_closed_port()}"}}],
                                    "users": [{"name": "u", "user": {"token": "t"}}], "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                                    "current-context": "c"}))
    return path


def _controller_ends(config: str, directory) -> str:
    """What the controller logged before it ended (it must, without a cloud)."""
    with pytest.raises(ccm.CCMError) as ended:
        with ccm.running(_kubeconfig(directory), _files(config), "ocp4-x7k2p", directory, settle=60):
            pass
    return str(ended.value)


def test_every_key_the_program_takes_gets_the_real_controller_past_its_config(built, tmp_path):
    lines = []
    for section, keys in SECTIONS.items():
        lines.append(f'[{section} "internal"]' if section == "LoadBalancerClass" else f"[{section}]")
        lines += [f"{key} = {SAMPLE_VALUES.get(kind, 'x')}" for key, kind in keys.items()]
    user = "\n".join(lines) + "\n"
    assert problems(user, integrated=True) == []
    log = _controller_ends(GLOBAL + user, tmp_path)
    # Its config read, it went on to authenticate (the gophercloud client), and found no Keystone there.
    assert "Cloud provider could not be initialized" in log and "connection refused" in log, log


BAD = {
    "[LoadBalancer]\ncreate-monitor = sure": "create-monitor",
    "[LoadBalancer]\nmonitor-delay = 5 seconds": "monitor-delay",
    "[LoadBalancer]\nmonitor-max-retries = -1": "monitor-max-retries",
    "[LoadBalancer]\nmax-shared-lb = two": "max-shared-lb",
}


@pytest.mark.parametrize("user", BAD, ids=BAD.values())
def test_a_bad_value_stops_the_real_controller_at_its_config_and_the_program_first(built, tmp_path, user):
    assert any(BAD[user] in problem for problem in problems(user + "\n", integrated=True)), problems(user + "\n", integrated=True)
    log = _controller_ends(INSTALLERS + user + "\n", tmp_path)
    # gcfg's error, naming the key: before any attempt to reach the cloud.
    assert f'at section "LoadBalancer", variable "{BAD[user]}"' in log and "connection refused" not in log, log
