"""The installer command: runs once, keeps its output secret, and its configs are reviewed."""

from __future__ import annotations

import os

import pytest
import yaml

from cluster.addresses import plan_addresses
from cluster.config import load_config
from cluster.installer import render_install_config
from harness import netns
from tools import toolchain
from cluster.installer import RECORD_FILE, ROOT_FILE, bundle, run_environment, unbundle
from components.installer import RUN_ONCE
from tests.certs import OTHER_CA, TEST_CA, THIRD_CA
from tests.conftest import ECDSA_SSH_KEY, PULL_SECRET, ROOT, deploy, preview, run, run_recording, stack_config, with_section
from tools.mock_run import is_secret, unwrap


def installer_command(program_run):
    return program_run.of_type("command:local:Command")[0]


def install_config_of(program_run) -> dict:
    return yaml.safe_load(unwrap(installer_command(program_run).inputs["environment"])["INSTALL_CONFIG"])


def test_installer_command_runs_once(dev_run):
    command = installer_command(dev_run)
    assert is_secret(command.inputs["environment"])
    environment = unwrap(command.inputs["environment"])
    assert environment["OPENSHIFT_INSTALL"] == "openshift-install"
    assert environment["INSTALLER_DIR"] == "assets/dev"
    assert environment["GENERATION"] == "1"
    assert unwrap(command.inputs["logging"]) == "stderr"  # configs never land in logs
    # No later edit of any input runs it again, and the previous stdout is never put in the environment.
    assert set(command.options["ignoreChanges"]) == set(RUN_ONCE) >= {"create", "update", "environment", "triggers"}
    assert unwrap(command.inputs["addPreviousOutputInEnv"]) is False
    assert "PULUMI_COMMAND_STDOUT" not in unwrap(command.inputs["update"])
    assert "stdout" in command.outputs and RECORD_FILE in unbundle(command.outputs["stdout"])


def test_install_config_of_the_integrated_dev_stack(dev_run):
    document = install_config_of(dev_run)
    # UPI on OpenStack: the plural VIP lists, never the deprecated apiVIP/ingressVIP/machinesSubnet.
    assert document["platform"] == {
        "openstack": {
            "cloud": "openstack",
            "apiVIPs": ["10.0.0.5"],
            "ingressVIPs": ["10.0.0.7"],
            "externalNetwork": "external",
            "clusterOSImage": "rhcos",  # the Glance image the masters boot, by name: nothing uploaded
        }
    }
    # The installer validates both pools against the cloud, 0 compute replicas too.
    assert document["controlPlane"]["platform"] == {"openstack": {"type": "master", "serverGroupPolicy": "soft-anti-affinity"}}
    assert document["compute"][0]["platform"] == {"openstack": {"type": "worker", "serverGroupPolicy": "soft-anti-affinity"}}
    environment = unwrap(installer_command(dev_run).inputs["environment"])
    assert (environment["PLATFORM"], environment["OS_CLOUD"], environment["RELEASE_COMPONENTS"]) == ("openstack", "openstack", "")


def test_install_config(standalone_run):
    document = install_config_of(standalone_run)
    assert document["metadata"]["name"] == "ocp4" and document["baseDomain"] == "osd2019.local"
    assert document["platform"] == {"none": {}}
    assert "platform" not in document["controlPlane"] and "platform" not in document["compute"][0]
    assert unwrap(installer_command(standalone_run).inputs["environment"])["PLATFORM"] == "none"
    assert document["networking"]["machineNetwork"] == [{"cidr": "10.0.0.0/16"}]
    assert document["controlPlane"]["replicas"] == 3
    assert document["compute"][0]["replicas"] == 0  # the machines are ours; see cluster/installer.py
    assert document["pullSecret"] == PULL_SECRET
    assert document["sshKey"].startswith("ssh-ed25519 ")


