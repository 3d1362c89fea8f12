"""The offline plan command, run as a user would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from cluster.addresses import plan_addresses
from cluster.config import load_config
from cluster import machine_yaml
from cluster.dataurl import file_contents
from cluster.installer import render_install_config
from ocp.version import VERSION
from tests.conftest import PULL_SECRET, ROOT, ignition_validate, stack_config
from cluster.installer import upi_manifests
from tools import real_installer, sample_installer, toolchain
from tools.sample_installer import FAKE_MARKER, INSTALLER_VERSION


def plan(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tools.plan", *args], cwd=cwd, capture_output=True, text=True)


def test_plan_of_the_dev_stack(tmp_path):
    out = tmp_path / "plan"
    result = plan("--stack", "dev", "--out", str(out))
    assert result.returncode == 0, result.stderr
    infra_id = json.loads((out / "outputs.json").read_text())["infraId"]
    assert f"{infra_id}-master-0" in result.stdout and "in all" in result.stdout
    # Which release of this program made the plan (ocp/version.py, CHANGELOG.md).
    assert result.stdout.startswith(f"offline plan of stack 'dev' by ocp {VERSION} -> ")
    # What a reviewer looks for first: endpoints and everything open beyond the machine network.
    assert "API       https://api.ocp4.osd2019.local:6443  VIP 10.0.0.5  floating IP 203.0.113." in result.stdout
    # Which cloud the flavors and quotas were checked against: the sample's, not the user's own.
    assert (
        '  cloud: checked against the cloud description samples/cloud/dev.yaml, standing in for cloud "openstack" '
        "(tools.plan --cloud FILE to check against yours)"
    ) in result.stdout
    beyond = result.stdout.split("open beyond the machine network")[1].split("\n\n")[0].splitlines()[1:]
    assert [line.split()[:4] for line in beyond] == [
        ["master", "icmp", "from", "0.0.0.0/0"],
        ["master", "tcp", "6443", "from"],
        ["worker", "icmp", "from", "0.0.0.0/0"],
        ["ingress", "tcp", "80", "from"],
        ["ingress", "tcp", "443", "from"],
        ["bootstrap", "tcp", "22", "from"],
    ]
    resources = json.loads((out / "resources.json").read_text())
    assert {"type", "name", "parent", "inputs"} <= set(resources[0])
    text = (out / "resources.json").read_text()
    assert "[secret]" in text and "fake.example.com" not in text  # pull secret masked
    outputs = json.loads((out / "outputs.json").read_text())
    assert outputs["kubeconfig"] == "[secret]" and outputs["apiVip"] == "10.0.0.5"
    nodes = {path.name for path in (out / "nodes").iterdir()}
    assert {f"{infra_id}-bootstrap", f"{infra_id}-master-0", f"{infra_id}-worker-1"} <= nodes
    master = out / f"nodes/{infra_id}-master-0"
    assert (master / "files/etc/hostname").read_text() == f"{infra_id}-master-0\n"
    assert json.loads((master / "user_data").read_text())["ignition"]["version"] == "3.2.0"
    result = ignition_validate((out / f"nodes/{infra_id}-bootstrap/ignition.json").read_text(), tmp_path)
    assert result.returncode == 0, result.stdout
    assert (out / f"nodes/{infra_id}-bootstrap/files/usr/local/bin/bootkube.sh").is_file()
    # As Ignition writes it: the installer's /etc/motd is empty contents and an append.
    assert (out / f"nodes/{infra_id}-bootstrap/files/etc/motd").read_text().startswith("This is a bootstrap node")
    # Integrated mode: an example MachineSet, filled in from the stack, for the Machine API after install.
    machineset = yaml.safe_load((out / "machinesets/worker.yaml").read_text())
    provider = machineset["spec"]["template"]["spec"]["providerSpec"]["value"]
    assert (machineset["spec"]["replicas"], provider["flavor"], provider["image"]) == (0, "worker", "rhcos")
    assert provider["securityGroups"] == [{"name": f"{infra_id}-worker"}] and provider["serverGroupName"] == f"{infra_id}-worker"
    assert provider["networks"][0]["subnets"][0]["filter"]["tags"] == f"openshiftClusterID={infra_id}"


def test_plan_with_pre_generated_assets(tmp_path):
    result = plan("--stack", "standalone", "--assets", "samples/installer/ocp4", "--out", str(tmp_path / "p"))
    assert result.returncode == 0, result.stderr
    infra_id = json.loads((ROOT / "samples/installer/ocp4/metadata.json").read_text())["infraID"]
    assert json.loads((tmp_path / "p/outputs.json").read_text())["infraId"] == infra_id


def test_invalid_config_exits_2_and_writes_nothing(tmp_path):
    stack = tmp_path / "Pulumi.broken.yaml"
    stack.write_text((ROOT / "Pulumi.dev.yaml").read_text().replace("count: 3", "count: 4"))
    out = tmp_path / "out"
    result = plan("--config-file", str(stack), "--out", str(out))
    assert result.returncode == 2
    assert "ocp:masters.count" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 3
    assert not out.exists() and list(tmp_path.iterdir()) == [stack]


def test_a_users_own_stack_is_not_judged_by_the_sample_cloud(tmp_path):
    """Issue 33: a newcomer's stack names their cloud's flavors and network, which the repository's
    lab (samples/cloud/dev.yaml) has not: without --cloud its cloud checks are skipped, saying so."""
    stack = edited_stack(tmp_path, "flavor: worker", "flavor: m1.large")
    stack.write_text(stack.read_text().replace("flavor: master", "flavor: m1.xlarge").replace("externalNetwork: external", "externalNetwork: public-net"))
    result = plan("--config-file", str(stack), "--out", str(tmp_path / "p"))
    assert result.returncode == 0, result.stderr
    notes = [line for line in result.stdout.splitlines() if line.startswith("  cloud: ")]
    assert notes == [
        "  cloud: not checked, no description of your cloud (samples/cloud/dev.yaml describes the repository's lab): "
        "python -m tools.describe_cloud --os-cloud NAME --out cloud.yaml writes one of yours; then add --cloud cloud.yaml"
    ]
    assert "skipPreflight" not in result.stdout + result.stderr  # the user did not write it
    needs = yaml.safe_load((tmp_path / "p/needs.yaml").read_text())
    assert needs["verdict"].startswith("not checked: no cloud description")
    assert (needs["quotas"]["instances"]["need"], needs["quotas"]["cores"]["need"]) == (6, None)  # sizes: not described
    # Named explicitly, the sample judges it, as before.
    result = plan("--config-file", str(stack), "--cloud", "samples/cloud/dev.yaml", "--out", str(tmp_path / "p"))
    assert result.returncode == 2
    assert 'ocp:masters.flavor: flavor "m1.xlarge" does not exist in the cloud description samples/cloud/dev.yaml' in result.stderr
    assert 'network "public-net" does not exist' in result.stderr


def test_a_users_own_stack_keeps_the_checks_of_what_it_runs(tmp_path):
    """Without a description only the cloud goes unchecked: a day-2 edit that would move the running
    workers to other server groups (Nova replaces them) is refused as before."""
    stack = edited_stack(tmp_path, "flavor: worker", "flavor: m1.large")
    deployed = tmp_path / "deployed"
    assert plan("--config-file", str(stack), "--out", str(deployed)).returncode == 0
    stack.write_text(stack.read_text().replace("flavor: m1.large", "flavor: m1.large\n    serverGroupSize: 1"))
    result = plan("--config-file", str(stack), "--from", str(deployed), "--out", str(tmp_path / "next"))
    assert result.returncode == 2 and "ocp:workers.serverGroupSize: the 2 running workers are in server groups of [2] members" in result.stderr


def test_refusals_name_the_cloud_description_and_cloud_takes_another(tmp_path):
    stack = edited_stack(tmp_path, "flavor: worker", "flavor: huge.worker")
    result = plan("--config-file", str(stack), "--cloud", "samples/cloud/dev.yaml", "--out", str(tmp_path / "p"))
    assert result.returncode == 2 and not (tmp_path / "p").exists()
    assert (
        'ocp:workers.flavor: flavor "huge.worker" does not exist in the cloud description samples/cloud/dev.yaml '
        "(tools.plan --cloud FILE to check against yours)"
    ) in result.stderr
    # The user's own cloud has the flavor, and 30 vCPUs of which 4 are in use.
    description = yaml.safe_load((ROOT / "samples/cloud/dev.yaml").read_text())
    description["flavors"]["huge.worker"] = [16, 65536, 40]
    description["quotas"]["cores"] = [30, 4]
    mine = tmp_path / "mycloud.yaml"
    mine.write_text(yaml.safe_dump(description))
    result = plan("--config-file", str(stack), "--cloud", str(mine), "--out", str(tmp_path / "p"))
    assert result.returncode == 2 and "huge.worker" not in result.stderr
    assert f"the compute quota in the cloud description {mine} has 26 left (4 of 30 in use)" in result.stderr
    assert "--cloud FILE" not in result.stderr  # it is the user's own already
    description["quotas"]["cores"] = [300, 4]
    mine.write_text(yaml.safe_dump(description))
    result = plan("--config-file", str(stack), "--cloud", str(mine), "--out", str(tmp_path / "p"))
    assert result.returncode == 0, result.stderr
    assert f'  cloud: checked against the cloud description {mine}, standing in for cloud "openstack"\n' in result.stdout


def test_a_bad_cloud_description_is_one_message(tmp_path):
    description = yaml.safe_load((ROOT / "samples/cloud/dev.yaml").read_text())
    description["flavors"]["worker"] = [2, "8G", 40]
    del description["token"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(description))
    for path, says in (
        (bad, "token: Field required; flavors.worker.1: Input should be a valid integer"),
        (tmp_path / "none.yaml", "No such file or directory"),
    ):
        result = plan("--stack", "dev", "--cloud", str(path), "--out", str(tmp_path / "p"))
        assert result.returncode == 2 and not (tmp_path / "p").exists()
        assert result.stderr.startswith(f"error: --cloud: cloud description {path}: ") and says in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_unknown_stack_exits_2(tmp_path):
    result = plan("--stack", "nosuchstack", "--out", str(tmp_path / "x"))
    assert result.returncode == 2 and "Pulumi.nosuchstack.yaml" in result.stderr


def test_plan_files_are_private_and_carry_options(tmp_path):
    out = tmp_path / "plan"
    result = plan("--stack", "dev", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "0700" in result.stdout.splitlines()[0]
    assert (out.stat().st_mode & 0o777) == 0o700
    assert ((out / "state.json").stat().st_mode & 0o777) == 0o600
    resources = {r["name"]: r for r in json.loads((out / "resources.json").read_text())}
    options = resources["ocp4-control-plane-master-0"]["options"]
    assert set(options) == {"ignoreChanges", "dependsOn", "deleteBeforeReplace", "replaceOnChanges", "protect", "retainOnDelete"}
    assert "userData" in options["ignoreChanges"] and "flavorName" in options["ignoreChanges"]
    # Masters are created one after the other (soft anti-affinity holds only against placed servers).
    assert not any(urn.endswith("::ocp4-control-plane-master-1") for urn in options["dependsOn"])
    assert any(urn.endswith("::ocp4-control-plane-master-0") for urn in resources["ocp4-control-plane-master-1"]["options"]["dependsOn"])


def edited_stack(tmp_path, old: str, new: str, stack: str = "dev"):
    directory = tmp_path / "edited"
    directory.mkdir(exist_ok=True)
    path = directory / f"Pulumi.{stack}.yaml"  # the same stack: the same resource names
    text = (ROOT / f"Pulumi.{stack}.yaml").read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    return path


def test_preview_of_an_edit_from_a_deployed_plan(tmp_path):
    # Standalone: every node's CoreDNS forwards to the nameservers, so every user_data would change.
    deployed = tmp_path / "deployed"
    assert plan("--stack", "standalone", "--out", str(deployed)).returncode == 0
    stack = edited_stack(tmp_path, "- 10.20.0.1", "- 10.20.0.2", "standalone")
    result = plan("--config-file", str(stack), "--from", str(deployed), "--out", str(tmp_path / "next"))
    assert result.returncode == 0, result.stderr
    changes = {c["name"]: c for c in json.loads((tmp_path / "next/changes.json").read_text())}
    assert {name for name, c in changes.items() if c["action"] != "same"} == {"ocp4-network-subnet"}
    assert changes["ocp4-network-subnet"] == {
        "type": "openstack:networking/subnet:Subnet",
        "name": "ocp4-network-subnet",
        "action": "update",
        "fields": ["dnsNameservers"],
        "reason": "in place",
    }
    assert changes["ocp4-control-plane-master-0"]["ignored"] == ["userData"]
    assert "nothing replaces, rebuilds, resizes or deletes a node or the network" in result.stdout
    assert "ocp:nameservers: changed since install" in result.stdout
    assert "10.20.0.2" not in json.dumps(changes["installer-run"]), "secrets only as (secret) changed"


def test_preview_of_a_refused_edit_exits_2_and_writes_nothing(tmp_path):
    deployed = tmp_path / "deployed"
    assert plan("--stack", "dev", "--out", str(deployed)).returncode == 0
    stack = edited_stack(tmp_path, "ocp:clusterName: ocp4", "ocp:clusterName: ocp5")
    result = plan("--config-file", str(stack), "--from", str(deployed), "--out", str(tmp_path / "next"))
    assert result.returncode == 2
    assert "ocp:clusterName: was \"ocp4\" at install, now \"ocp5\"" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) <= 3
    assert not (tmp_path / "next").exists()


def test_a_plan_of_another_stack_is_refused_naming_both(tmp_path):
    deployed = tmp_path / "deployed"
    assert plan("--stack", "standalone", "--out", str(deployed)).returncode == 0
    result = plan("--stack", "dev", "--from", str(deployed), "--out", str(tmp_path / "next"))
    assert result.returncode == 2
    assert f"--from {deployed}: that is a plan of stack standalone, and this is stack dev" in result.stderr
    assert not (tmp_path / "next").exists()


def test_preview_later_refuses_a_bootstrap_from_expired_configs(tmp_path):
    deployed = tmp_path / "deployed"
    assert plan("--stack", "dev", "--out", str(deployed)).returncode == 0
    result = plan("--stack", "dev", "--from", str(deployed), "--at", "+21h", "--out", str(tmp_path / "next"))
    assert result.returncode == 2 and "ocp:bootstrap.enabled" in result.stderr and "24 h" in result.stderr
    torn_down = edited_stack(tmp_path, "    enabled: true", "    enabled: false")
    result = plan("--config-file", str(torn_down), "--from", str(deployed), "--at", "+21h", "--out", str(tmp_path / "n2"))
    assert result.returncode == 0, result.stderr


def test_the_plan_shows_which_images_each_node_runs_and_where_they_came_from(tmp_path):
    override = "registry.lab/haproxy@sha256:" + "c" * 64
    stack = edited_stack(tmp_path, "  ocp:installer:\n", f"  ocp:networking:\n    images:\n      haproxy-router: {override}\n  ocp:installer:\n", "standalone")
    result = plan("--config-file", str(stack), "--out", str(tmp_path / "p"))
    assert result.returncode == 0, result.stderr
    images = json.loads((tmp_path / "p/images.json").read_text())
    assert images["ocp4-master-0"]["haproxy-router"] == {"image": override, "source": "override"}
    keepalived = images["ocp4-master-0"]["keepalived-ipfailover"]
    assert keepalived["source"] == "payload" and "@sha256:" in keepalived["image"]
    assert "haproxy-router" not in images["ocp4-worker-0"]  # only masters run haproxy
    assert f"haproxy-router         {override} (override)" in result.stdout
    # Integrated mode: the MCO brings its own; the plan lists none of ours.
    assert plan("--stack", "dev", "--out", str(tmp_path / "d")).returncode == 0
    assert not (tmp_path / "d/images.json").exists()


def test_the_plan_says_which_installer_made_the_configs(tmp_path):
    installer = real_installer.binary()
    standalone = plan("--stack", "standalone", "--out", str(tmp_path / "standalone"))
    dev = plan("--stack", "dev", "--out", str(tmp_path / "dev"))
    assert standalone.returncode == 0 and dev.returncode == 0, standalone.stderr + dev.stderr
    if installer is None:
        assert "installer configs: made by the fake installer" in standalone.stdout
        assert f"the real one is not built: {toolchain.HOW}" in standalone.stdout
        return
    assert f"installer configs: made by the real {real_installer.version()}" in standalone.stdout
    # The standalone plan carries the real installer's bootstrap: its bootkube.sh, not a stand-in.
    planned = (tmp_path / "standalone/nodes/ocp4-bootstrap/files/usr/local/bin/bootkube.sh").read_bytes()
    assert planned == real_bootkube(tmp_path / "assets", installer)
    assert FAKE_MARKER.encode() not in planned
    served = (tmp_path / "standalone/nodes/ocp4-bootstrap/ignition.json").read_text()
    validated = ignition_validate(served, tmp_path)
    assert validated.returncode == 0, validated.stdout + validated.stderr
    # Integrated: the real installer would validate against a cloud; the plan says so.
    assert "made by the fake installer" in dev.stdout and "validates platform openstack against a cloud" in dev.stdout


def real_bootkube(directory, installer) -> bytes:
    """bootkube.sh as the real installer writes it for the standalone stack, in a run of its own."""
    config = load_config(stack_config("standalone"))
    directory.mkdir()
    (directory / "install-config.yaml").write_text(render_install_config(config, plan_addresses(config), PULL_SECRET))
    made = subprocess.run([installer, "create", "ignition-configs", "--dir", str(directory)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    files = json.loads((directory / "bootstrap.ign").read_text())["storage"]["files"]
    return file_contents(next(entry for entry in files if entry["path"] == "/usr/local/bin/bootkube.sh"))


def test_out_replaces_an_earlier_plan_and_nothing_else(tmp_path):
    """--out is replaced whole: a directory of the user's (or the project root) is refused, untouched."""
    project = tmp_path / "project"
    (project / "assets/dev").mkdir(parents=True)
    (project / "Pulumi.yaml").write_text("name: ocp\n")
    (project / "assets/dev/metadata.json").write_text('{"infraID": "ocp4-x7k2p"}')
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    for directory, held in ((project, "Pulumi.yaml, assets"), (mine, "notes.txt")):
        before = sorted(str(path) for path in directory.rglob("*"))
        result = plan("--stack", "standalone", "--out", str(directory))
        assert result.returncode == 2, result.stdout
        assert f"--out {directory}: holds {held}, not an offline plan" in result.stderr and "Traceback" not in result.stderr
        assert sorted(str(path) for path in directory.rglob("*")) == before
    assert (mine / "notes.txt").read_text() == "mine" and (project / "assets/dev/metadata.json").is_file()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["mine", "project"]  # nothing staged beside them
    # An empty directory, an earlier plan (with its marker, or of the layout plans had before it) are replaced.
    out = tmp_path / "plan"
    out.mkdir()
    assert plan("--stack", "standalone", "--out", str(out)).returncode == 0
    assert (out / ".ocp-plan").is_file()
    (out / ".ocp-plan").unlink()
    assert plan("--stack", "standalone", "--out", str(out)).returncode == 0
    (out / "report.pdf").write_text("the user's")
    result = plan("--stack", "standalone", "--out", str(out))
    assert result.returncode == 2 and "holds report.pdf, not an offline plan" in result.stderr
    assert (out / "report.pdf").read_text() == "the user's" and (out / "state.json").is_file()


