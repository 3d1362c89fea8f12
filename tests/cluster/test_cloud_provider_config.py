"""ocp:installer.cloudProviderConfig: the cloud provider's settings checked line by line before anything
runs (one message per problem, naming the key and the line), then merged by the run script into the
installer's manifests/cloud-provider-config.yaml, where the bootstrap's config carries them (here with the
fake installer; tests/localcloud/test_installer.py with the real one, tests/toolchain/test_gcfg.py holds
the checks to the real gcfg parser)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cluster.addresses import plan_addresses
from cluster.cloud_provider_config import KEY, environment_value, parse, problems
from cluster.config import ConfigError, load_config
from cluster.dataurl import decode_data_url
from cluster.day2 import stack_settings
from cluster.installer import InstallerAssets, render_install_config, run_environment, run_script, unbundle
from tests.conftest import PULL_SECRET, ROOT, stack_config, with_section
from tools.real_installer import stand_in_oc

# Cinder's zones are not Nova's, and the cloud's Octavia has the OVN provider.
SETTINGS = """# Cinder's zones are not Nova's here
[BlockStorage]
ignore-volume-az = yes

[LoadBalancer]
lb-provider = ovn
lb-method = SOURCE_IP_PORT ; OVN's only method
floating-network-id = "6a4e1c2e-0000-4000-8000-000000000001"
"""
MERGED_INSTALLER_KEYS = ("secret-name = openstack-credentials", "secret-namespace = kube-system")


def test_good_settings_are_read_as_gcfg_reads_them():
    settings, found = parse(SETTINGS)
    assert found == []
    assert settings == [
        ("[BlockStorage]", "ignore-volume-az", "ignore-volume-az = yes"),
        ("[LoadBalancer]", "lb-provider", "lb-provider = ovn"),
        ("[LoadBalancer]", "lb-method", "lb-method = SOURCE_IP_PORT"),
        ("[LoadBalancer]", "floating-network-id", 'floating-network-id = "6a4e1c2e-0000-4000-8000-000000000001"'),
    ]
    assert environment_value(SETTINGS).splitlines()[0] == "[BlockStorage]\tignore-volume-az = yes"


BAD = """[Global]
auth-url = https://keystone.example:5000/v3
[Loadbalancer]
lb-provider = ovn
[LoadBalancer]
lb-provdier = ovn
create-monitor = maybe
max-shared-lb = two
monitor-delay = 5
monitor-max-retries = -1
lb-method = a"b
lb-provider = ovn
lb-provider = amphora
[LoadBalancerClass]
[BlockStorage]
ignore-volume-az = "yes\\"
what is this
"""


def test_every_bad_line_is_named_once():
    assert problems(BAD, integrated=True) == [
        f"{KEY}: line 1: [Global] is the installer's (the cloud's credentials, from secret kube-system/openstack-credentials), and OpenShift rewrites it: leave it out",
        f"{KEY}: line 3: [Loadbalancer] is no section the cloud provider or the Cinder CSI driver reads (they would drop it without a word): use one of "
        "[LoadBalancer], [LoadBalancerClass], [Networking], [Route], [Metadata], [BlockStorage], spelt so",
        f"{KEY}: line 6: lb-provdier is no key of [LoadBalancer] (the cloud provider would drop it without a word): check its spelling against cloud-provider-openstack's documentation",
        f"{KEY}: line 7: [LoadBalancer] create-monitor is 'maybe', not a boolean: write true or false (yes/no, on/off, 1/0)",
        f"{KEY}: line 8: [LoadBalancer] max-shared-lb is 'two', not a whole number",
        f"{KEY}: line 9: [LoadBalancer] monitor-delay is '5', not a duration: write it as Go does, e.g. 5s, 1m30s",
        f"{KEY}: line 10: [LoadBalancer] monitor-max-retries is '-1': it cannot be negative",
        f"{KEY}: line 11: 'lb-method = a\"b' is neither `key = value`, a [Section] nor a comment (a value is written plain, or whole in double quotes without backslashes; `;` and `#` start a comment)",
        f"{KEY}: line 13: lb-provider is set twice in [LoadBalancer]: keep one",
        f"{KEY}: line 14: '[LoadBalancerClass]': write [LoadBalancerClass \"<class name>\"], and no other section with a name in quotes",
        f"{KEY}: line 16: [BlockStorage] ignore-volume-az holds a backslash, which this program does not pass on: write the value without it",
        f"{KEY}: line 17: 'what is this' is neither `key = value`, a [Section] nor a comment (a value is written plain, or whole in double quotes without backslashes; `;` and `#` start a comment)",
    ]


def test_only_an_integrated_stack_has_the_cloud_provider():
    assert problems("[BlockStorage]\nignore-volume-az = yes", integrated=False) == [
        f"{KEY}: only an integrated stack (ocp:platform openstack, ocp:mode integrated) has OpenStack's cloud provider: remove the key"
    ]
    assert problems("# nothing\n", integrated=True)[0].startswith(f"{KEY}: holds no setting")


def test_the_stack_stops_before_any_resource_with_every_problem():
    with pytest.raises(ConfigError) as refused:
        load_config(with_section(stack_config("standalone"), "installer", cloudProviderConfig="[LoadBalancer]\nlb-provdier = ovn\n"))
    assert f"{KEY}: only an integrated stack" in str(refused.value)
    with pytest.raises(ConfigError) as refused:
        load_config(with_section(stack_config("dev"), "installer", cloudProviderConfig=BAD))
    text = str(refused.value)
    assert text.count(f"{KEY}: line ") == 12, text


def _environment(tmp_path: Path, settings: str) -> dict[str, str]:
    """The run script's environment for the dev stack with these settings, the fake installer and the stand-in oc."""
    config = load_config(with_section(stack_config("dev"), "installer", cloudProviderConfig=settings))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    installer = bin_dir / "openshift-install"
    installer.write_text(f'#!/bin/sh\ncd "{ROOT}" && exec "{sys.executable}" -m tools.sample_installer "$@"\n')
    installer.chmod(0o755)
    installer_section = config.installer.model_copy(update={"binary": str(installer), "oc": str(stand_in_oc(bin_dir)), "dir": str(tmp_path / "assets")})
    config = config.model_copy(update={"installer": installer_section})
    plan = plan_addresses(config)
    environment = run_environment(config, "dev", render_install_config(config, plan, PULL_SECRET), PULL_SECRET, stack_settings(config, plan))
    return {"PATH": os.environ["PATH"], **environment}