def test_the_machine_pools_describe_the_nodes_this_program_makes():
    network, group = "5b0c6f2e-8a43-4d1e-9f6a-2c7d8e9f0a1b", "0e4d2c1b-7f6a-4b3c-8d9e-1a2b3c4d5e6f"
    config = with_section(
        with_section(stack_config("dev"), "openstack", additionalNetworkIds=[network], additionalSecurityGroupIds=[group]),
        "masters",
        availabilityZones=["nova", "az1", "az2"],
        serverGroupPolicy="anti-affinity",
        rootVolume={"size": 120, "type": "ssd", "availabilityZones": ["storage-1"]},
    )
    config = with_section(config, "workers", count=0, flavor=None, image="rhcos-4.17")
    document = install_config_of(run(config))
    assert document["controlPlane"]["platform"]["openstack"] == {
        "type": "master",
        "serverGroupPolicy": "anti-affinity",
        "zones": ["nova", "az1", "az2"],
        "rootVolume": {"size": 120, "types": ["ssd"], "zones": ["storage-1"]},
        "additionalNetworkIDs": [network],
        "additionalSecurityGroupIDs": [group],
    }
    # No workers and no worker flavor: the pool names the masters' flavor, which the installer needs anyway.
    assert document["compute"][0]["platform"]["openstack"]["type"] == "master"
    assert document["platform"]["openstack"]["clusterOSImage"] == "rhcos"


def test_each_pool_lists_its_own_extra_networks_and_groups():
    """Per pool, as upstream sets them; the installer takes network IDs only, so one named is left to the MachineSet."""
    everyone, storage, group = "5b0c6f2e-8a43-4d1e-9f6a-2c7d8e9f0a1b", "6c1d7e3f-9b54-4e2f-8a7b-3d8e9f0a1b2c", "0e4d2c1b-7f6a-4b3c-8d9e-1a2b3c4d5e6f"
    config = with_section(
        stack_config("dev"),
        "openstack",
        additionalNetworkIds=[everyone],
        additionalNetworks=[{"network": storage, "pools": ["workers"], "portSecurity": False}, {"network": "by-name"}],
    )
    document = install_config_of(run(with_section(config, "masters", additionalSecurityGroupIds=[group])))
    masters, workers = document["controlPlane"]["platform"]["openstack"], document["compute"][0]["platform"]["openstack"]
    assert masters["additionalNetworkIDs"] == [everyone] and workers["additionalNetworkIDs"] == [everyone, storage]
    assert masters["additionalSecurityGroupIDs"] == [group] and "additionalSecurityGroupIDs" not in workers


def test_the_real_installer_reads_the_root_volume_as_written(tmp_path):
    """`rootVolume.types`, as 4.19 names it: the toolchain's openshift-install reads our pool
    strictly (an unknown or mistyped key makes it retry leniently, saying so). Offline: its next
    step is the cloud, here a closed port on the loopback of a namespace that has nothing else."""
    installer = toolchain.binary("openshift-install")
    if installer is None or netns.unavailable():
        pytest.skip(toolchain.missing("openshift-install") if installer is None else str(netns.unavailable()))
    config = load_config(with_section(stack_config("dev"), "workers", rootVolume={"size": 120, "type": "ssd"}))
    (tmp_path / "install-config.yaml").write_text(render_install_config(config, plan_addresses(config), PULL_SECRET))
    (tmp_path / "clouds.yaml").write_text(
        "clouds:\n  openstack:\n    auth: {auth_url: 'http://127.0.0.1:9/v3', username: u, password: p, project_name: p, user_domain_name: Default, project_domain_name: Default}\n"
    )
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "OS_CLIENT_CONFIG_FILE": str(tmp_path / "clouds.yaml")}
    with netns.lab("rootvolume") as lab:
        done = lab.run(lab.namespace("installer"), [str(installer), "create", "manifests", "--dir", str(tmp_path)], env=environment, timeout=300)
    output = done.stdout + done.stderr
    assert "127.0.0.1:9/v3/auth/tokens" in output, output[-2000:]  # it got as far as the cloud
    assert "ignoring unknown keys" not in output, output[-2000:]
    assert install_config_of(run(with_section(stack_config("dev"), "workers", rootVolume={"size": 120, "type": "ssd"})))["compute"][0][
        "platform"
    ]["openstack"]["rootVolume"] == {"size": 120, "types": ["ssd"]}