def test_installer_configs_that_name_files_outside_the_plan_are_refused(tmp_path):
    assets = tmp_path / "assets"
    shutil.copytree(ROOT / "samples/installer/ocp4", assets)
    bootstrap = json.loads((assets / "bootstrap.ign").read_text())
    # nodes/<host>/files/ is three levels down: this would land beside the plan.
    bootstrap["storage"]["files"].append({"path": "/../../../../escaped", "contents": {"source": "data:,written"}, "mode": 420})
    (assets / "bootstrap.ign").write_text(json.dumps(bootstrap))
    out = tmp_path / "plan"
    result = plan("--stack", "standalone", "--assets", str(assets), "--out", str(out))
    assert result.returncode == 2, result.stdout
    assert "its config names the file '/../../../../escaped', relative or with '..', which would be written outside the plan directory" in result.stderr
    assert not out.exists() and sorted(path.name for path in tmp_path.iterdir()) == ["assets"]
    bootstrap["storage"]["files"][-1]["path"] = "/etc/fine"
    bootstrap["systemd"]["units"].append({"name": "../" * 7 + "escaped.service", "contents": "[Unit]\n"})
    (assets / "bootstrap.ign").write_text(json.dumps(bootstrap))
    result = plan("--stack", "standalone", "--assets", str(assets), "--out", str(out))
    assert result.returncode == 2 and "its config names the systemd unit '" + "../" * 7 + "escaped.service'" in result.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["assets"]


