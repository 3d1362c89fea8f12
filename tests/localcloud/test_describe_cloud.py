"""`python -m tools.describe_cloud` against the local OpenStack (GETs only, as the tenant the
stacks name): the description it writes judges the committed dev stack, and stacks a cloud must
refuse, exactly as samples/cloud/dev.yaml (the description the local cloud is made from) does."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from tests.localcloud.cloud_needs import described, planned_needs, uncharged
from tests.localcloud.conftest import ROOT, sdk
from tests.localcloud.engine import structured
from tests.localcloud.openstack_stack import openstack_stack
from tools.mock_cloud import DEFAULT, read

# Stacks the cloud must refuse, each for a name it does not have (or has, unfit): dev with one edit.
REFUSED = {
    "flavor missing": ("flavor: worker", "flavor: huge.worker"),
    "flavor too small": ("flavor: master", "flavor: m1.small"),
    "network not external": ("externalNetwork: external", "externalNetwork: lab-internal"),
    "zone missing": ("image: rhcos\n  ocp:workers:", "image: rhcos\n    availabilityZones: [az9]\n  ocp:workers:"),
}


def _zones_sorted(text: str) -> str:
    """The description lists zones sorted, the sample (and Nova) in its own order: the messages name them in that order."""
    return re.sub(r"zones: ([^;)]+)", lambda match: "zones: " + ", ".join(sorted(match.group(1).split(", "))), text)


def plan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tools.plan", *args], cwd=ROOT, capture_output=True, text=True)


@pytest.fixture(scope="module")
def description(cloud, tmp_path_factory):
    path = tmp_path_factory.mktemp("described") / "cloud.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "tools.describe_cloud", "--os-cloud", "openstack", "--out", str(path)],
        cwd=ROOT,
        env={**os.environ, "OS_CLIENT_CONFIG_FILE": str(cloud.clouds_yaml)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert f"--cloud {path}" in done.stdout
    return path


def test_the_description_is_the_cloud_the_sample_describes(description):
    real, sample = read(description), read(DEFAULT)
    for key in ("computeZones", "volumeZones", "volumeTypes"):
        assert real[key] == sorted(sample[key]), key
    # What the sample names; a stack a test deployed adds its own network, floating IPs and bootstrap image.
    for key in ("flavors", "images", "networks", "floatingIps"):
        assert sample[key].items() <= real[key].items(), key
    assert set(sample["networkExtensions"]) <= set(real["networkExtensions"]) and set(sample["catalog"]) <= set(real["catalog"])
    assert real["token"] != sample["token"] and "member" in real["roles"]
    # Limits: the sample's, and where the cloud shows usage, what other things in the project use.
    for key, value in sample["quotas"].items():
        assert (real["quotas"][key][0] if isinstance(real["quotas"][key], list) else real["quotas"][key]) == (value[0] if isinstance(value, list) else value), key


def test_dev_gets_the_samples_verdicts_against_the_described_cloud(description, tmp_path):
    # Against the real cloud's description, dev passes as against the sample's...
    verdicts = {}
    for name, cloud in (("sample", DEFAULT), ("described", description)):
        result = plan("--stack", "dev", "--cloud", str(cloud), "--out", str(tmp_path / f"dev-{name}"))
        assert result.returncode == 0, result.stderr
        verdicts[name] = yaml.safe_load((tmp_path / f"dev-{name}/needs.yaml").read_text())
    assert verdicts["described"]["verdict"] == verdicts["sample"]["verdict"] == "the cloud has what this stack needs"
    needs = {name: {key: row["need"] for key, row in table["quotas"].items()} for name, table in verdicts.items()}
    assert needs["described"] == needs["sample"]
    # ...and each stack the sample refuses, it refuses with the same messages.
    for case, (old, new) in REFUSED.items():
        text = (ROOT / "Pulumi.dev.yaml").read_text()
        assert old in text, case
        stack = tmp_path / case.replace(" ", "-") / "Pulumi.dev.yaml"
        stack.parent.mkdir()
        stack.write_text(text.replace(old, new))
        refusals = {}
        for name, cloud in (("sample", DEFAULT), ("described", description)):
            result = plan("--config-file", str(stack), "--cloud", str(cloud), "--out", str(tmp_path / "p"))
            assert result.returncode == 2 and not (tmp_path / "p").exists(), (case, name, result.stdout[-2000:])
            named = " (tools.plan --cloud FILE to check against yours)" if cloud == DEFAULT else ""
            refusals[name] = _zones_sorted(result.stderr).replace(f"the cloud description {cloud if cloud != DEFAULT else 'samples/cloud/dev.yaml'}{named}", "THE CLOUD")
        assert refusals["described"] == refusals["sample"], case
        assert refusals["sample"].startswith("error: the cloud cannot hold this stack"), case


def test_refused_credentials_are_one_line(cloud, tmp_path):
    clouds = yaml.safe_load(cloud.clouds_yaml.read_text())
    clouds["clouds"]["openstack"]["auth"]["password"] = "not-the-password"
    wrong = tmp_path / "clouds.yaml"
    wrong.write_text(yaml.safe_dump(clouds))
    done = subprocess.run(
        [sys.executable, "-m", "tools.describe_cloud", "--os-cloud", "openstack"],
        cwd=ROOT,
        env={**os.environ, "OS_CLIENT_CONFIG_FILE": str(wrong)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and not done.stdout
    assert done.stderr.startswith("error: cloud openstack: Keystone at http://127.0.0.1:5000") and "refused its credentials (401)" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "not-the-password" not in done.stderr


def test_the_needs_check_holds_a_table_against_the_clouds_charges(cloud, tmp_path):
    """The check the dev lifecycle runs after `pulumi up` (tests/localcloud/cloud_needs.py), here with
    the cloud as it is: nothing was charged between two readings, so every quota dev needs is named."""
    now = described(cloud)
    table = planned_needs(ROOT / "Pulumi.dev.yaml", now, tmp_path)
    assert (table["quotas"]["cores"]["need"], table["quotas"]["ram"]["need"]) == (20, 81920)  # sized by the cloud's flavors
    wrong = uncharged(table, now, now)
    used = now["quotas"]["instances"][1]
    assert f"instances: the needs table says 6 instances, the cloud charged 0 ({used} -> {used} in use)" in wrong
    assert any(line.startswith("ports: the needs table says 10 ports, -1 on this cloud, the cloud charged 0") for line in wrong)
    named = {line.split(":")[0] for line in wrong}
    assert named == {key for key, row in table["quotas"].items() if row["need"] and isinstance(now["quotas"].get(key), list)}
    assert {"instances", "cores", "ram", "serverGroups", "ports", "securityGroups", "securityGroupRules", "floatingIps"} <= named


def test_the_local_cloud_makes_no_dhcp_port(cloud):
    """Why the needs check holds one port less here (cloud_needs.LOCAL_CLOUD): no Neutron agent runs,
    so no network gets the DHCP (or OVN metadata) port a real cloud's does."""
    found = sdk(cloud, """
result = {"agents": [agent.agent_type for agent in admin.network.agents()],
          "ports": sorted({port.device_owner for port in admin.network.ports()} & {"network:dhcp", "network:distributed"})}
""")
    assert found == {"agents": [], "ports": []}