def test_proxy_and_trust_bundle_reach_the_install_config():
    bundle = TEST_CA
    config = stack_config(
        "dev", proxy={"httpProxy": "http://proxy:3128", "noProxy": [".local", "10.0.0.0/16"]}, additionalTrustBundle=bundle
    )
    document = install_config_of(run(config))
    assert document["proxy"] == {"httpProxy": "http://proxy:3128", "noProxy": ".local,10.0.0.0/16"}
    assert document["additionalTrustBundle"] == bundle
    # Without a proxy too, the bundle reaches the cluster-wide trusted CA.
    assert document["additionalTrustBundlePolicy"] == "Always"


def test_a_bundle_reaches_the_install_config_ending_in_one_newline():
    # The installer refuses anything after the last block, a blank line too; the stack keeps its
    # value as written, so a day-2 run compares it unchanged.
    config = stack_config("dev", additionalTrustBundle=TEST_CA + "\n\n")
    assert install_config_of(run(config))["additionalTrustBundle"] == TEST_CA
    assert load_config(config).additional_trust_bundle == TEST_CA + "\n\n"


def test_the_install_record_keeps_the_stack_as_installed(dev_run):
    environment = unwrap(installer_command(dev_run).inputs["environment"])
    assert '"clusterName":"ocp4"' in environment["INSTALL_FACTS"]
    assert PULL_SECRET not in environment["INSTALL_FACTS"], "the record keeps a digest of the pull secret, not the secret"


def test_pre_generated_assets_are_read_into_the_state_once():
    config = stack_config("standalone", installer={"assetsDir": str(ROOT / "samples/installer/ocp4")})
    program_run = run(config, stack="standalone")
    command = installer_command(program_run)
    assert '"$OPENSHIFT_INSTALL"' not in unwrap(command.inputs["create"])  # reads, never runs the installer
    assert unwrap(command.inputs["environment"])["ASSETS_DIR"].endswith("samples/installer/ocp4")
    assert set(command.options["ignoreChanges"]) == set(RUN_ONCE)
    metadata = (ROOT / "samples/installer/ocp4/metadata.json").read_text()
    assert program_run.outputs["infraId"] in metadata
    assert program_run.secret_outputs >= {"kubeconfig", "kubeadminPassword"}


@pytest.mark.parametrize("stack", ["standalone", "dev"])
def test_a_stack_installed_before_the_random_root_and_full_marker_keeps_its_install_and_secrets(stack, monkeypatch):
    """Its recorded environment lacks STACK_ID and its bundle ocp-cluster-root: the next `pulumi up` runs no
    installer (the environment is in ignore_changes) and derives what it did (VRRP passwords, the helper's
    path and key), so every resource is `same`."""
    import components.installer
    import tools.mock_run

    def older_environment(*args, **kwargs):
        return {key: value for key, value in run_environment(*args, **kwargs).items() if key != "STACK_ID"}

    def older_bundle(files):
        return bundle({name: data for name, data in files.items() if name != ROOT_FILE})

    with monkeypatch.context() as older:
        older.setattr(components.installer, "run_environment", older_environment)
        older.setattr(tools.mock_run, "bundle", older_bundle)
        state = deploy(stack_config(stack), stack)
    recorded = next(r for r in state if r["name"] == "installer-run")
    assert "STACK_ID" not in unwrap(recorded["inputs"]["environment"]) and ROOT_FILE not in unbundle(recorded["outputs"]["stdout"])
    result = preview(state, stack_config(stack), stack)
    assert result.error is None, result.error
    assert {name: change.action for name, change in result.changes.items() if change.action != "same"} == {}
    # What a server made now would get (user_data is ignored once deployed): what the running ones got.
    deployed = {r["name"]: r["inputs"] for r in state}
    assert [r.name for r in result.registered if unwrap(r.inputs) != deployed[r.name] and r.name != "installer-run"] == []
    # A new install of the same stack records both.
    fresh = installer_command(run(stack_config(stack), stack=stack))
    assert unwrap(fresh.inputs["environment"])["STACK_ID"] == f"organization/ocp/{stack}"
    assert len(unbundle(fresh.outputs["stdout"])[ROOT_FILE]) == 32


