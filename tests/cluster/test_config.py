"""Bad input stops the program before any resource exists, with a message naming the key."""

from __future__ import annotations

import json

import pulumi
import pytest

from cluster.config import KNOWN_KEYS, load_config
from tests.conftest import ROOT, run_recording, stack_config, with_section

DEV = stack_config("dev")


def bad(key: str, value):
    return {**DEV, f"ocp:{key}": json.dumps(value) if isinstance(value, (dict, list)) else value}


def section(key: str, **changes):
    return with_section(DEV, key, **changes)


def without(key: str):
    return {name: value for name, value in DEV.items() if name != f"ocp:{key}"}


# (config, text the message must contain)
BAD_CONFIGS = [
    (bad("platform", "aws"), "ocp:platform"),
    (bad("clusterName", "OCP_4"), "ocp:clusterName"),
    (bad("clusterName", "a" * 41), "ocp:clusterName"),
    (bad("baseDomain", "Not A Domain"), "ocp:baseDomain"),
    (bad("machineNetwork", "10.0.0.1/16"), "write 10.0.0.0/16"),
    (bad("machineNetwork", "10.0.0.0/26"), "ocp:machineNetwork"),
    (bad("apiVip", "10.1.0.5"), "ocp:apiVip"),
    (bad("apiVip", "10.0.0.20"), "ocp:apiVip: 10.0.0.20 is ocp4-master-0"),
    (bad("ingressVip", "10.0.0.5"), "ocp:ingressVip"),
    (bad("apiVip", "not-an-ip"), "ocp:apiVip"),
    (section("masters", count=2), "ocp:masters.count"),
    (section("masters", flavor=None), "ocp:masters.flavor is required"),
    (section("masters", vcpus=8), "ocp:masters.vcpus is a libvirt setting"),
    (section("masters", rootVolume={"size": 10}), "ocp:masters.rootVolume.size"),
    (section("masters", serverGroupPolicy="spread"), "ocp:masters.serverGroupPolicy"),
    (section("masters", flavour="big"), "ocp:masters.flavour: unknown key"),
    (section("workers", count=-1), "ocp:workers.count"),
    (section("workers", count=20, maxCount=10), "raise workers.maxCount"),
    (section("workers", maxCount=501), "ocp:workers.maxCount: Input should be less than or equal to 500"),
    (section("openstack", apiFloatingIp="sometimes"), "ocp:openstack.apiFloatingIp"),
    (section("openstack", externalNetwork=None), "ocp:openstack.externalNetwork is required"),
    (section("openstack", sshAllowedCidr="everywhere"), "ocp:openstack.sshAllowedCidr"),
    (without("openstack"), "ocp:openstack is required"),
    (bad("libvirt", {"uri": "qemu:///system"}), "ocp:libvirt is set but ocp:platform is openstack"),
    (bad("installer", {}), "installer.binary"),
    (bad("installer", {"assetsDir": "/nonexistent/assets"}), "ocp:installer.assetsDir: /nonexistent/assets lacks"),
    (section("bootstrap", helper={"sshPrivateKeyFile": "/nonexistent/id_ed25519"}), "ocp:bootstrap.helper.sshPrivateKeyFile"),
    (bad("nameservers", []), "ocp:nameservers"),
    (bad("nameservers", ["1.1.1.1", "8.8.8.8", "9.9.9.9", "8.8.4.4"]), "ocp:nameservers"),
    (without("nameservers"), "ocp:nameservers: is required"),
    (bad("sshKey", "my key"), "ocp:sshKey"),
    (bad("pullSecret", "not json"), "ocp:pullSecret"),
    (bad("pullSecret", '{"registries": {}}'), "ocp:pullSecret"),
    (bad("proxy", {"httpProxy": "proxy:3128"}), "ocp:proxy.httpProxy"),
    (bad("additionalTrustBundle", "not a certificate"), "ocp:additionalTrustBundle"),
    (bad("tags", "not-a-list"), "ocp:tags"),
    (bad("clusterNmae", "typo"), "ocp:clusterNmae: not a setting"),
    (bad("masters", "{not json"), "ocp:masters: expected an object"),
]


def test_table_has_at_least_twenty_cases():
    assert len(BAD_CONFIGS) >= 20


@pytest.mark.parametrize("config,expected", BAD_CONFIGS, ids=[text[:40] for _, text in BAD_CONFIGS])
def test_bad_config_stops_before_any_resource(config, expected):
    recorded, error = run_recording(config)
    assert isinstance(error, pulumi.RunError), error
    message = str(error)
    assert expected in message
    assert message.startswith("invalid stack configuration")
    assert "Traceback" not in message
    assert recorded.resources == []


def test_the_dev_stack_is_valid():
    recorded, error = run_recording(DEV)
    assert error is None
    assert recorded.resources


def test_every_problem_is_reported_at_once():
    config = {**bad("clusterName", "Bad!"), "ocp:baseDomain": "Also Bad"}
    _, error = run_recording(config)
    assert "(2 problems)" in str(error)
    assert "ocp:clusterName" in str(error) and "ocp:baseDomain" in str(error)


def test_pull_secret_never_appears_in_error_messages():
    _, error = run_recording(bad("pullSecret", "hunter2-not-json"))
    assert "hunter2" not in str(error)


def test_pulumi_yaml_declares_every_key_with_a_description():
    import yaml

    declared = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    assert set(declared) == set(KNOWN_KEYS)
    assert all(entry.get("description") for entry in declared.values())
    assert declared["pullSecret"]["secret"] is True


def test_config_is_frozen():
    config = load_config(DEV)
    with pytest.raises(Exception):
        config.cluster_name = "other"  # type: ignore[misc]