def integrated_assets(directory, infra_id: str | None = None):
    """The dev stack's configs as `create manifests`, the UPI edits and `create ignition-configs` leave them
    (the fake installer), its infra ID replaced when given."""
    config = load_config(stack_config("dev"))
    text = render_install_config(config, plan_addresses(config), PULL_SECRET)
    files = sample_installer.ignition_configs(text, upi_manifests(sample_installer.manifests(text)))
    if infra_id is not None:
        files["metadata.json"] = json.dumps(json.loads(files["metadata.json"]) | {"infraID": infra_id}).encode()
    for name, data in files.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_bytes(data)
    return directory


def test_an_infra_id_that_would_lead_out_of_the_plan_is_refused_and_nothing_written(tmp_path):
    """Integrated servers are named <infraID>-<role>-<index>, and the plan writes nodes/<server>/: a metadata.json
    whose infraID climbs out would put the nodes' keys and tokens beside the plan."""
    assets = integrated_assets(tmp_path / "assets", "../../../escaped-x7k2p")
    out = tmp_path / "deep" / "er" / "plan"
    result = plan("--stack", "dev", "--assets", str(assets), "--out", str(out))
    assert result.returncode == 2, result.stdout
    assert "metadata.json's infraID '../../../escaped-x7k2p' is not an infra ID openshift-install makes" in result.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["assets"]