def test_install_config_options_users_ask_for():
    bundle = OTHER_CA
    config = stack_config(
        "dev",
        clusterNetwork={"cidr": "10.132.0.0/14", "hostPrefix": 24},
        serviceNetwork="172.31.0.0/16",
        fips="true",
        sshKey=ECDSA_SSH_KEY,
        capabilities={"baselineCapabilitySet": "None", "additionalEnabledCapabilities": ["marketplace"]},
        imageDigestSources=[{"source": "quay.io/openshift-release-dev/ocp-release", "mirrors": ["mirror.lab/ocp/release"]}],
    )
    config = with_section(config, "openstack", caBundle=bundle)
    program_run = run(config)
    document = install_config_of(program_run)
    assert document["networking"]["clusterNetwork"] == [{"cidr": "10.132.0.0/14", "hostPrefix": 24}]
    assert document["networking"]["serviceNetwork"] == ["172.31.0.0/16"]
    assert document["fips"] is True
    assert document["capabilities"] == {"baselineCapabilitySet": "None", "additionalEnabledCapabilities": ["marketplace"]}
    assert document["imageDigestSources"] == [{"source": "quay.io/openshift-release-dev/ocp-release", "mirrors": ["mirror.lab/ocp/release"]}]
    # The cloud's CA: trusted cluster-wide, and handed to the installer for its own calls to the cloud.
    assert bundle in document["additionalTrustBundle"] and document["additionalTrustBundlePolicy"] == "Always"
    assert unwrap(installer_command(program_run).inputs["environment"])["CLOUD_CA_BUNDLE"] == bundle


CLOUD_CA = THIRD_CA
PROXY_CA = OTHER_CA


def clouds_yaml(tmp_path, monkeypatch, cacert: str) -> None:
    (tmp_path / "clouds.yaml").write_text(yaml.safe_dump({"clouds": {"openstack": {"cacert": cacert, "auth": {"auth_url": "https://keystone.lab:5000/v3"}}}}))
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(tmp_path / "clouds.yaml"))


def test_the_clouds_yaml_ca_is_never_displaced_by_another_bundle(tmp_path, monkeypatch):
    (tmp_path / "cloud-ca.pem").write_text(CLOUD_CA)
    clouds_yaml(tmp_path, monkeypatch, str(tmp_path / "cloud-ca.pem"))
    # Alone, the installer hands the cacert to the cloud provider itself: nothing to add.
    assert "additionalTrustBundle" not in install_config_of(run(stack_config("dev")))
    # With another bundle the installer would give the cloud provider that one instead: both go in.
    document = install_config_of(run(stack_config("dev", additionalTrustBundle=PROXY_CA)))
    assert document["additionalTrustBundle"] == PROXY_CA + CLOUD_CA
    # caBundle is often the very cacert file: written once.
    document = install_config_of(run(with_section(stack_config("dev"), "openstack", caBundle=CLOUD_CA)))
    assert document["additionalTrustBundle"] == CLOUD_CA
    # Standalone: the cluster never talks to the cloud.
    document = install_config_of(run(stack_config("standalone", additionalTrustBundle=PROXY_CA), "standalone"))
    assert document["additionalTrustBundle"] == PROXY_CA


def test_a_cacert_that_is_not_there_stops_the_program(tmp_path, monkeypatch):
    clouds_yaml(tmp_path, monkeypatch, str(tmp_path / "missing.pem"))
    recorded, error = run_recording(stack_config("dev"))
    assert error is not None and recorded.resources == []
    assert f'ocp:openstack.cloud: the clouds.yaml entry "openstack" ({tmp_path / "clouds.yaml"}) names cacert {tmp_path / "missing.pem"}, which is not a file' in str(error)
