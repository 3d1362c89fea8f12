"""The installer runs only when the install-config changes, and its output stays secret."""

from __future__ import annotations

import yaml

from tests.conftest import PULL_SECRET, ROOT, run, stack_config, with_section
from tools.mock_run import is_secret, unwrap


def installer_command(program_run):
    return program_run.of_type("command:local:Command")[0]


def test_installer_command_inputs(dev_run):
    command = installer_command(dev_run)
    inputs = command.inputs
    assert is_secret(inputs["environment"])
    environment = unwrap(inputs["environment"])
    assert environment["OPENSHIFT_INSTALL"] == "openshift-install"
    assert environment["INSTALLER_DIR"] == "assets/dev"
    assert "PULUMI_COMMAND_STDOUT" in inputs["update"]  # re-emits, never re-runs
    assert unwrap(inputs["logging"]) == "stderr"  # configs never land in logs
    assert len(unwrap(inputs["triggers"])) == 1


def test_install_config(dev_run):
    document = yaml.safe_load(unwrap(installer_command(dev_run).inputs["environment"])["INSTALL_CONFIG"])
    assert document["metadata"]["name"] == "ocp4" and document["baseDomain"] == "osd2019.local"
    assert document["platform"] == {"none": {}}
    assert document["networking"]["machineNetwork"] == [{"cidr": "10.0.0.0/16"}]
    assert document["controlPlane"]["replicas"] == 3
    assert document["compute"][0]["replicas"] == 0  # the machines are ours; see cluster/install_config.py
    assert document["pullSecret"] == PULL_SECRET
    assert document["sshKey"].startswith("ssh-ed25519 ")


def test_proxy_and_trust_bundle_reach_the_install_config():
    bundle = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    config = stack_config(
        "dev", proxy={"httpProxy": "http://proxy:3128", "noProxy": [".local", "10.0.0.0/16"]}, additionalTrustBundle=bundle
    )
    document = yaml.safe_load(unwrap(installer_command(run(config)).inputs["environment"])["INSTALL_CONFIG"])
    assert document["proxy"] == {"httpProxy": "http://proxy:3128", "noProxy": ".local,10.0.0.0/16"}
    assert document["additionalTrustBundle"] == bundle


def test_trigger_ignores_what_does_not_change_the_pki():
    base = unwrap(installer_command(run(stack_config("dev"))).inputs["triggers"])
    scaled = unwrap(installer_command(run(with_section(stack_config("dev"), "workers", count=7))).inputs["triggers"])
    renamed = unwrap(installer_command(run(stack_config("dev", clusterName="other"))).inputs["triggers"])
    assert base == scaled and base != renamed


def test_pre_generated_assets_skip_the_command():
    config = stack_config("dev", installer={"assetsDir": str(ROOT / "samples/installer/ocp4")})
    program_run = run(config)
    assert not program_run.of_type("command:local:Command")
    metadata = (ROOT / "samples/installer/ocp4/metadata.json").read_text()
    assert program_run.outputs["infraId"] in metadata
    assert program_run.secret_outputs >= {"kubeconfig", "kubeadminPassword"}