def bootstrap_cloud_provider_config(assets: InstallerAssets) -> str:
    """The `config` of the ConfigMap the bootstrap applies from /opt/openshift/manifests/cloud-provider-config.yaml."""
    (entry,) = [e for e in assets.bootstrap["storage"]["files"] if e["path"] == "/opt/openshift/manifests/cloud-provider-config.yaml"]
    config_map = yaml.safe_load(decode_data_url(entry["contents"]["source"]))
    assert (config_map["kind"], config_map["metadata"]["namespace"], config_map["metadata"]["name"]) == ("ConfigMap", "openshift-config", "cloud-provider-config")
    return config_map["data"]["config"]


def test_the_bootstrap_applies_the_installers_config_with_the_settings_merged(tmp_path):
    environment = _environment(tmp_path, SETTINGS)
    result = subprocess.run(["bash", "-c", run_script()], env=environment, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    merged = bootstrap_cloud_provider_config(InstallerAssets.from_files(unbundle(result.stdout)))
    sections = _sections(merged)
    # The installer's [Global] kept, its [LoadBalancer] floating network replaced by the user's, the rest added.
    assert all(line in sections["[Global]"] for line in MERGED_INSTALLER_KEYS), merged
    assert sections["[LoadBalancer]"] == ["lb-provider = ovn", "lb-method = SOURCE_IP_PORT", 'floating-network-id = "6a4e1c2e-0000-4000-8000-000000000001"'], merged
    assert sections["[BlockStorage]"] == ["ignore-volume-az = yes"], merged


def _sections(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("["):
            assert line not in found, f"{line} twice in\n{text}"
            current = found.setdefault(line, [])
        elif line.strip() and not line.startswith(("#", ";")):
            assert current is not None, text
            current.append(line.strip())
    return found


def test_an_installer_file_of_another_shape_stops_the_run(tmp_path):
    """Where the block is not there to merge into, the run stops saying so instead of dropping the settings."""
    environment = _environment(tmp_path, SETTINGS)
    wrapper = tmp_path / "bin" / "openshift-install"
    real = wrapper.read_text().replace("exec ", "")
    # After `create manifests`, the config written as a quoted scalar: no `config: |` block.
    wrapper.write_text(real + '\nif [ "$1" = create ] && [ "$2" = manifests ]; then f="$4/manifests/cloud-provider-config.yaml"; '
                       "sed -i 's/^  config: |$/  config: \"[Global]\\\\n\"/; /^    /d' \"$f\"; fi\n")
    result = subprocess.run(["bash", "-c", run_script()], env=environment, capture_output=True, text=True, timeout=120)
    assert result.returncode == 3, result.stderr
    assert f"{KEY}: the installer's manifests/cloud-provider-config.yaml holds no config block this program can merge into" in result.stderr


def test_the_install_record_keeps_the_settings():
    config = load_config(with_section(stack_config("dev"), "installer", cloudProviderConfig=SETTINGS))
    assert stack_settings(config, plan_addresses(config))["installer.cloudProviderConfig"] == SETTINGS
    assert json.loads(json.dumps(SETTINGS)) == SETTINGS


def test_the_offline_plan_shows_the_bootstrap_the_merged_config():
    """The program under mocks with the fake installer (the offline plan's): the bootstrap's config holds the settings
    as the run script merges them (tools/mock_run.py runs its awk program on the fake's file)."""
    from cluster.dataurl import file_contents
    from tests.conftest import run
    from tools.plan import node_outputs

    program_run = run(with_section(stack_config("dev"), "installer", cloudProviderConfig=SETTINGS))
    bootstrap = next(node for node in node_outputs(program_run) if node.hostname.endswith("-bootstrap"))
    (entry,) = [e for e in bootstrap.ignition["storage"]["files"] if e["path"] == "/opt/openshift/manifests/cloud-provider-config.yaml"]
    merged = _sections(yaml.safe_load(file_contents(entry))["data"]["config"])
    assert merged["[BlockStorage]"] == ["ignore-volume-az = yes"], merged
    assert merged["[LoadBalancer]"] == ["lb-provider = ovn", "lb-method = SOURCE_IP_PORT", 'floating-network-id = "6a4e1c2e-0000-4000-8000-000000000001"'], merged


# What OpenShift's cloud controller manager operator reads with go-ini (gopkg.in/ini.v1 v1.67.1, `ini.Load` in
# CloudConfigTransformer, openshift/cluster-cloud-controller-manager-operator pkg/cloud/openstack/openstack.go: parser.go's
# readKeyName and readValue) unlike gcfg, what the run script's merge and the manifest's YAML cannot carry: each refused,
# the line and key named, and what to write instead.
MISREAD = {
    # The merge splits `<header>\t<setting>` at the first tab: the header would end there.
    '[LoadBalancerClass "fast\tlane"]\nsubnet-id = s1\n': 'line 1 holds a tab: write spaces instead',
    "[LoadBalancer]\nlb-provider =\tovn\n": "line 2 holds a tab: write spaces instead",
    # go-ini: a value opening with a backtick is a raw string up to the next one, over lines (here: past the end, an error).
    "[LoadBalancer]\nlb-provider = `ovn\nlb-method = ROUND_ROBIN\n": (
        "line 2 holds a backtick (`), which OpenShift's cloud controller manager operator (its INI reader, gopkg.in/ini.v1) "
        "reads as the start of a raw string that runs on to the next backtick, over lines: leave it out"
    ),
    # YAML takes no control character; str.splitlines would also end a line at \f where the merge does not.
    "[LoadBalancer]\nlb-provider = ov\x1bn\n": "line 2 holds \\x1b, not printable (a control character breaks the installer's manifest, which is YAML): remove it",
    "[LoadBalancer]\nlb-provider = ovn\x0clb-method = ROUND_ROBIN\n": "line 2 holds \\x0c, not printable (a control character breaks the installer's manifest, which is YAML): remove it",
    # go-ini refuses a key without `=`, and with it the whole config (no cloud provider config at all).
    "[LoadBalancer]\ncreate-monitor\n": (
        "line 2: [LoadBalancer] create-monitor has no value, which OpenShift's cloud controller manager operator (its INI reader, "
        "gopkg.in/ini.v1) refuses, reading none of the config: write `create-monitor = true`"
    ),
    # go-ini ends a value at ; or # even inside double quotes (gcfg does not): the value would be `"a`.
    '[LoadBalancer]\nfloating-subnet-tags = "a;b"\n': (
        "line 2: [LoadBalancer] floating-subnet-tags holds ; inside its quotes, where OpenShift's cloud controller manager operator "
        "(its INI reader, gopkg.in/ini.v1) ends the value (a comment): leave it out"
    ),
    # go-ini strips single quotes around a value, gcfg keeps them.
    "[LoadBalancer]\nlb-provider = 'ovn'\n": (
        "line 2: [LoadBalancer] lb-provider is in single quotes, which OpenShift's cloud controller manager operator "
        "(its INI reader, gopkg.in/ini.v1) strips and the cloud provider keeps: write it without them"
    ),
    # gcfg adds each to the list; go-ini keeps the last.
    "[Networking]\npublic-network-name = public\npublic-network-name = provider\n": (
        "line 3: public-network-name is set twice in [Networking] (OpenShift's cloud controller manager operator "
        "(its INI reader, gopkg.in/ini.v1) keeps only the last): keep one"
    ),
}


@pytest.mark.parametrize("text", list(MISREAD), ids=[f"case {n}" for n in range(len(MISREAD))])
def test_what_openshifts_operator_would_read_otherwise_stops_the_stack_naming_the_key_and_line(text):
    with pytest.raises(ConfigError) as refused:
        load_config(with_section(stack_config("dev"), "installer", cloudProviderConfig=text))
    assert [p for p in refused.value.problems if p.startswith(KEY)] == [f"{KEY}: {MISREAD[text]}"]