# The same refusals, as edits of the deployed stack's config: the real preflight's side.
REFUSED_EDITS = {"flavor missing": ("ocp:workers", "flavor", "huge.worker"), "network not external": ("ocp:openstack", "externalNetwork", "lab-internal")}


@pytest.fixture(scope="module")
def dev_stack(cloud, cloud_env, tmp_path_factory):
    yield from openstack_stack("dev", tmp_path_factory.mktemp("dev-refusals"), cloud, cloud_env)


def _problem_lines(output: str, token: str, cloud_named: str) -> list[str]:
    """The lines naming `token`, with the cloud as either side names it put aside."""
    lines = [line.strip().removeprefix("error:").strip() for line in output.splitlines() if token in line]
    return sorted({_zones_sorted(line).replace(cloud_named, "THE CLOUD") for line in lines})


def test_the_real_preflight_refuses_as_the_offline_plan_with_the_description_does(dev_stack, description, tmp_path):
    """A bad stack: the offline plan against the described cloud and `pulumi preview` (the program's
    preflight against the real cloud, before any resource) refuse it with the same message."""
    for case, (section, key, value) in REFUSED_EDITS.items():
        old, new = REFUSED[case]
        stack_file = tmp_path / case.replace(" ", "-") / "Pulumi.dev.yaml"
        stack_file.parent.mkdir()
        stack_file.write_text((ROOT / "Pulumi.dev.yaml").read_text().replace(old, new))
        offline = plan("--config-file", str(stack_file), "--cloud", str(description), "--out", str(tmp_path / "p"))
        assert offline.returncode == 2, offline.stdout[-2000:]
        edited = {**dev_stack.base, section: json.dumps({**structured(dev_stack.base[section]), key: value})}
        dev_stack.write_config(edited)
        try:
            real = dev_stack.pulumi("preview")
        finally:
            dev_stack.write_config(dev_stack.base)
        assert real.returncode != 0 and dev_stack.state() == []
        offline_lines = _problem_lines(offline.stderr, value, f"the cloud description {description}")
        real_lines = _problem_lines(real.stdout + real.stderr, value, 'cloud "openstack"')
        assert offline_lines and set(offline_lines) <= set(real_lines), (case, offline_lines, real_lines)