def test_a_nodes_files_and_directories_are_the_owners_alone(tmp_path):
    out = tmp_path / "plan"
    result = plan("--stack", "dev", "--assets", str(integrated_assets(tmp_path / "assets")), "--out", str(out))
    assert result.returncode == 0, result.stderr
    written = list((out / "nodes").rglob("*"))
    assert any(path.name == "ignition.json" for path in written) and any(path.name.endswith(".key") for path in written)
    assert [path for path in written if path.is_dir() and path.stat().st_mode & 0o777 != 0o700] == []
    assert [path for path in written if path.is_file() and path.stat().st_mode & 0o777 != 0o600] == []


def test_a_plain_http_image_endpoint_is_refused_by_the_plan_unless_the_stack_allows_it(tmp_path):
    """The bootstrap's token and whole config would go to the catalog's image endpoint in clear."""
    description = yaml.safe_load((ROOT / "samples/cloud/dev.yaml").read_text())
    description["catalog"]["image"] = "http://image.cloud.example:9292"
    cloud = tmp_path / "http-cloud.yaml"
    cloud.write_text(yaml.safe_dump(description))
    stack = edited_stack(tmp_path, "    allowHttpImageEndpoint: true ", "    # allowHttpImageEndpoint: true ")
    result = plan("--config-file", str(stack), "--cloud", str(cloud), "--out", str(tmp_path / "p"))
    assert result.returncode == 2 and not (tmp_path / "p").exists(), result.stderr
    assert (
        "ocp:bootstrap.allowHttpImageEndpoint: the service catalog's public image endpoint http://image.cloud.example:9292 "
        "is plain http"
    ) in result.stderr
    assert "write ocp:bootstrap.allowHttpImageEndpoint: true" in result.stderr
    # The committed dev stack says its cloud is a lab's.
    result = plan("--stack", "dev", "--cloud", str(cloud), "--out", str(tmp_path / "p"))
    assert result.returncode == 0, result.stderr


