"""What a stack needs from its cloud: the offline plan's needs.yaml and summary (tools/needs.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import yaml

from tests.conftest import ROOT
from tools import real_installer
from tools.needs import rhcos_stream

SERVERS = "openstack:compute/instance:Instance"


def plan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tools.plan", *args], cwd=ROOT, capture_output=True, text=True)


def test_the_dev_plan_says_what_the_cloud_must_give(tmp_path):
    out = tmp_path / "plan"
    result = plan("--stack", "dev", "--out", str(out))
    assert result.returncode == 0, result.stderr
    needs = yaml.safe_load((out / "needs.yaml").read_text())
    quotas = {key: row["need"] for key, row in needs["quotas"].items()}
    # Each figure is what the plan's own resources take of the quota.
    resources = json.loads((out / "resources.json").read_text())
    kinds = Counter(resource["type"].split(":")[-1] for resource in resources if resource["type"].startswith("openstack:"))
    flavors = yaml.safe_load((ROOT / "samples/cloud/dev.yaml").read_text())["flavors"]
    sizes = [flavors[resource["inputs"]["flavorName"]] for resource in resources if resource["type"] == SERVERS]
    assert quotas["instances"] == kinds["Instance"] == 6
    assert (quotas["cores"], quotas["ram"]) == (sum(size[0] for size in sizes), sum(size[1] for size in sizes)) == (20, 81920)
    assert quotas["serverGroups"] == kinds["ServerGroup"] and quotas["serverGroupMembers"] == 3
    assert quotas["floatingIps"] == kinds["FloatingIp"] and quotas["securityGroups"] == kinds["SecGroup"]
    # Neutron adds two egress rules to each group; the network holds the router's interface and the DHCP port.
    assert quotas["securityGroupRules"] == kinds["SecGroupRule"] + 2 * kinds["SecGroup"]
    assert quotas["ports"] == kinds["Port"] + 2
    assert (quotas["networks"], quotas["subnets"], quotas["routers"]) == (kinds["Network"], kinds["Subnet"], kinds["Router"]) == (1, 1, 1)
    assert (quotas["volumes"], quotas["gigabytes"]) == (0, 0)
    # Against the sample description: free beside each, and a verdict.
    assert needs["quotas"]["cores"] | {"raise": None} == {
        "need": 20, "unit": "vCPUs", "limit": 200, "inUse": 4, "free": 196, "verdict": "enough", "raise": None
    }
    assert needs["verdict"] == "the cloud has what this stack needs"
    assert [role["role"] for role in needs["roles"]] == ["member or _member_"]  # the sample cloud has no Swift, no Octavia
    assert {service["service"]: service["have"] for service in needs["services"]}["load-balancer"] == "no"
    assert [record["name"] for record in needs["dns"]] == ["api.ocp4.osd2019.local", "*.apps.ocp4.osd2019.local"]
    assert needs["dns"][0]["address"] == "`pulumi stack output apiFloatingIp`"  # apiFloatingIp: create
    assert "at least 1380" in needs["mtu"]
    assert [made.split(",")[0] for made in needs["alsoMakes"]] == [
        "a private Glance image <infraID>-ignition", "a Keystone application credential <infraID>-bootstrap-ignition", "after install"
    ]
    # The RHCOS image of the installer at hand (the toolchain's, where built), and how to upload it.
    stream = rhcos_stream(real_installer.binary())
    if stream is not None:
        assert needs["image"]["rhcos"] == stream and stream["location"].endswith("-openstack.x86_64.qcow2.gz")
        assert needs["image"]["upload"][:2] == [f"curl -L -o rhcos.qcow2.gz {stream['location']}", f"echo '{stream['sha256']}  rhcos.qcow2.gz' | sha256sum -c"]
    else:
        assert needs["image"]["rhcos"] == "run `openshift-install coreos print-stream-json` with the installer you install with"
    assert needs["image"]["upload"][-1] == "openstack image create --container-format bare --disk-format qcow2 --file rhcos.qcow2 rhcos"
    # And printed, a line per quota.
    printed = result.stdout.split("what the cloud must give this stack (needs.yaml")[1]
    assert "  vCPUs                                   20      196  enough" in printed
    assert "  verdict: the cloud has what this stack needs" in printed


def test_a_short_cloud_gets_a_short_verdict_with_its_figures(tmp_path):
    description = yaml.safe_load((ROOT / "samples/cloud/dev.yaml").read_text())
    description["quotas"]["routers"] = [10, 10]  # the preflight holds the router against the limit alone (no usage invoke)
    description["quotas"]["securityGroups"] = [20, 18]
    description["roles"] = ["reader"]
    description["catalog"].pop("volumev3")
    cloud = tmp_path / "cloud.yaml"
    cloud.write_text(yaml.safe_dump(description))
    # Without `member` the bootstrap's application credential cannot name its one role: the preflight stops the plan.
    refused = plan("--stack", "dev", "--cloud", str(cloud), "--out", str(tmp_path / "refused"))
    assert refused.returncode != 0 and "your token has roles reader in project project-lab, not `member`" in refused.stderr, refused.stderr
    stack = tmp_path / "Pulumi.dev.yaml"  # the same stack with the user's own token for the bootstrap
    stack.write_text((ROOT / "Pulumi.dev.yaml").read_text().replace("  ocp:bootstrap:\n", "  ocp:bootstrap:\n    credential: userToken\n"))
    result = plan("--config-file", str(stack), "--cloud", str(cloud), "--out", str(tmp_path / "p"))
    assert result.returncode == 0, result.stderr  # the preflight sees no usage of any of these
    needs = yaml.safe_load((tmp_path / "p/needs.yaml").read_text())
    assert needs["quotas"]["routers"]["verdict"] == "short by 1"
    # Neutron's groups: the preflight holds the footprint against the limit (no usage invoke); the table, against what is free.
    assert needs["quotas"]["securityGroups"] | {"raise": None} == {
        "need": 4, "unit": "security groups", "limit": 20, "inUse": 18, "free": 2, "verdict": "short by 2", "raise": None
    }
    assert needs["verdict"] == (
        "short: securityGroups short by 2; routers short by 1; no block-storage or volumev3 or volume service; no role member or _member_"
    )
    assert needs["roles"] == [{"role": "member or _member_", "for": "the project's resources", "have": "no"}]
    assert f"against the cloud description {cloud}" in (tmp_path / "p/needs.yaml").read_text().splitlines()[0]


def test_a_libvirt_plan_has_no_cloud_needs(tmp_path):
    result = plan("--stack", "kvm", "--out", str(tmp_path / "p"))
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "p/needs.yaml").exists() and "what the cloud must give" not in result.stdout