def test_a_pull_secret_in_clear_text_is_refused_as_pulumi_refuses_it(tmp_path):
    """Pulumi.yaml declares ocp:pullSecret secret: the CLI refuses the stack file ("must be encrypted
    as it's secret", tests/e2e); the plan with it, never echoing the secret, and the config's other problems too."""
    stack = edited_stack(tmp_path, "  ocp:clusterName: ocp4\n", f"  ocp:clusterName: Ocp4\n  ocp:pullSecret: '{PULL_SECRET}'\n")
    result = plan("--config-file", str(stack), "--out", str(tmp_path / "p"))
    assert result.returncode == 2 and not (tmp_path / "p").exists()
    assert result.stderr.startswith(
        f"error: ocp:pullSecret: is in clear text in {stack}, which pulumi refuses (\"must be encrypted as it's secret\"): remove the "
        "line and set it with `pulumi config set --secret ocp:pullSecret \"$(cat pull-secret.json)\" --stack dev`, which stores it encrypted\n"
    )
    assert "ocp:clusterName" in result.stderr and "dGVzdDp0ZXN0" not in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("sources", "rule"),
    [
        # The program measures the world as the pack does (cluster/exposure.py): it refuses these itself, before the pack.
        ('["0.0.0.0/0"]', "ocp:openstack.nodePortAllowedCidrs: [0.0.0.0/0] admits 3,702,258,688 public IPv4 addresses"),
        ('["0.0.0.0/1", "128.0.0.0/1"]', "ocp:openstack.nodePortAllowedCidrs: [0.0.0.0/1, 128.0.0.0/1] admits 3,702,258,688 public IPv4"),
    ],
)
def test_the_policy_packs_rules_refuse_what_the_preview_would(tmp_path, sources, rule):
    stack = edited_stack(tmp_path, "    sshAllowedCidr: 192.168.122.0/24", f"    sshAllowedCidr: 192.168.122.0/24\n    nodePortAllowedCidrs: {sources}")
    result = plan("--config-file", str(stack), "--out", str(tmp_path / "p"))
    assert result.returncode == 2 and not (tmp_path / "p").exists(), result.stdout[-2000:]
    assert result.stderr.startswith("error: invalid stack configuration:\n  ")
    assert rule in result.stderr and "Traceback" not in result.stderr


def test_the_plan_says_the_guard_rails_pass(tmp_path):
    result = plan("--stack", "standalone", "--out", str(tmp_path / "p"))
    assert result.returncode == 0, result.stderr
    assert "  guard rails: the policy pack's 6 mandatory rules pass (policy/README.md)\n" in result.stdout


def users_installer(directory, script: str, name: str = "openshift-install"):
    """An openshift-install of the user's own in `directory`, a script."""
    directory.mkdir(exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return path


def plan_with_path(path: str, *args: str) -> subprocess.CompletedProcess:
    """The plan as a user with this PATH runs it, their installer taken (tests/conftest.py turns that off elsewhere)."""
    env = {key: value for key, value in os.environ.items() if key != "OCP_PLAN_USER_INSTALLER"}
    return subprocess.run([sys.executable, "-m", "tools.plan", *args], cwd=ROOT, capture_output=True, text=True, env={**env, "PATH": path})


def test_the_plan_makes_the_configs_with_the_users_installer_on_path_and_says_so(tmp_path):
    built = real_installer.binary()
    if built is None:
        pytest.skip(toolchain.missing("openshift-install"))
    # The user's: the same release as the toolchain's, at a path of the user's.
    mine = users_installer(tmp_path / "bin", f'exec "{built}" "$@"\n')
    result = plan_with_path(f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}", "--stack", "standalone", "--out", str(tmp_path / "p"))
    assert result.returncode == 0, result.stderr
    assert f"  installer configs: made by your {real_installer.version()}, {mine} (ocp:installer.binary)\n" in result.stdout
    bootkube = (tmp_path / "p/nodes/ocp4-bootstrap/files/usr/local/bin/bootkube.sh").read_bytes()
    assert FAKE_MARKER.encode() not in bootkube


VERSION_4_19 = 'if [ "$1" = version ]; then printf "openshift-install 4.19.2\\nrelease image quay.io/openshift-release-dev/ocp-release:4.19.2-x86_64\\n"; exit 0; fi\n'


def test_a_users_installer_too_old_for_the_program_is_refused(tmp_path):
    old = users_installer(tmp_path / "bin", VERSION_4_19.replace("4.19.2", "4.12.9"), "openshift-install-4.12")
    stack = edited_stack(tmp_path, "    binary: openshift-install\n", f"    binary: {old}\n", "standalone")
    result = plan_with_path(os.environ["PATH"], "--config-file", str(stack), "--out", str(tmp_path / "p"))
    assert result.returncode == 2 and not (tmp_path / "p").exists()
    assert result.stderr == (
        f"error: openshift-install: {old} installs OpenShift 4.12.9, older than 4.14 (the oldest this program installs is 4.14): "
        "download a 4.14 or later installer from https://mirror.openshift.com/pub/openshift-v4/clients/ocp/\n"
    )


def test_a_users_installer_that_refuses_the_config_fails_the_plan_as_it_would_fail_the_up(tmp_path):
    users_installer(tmp_path / "bin", VERSION_4_19 + 'echo "level=fatal msg=failed to fetch Master Machines: unsupported platform" >&2; exit 1\n')
    result = plan_with_path(f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}", "--stack", "standalone", "--out", str(tmp_path / "p"))
    assert result.returncode == 2 and not (tmp_path / "p").exists()
    assert "installer-run: openshift-install failed" in result.stderr and "failed to fetch Master Machines: unsupported platform" in result.stderr


def test_an_integrated_stack_keeps_the_fake_installer_and_says_why(tmp_path):
    """Platform openstack: the installer validates against the cloud, which the offline plan does not contact."""
    mine = users_installer(tmp_path / "bin", VERSION_4_19 + "exit 1\n")
    result = plan_with_path(f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}", "--stack", "dev", "--out", str(tmp_path / "p"))
    assert result.returncode == 0, result.stderr
    assert (
        f"installer configs: made by the fake installer (tools/sample_installer, shaped like {INSTALLER_VERSION}) (your {mine} "
        "(ocp:installer.binary) validates platform openstack against the cloud, and the offline plan contacts none)"
    ) in result.stdout


def test_the_plan_lists_every_port_no_group_filters(tmp_path):
    """Issue 49, item 1: an extra network without port security opens every port of its nodes to anything on it;
    the summary said "everything else is closed" and listed nothing of it. The workers only, by default; the
    masters when the stack says unfilteredMasterPorts, and never the bootstrap."""
    extra = (
        "    additionalNetworks:\n"
        "      - {network: lab-vlan, portSecurity: false}\n"
        "      - {network: lab-l2, portSecurity: false, unfilteredMasterPorts: true}\n"
        "    sshAllowedCidr:"
    )
    stack = edited_stack(tmp_path, "    sshAllowedCidr:", extra)
    result = plan("--config-file", str(stack), "--out", str(tmp_path / "p"))
    assert result.returncode == 0, result.stderr
    beyond = result.stdout.split("open beyond the machine network (everything not listed here is closed to it):")[1].split("\n\n")[0]
    rows = [" ".join(line.split()) for line in beyond.splitlines()[1:]]
    assert [row for row in rows if " every port " in row] == [
        "workers every port from anything on lab-vlan ocp:openstack.additionalNetworks[0]: no port security, so no group",
        "masters every port from anything on lab-l2 ocp:openstack.additionalNetworks[1]: no port security, so no group (unfilteredMasterPorts)",
        "workers every port from anything on lab-l2 ocp:openstack.additionalNetworks[1]: no port security, so no group",
    ]
    ports = {entry["name"] for entry in json.loads((tmp_path / "p" / "resources.json").read_text()) if entry["type"] == "openstack:networking/port:Port"}
    assert not any(name.startswith("ocp4-bootstrap-node-port-") for name in ports)
    assert {name for name in ports if name.endswith("-port-1")} == {"ocp4-workers-worker-0-port-1", "ocp4-workers-worker-1-port-1"}


def test_the_example_machineset_names_a_ports_network_by_the_id_the_cloud_description_gives(tmp_path):
    """Issue 50, finding 8: a network whose port lists its own groups is a ports: entry, which names its network by
    ID only (MAPO's PortOpts.networkID). Against a description that lists it, the plan writes its ID; a name it cannot
    resolve stays, and the file and the summary say so."""
    group = "0e4d2c1b-7f6a-4b3c-8d9e-1a2b3c4d5e6f"
    backup, media = "a1111111-2222-4333-8444-555555555555", "b1111111-2222-4333-8444-555555555555"
    description = yaml.safe_load((ROOT / "samples/cloud/dev.yaml").read_text())
    description["neutronNetworks"] = [{"id": backup, "name": "backup", "subnets": []}, {"id": media, "name": "media", "subnets": []}]
    (tmp_path / "cloud.yaml").write_text(yaml.safe_dump(description))
    written = (
        "    sshAllowedCidr: 192.168.122.0/24\n"
        f"    additionalNetworks:\n"
        f"      - {{network: backup, pools: [workers], securityGroups: [{group}]}}\n"
        f"      - {{network: media, pools: [workers]}}\n"
    )
    stack = edited_stack(tmp_path, "    sshAllowedCidr: 192.168.122.0/24    # Pulumi runs on the undercloud, on the lab's external network\n", written)
    out = tmp_path / "plan"
    result = plan("--config-file", str(stack), "--cloud", str(tmp_path / "cloud.yaml"), "--out", str(out))
    assert result.returncode == 0, result.stderr
    text = (out / "machinesets/worker.yaml").read_text()
    provider = yaml.safe_load(text)["spec"]["template"]["spec"]["providerSpec"]["value"]
    assert provider["ports"] == [{"networkID": backup, "securityGroups": [group]}, {"networkID": media}]
    assert "# NOTE" not in text and "machinesets/worker.yaml:" not in result.stdout
    # Without the description's networks, the names stay, and both the file and the summary say what to do.
    description.pop("neutronNetworks")
    (tmp_path / "cloud.yaml").write_text(yaml.safe_dump(description))
    result = plan("--config-file", str(stack), "--cloud", str(tmp_path / "cloud.yaml"), "--out", str(out))
    assert result.returncode == 0, result.stderr
    text = (out / "machinesets/worker.yaml").read_text()
    note = "ocp:openstack.additionalNetworks[0].network: backup is a name, and its entry is under ports:, whose networkID takes an ID only"
    assert f"# NOTE {note}" in text and f"  machinesets/worker.yaml: {note}" in result.stdout
    assert yaml.safe_load(text)["spec"]["template"]["spec"]["providerSpec"]["value"]["ports"][0]["networkID"] == "backup"


def test_a_described_slaac_subnet_is_planned_with_ports_that_name_it_alone(tmp_path):
    """Issue 50, item 8: tools.describe_cloud writes an IPv6 subnet's ipv6AddressMode, and --cloud takes it. The dev
    stack dual-stack on such a network: the plan's ports ask Neutron for no IPv6 address there (it derives each from
    the port's MAC), and the nodes output leaves the IPv6 one to the port (null offline)."""
    network, v4, v6 = (f"{n}3333333-4444-4555-8666-777777777777" for n in "abc")
    description = machine_yaml.load((ROOT / "samples/cloud/dev.yaml").read_text())
    description["neutronNetworks"] = [{"id": network, "name": "dualstack", "mtu": 1450, "subnets": [v4, v6]}]
    description["subnets"] = [
        {"id": v4, "name": "subnet-v4", "network": network, "cidr": "10.0.0.0/16", "pools": [["10.0.3.0", "10.0.3.255"]]},
        {"id": v6, "name": "subnet-v6", "network": network, "cidr": "fd00:10::/64", "ipv6AddressMode": "slaac"},
    ]
    cloud = tmp_path / "cloud.yaml"
    cloud.write_text(yaml.safe_dump(description))
    committed = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    config = committed["config"]
    config["ocp:machineNetwork"] = ["10.0.0.0/16", "fd00:10::/64"]
    config["ocp:clusterNetwork"] = [{"cidr": "10.128.0.0/14", "hostPrefix": 23}, {"cidr": "fd01::/48", "hostPrefix": 64}]
    config["ocp:serviceNetwork"] = ["172.30.0.0/16", "fd02::/112"]
    config["ocp:openstack"]["existingNetwork"] = {"networkId": "dualstack", "subnetId": ["subnet-v4", "subnet-v6"], "router": True}
    config["ocp:installer"]["dir"] = str(tmp_path / "assets")
    stack = tmp_path / "Pulumi.dual.yaml"
    stack.write_text(yaml.safe_dump(committed))
    result = plan("--config-file", str(stack), "--cloud", str(cloud), "--out", str(tmp_path / "p"))
    assert result.returncode == 0, result.stderr
    ports = {each["name"]: each["inputs"] for each in json.loads((tmp_path / "p/resources.json").read_text()) if each["type"].endswith(":Port")}
    master = next(inputs for name, inputs in ports.items() if name.endswith("master-0-port"))
    assert master["fixedIps"] == [{"subnetId": v4, "ipAddress": "10.0.0.20"}, {"subnetId": v6}], master
    outputs = json.loads((tmp_path / "p/outputs.json").read_text())
    assert outputs["nodes"] and all(found[1] is None and found[0].startswith("10.0.") for found in outputs["nodes"].values()), outputs["nodes"]
