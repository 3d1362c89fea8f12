"""The plan's topology.svg, read as a user reads it: the text in its boxes and which arrows join what."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from cluster.config import load_config
from tests.cluster.test_families import V4, V6, families
from tests.conftest import ROOT, stack_config
from tools.real_installer import LOCALCLOUD_SWITCH

SVG = "{http://www.w3.org/2000/svg}"
COMMITTED = ROOT / "docs/images/dev-topology.svg"
# The README's picture is the plan without the local cloud: the fake installer's infra ID,
# the same on every machine (the real installer's, against the local cloud, is another).
REGENERATE = (
    f"{LOCALCLOUD_SWITCH}=off venv/bin/python -m tools.plan --stack dev --out build/plan-dev "
    "&& cp build/plan-dev/topology.svg docs/images/dev-topology.svg"
)


# The README shows the picture at its natural size up to 800 px wide: 600 pt (a point is 4/3 px).
README_WIDTH_PT = 600


def plan(stack: str, out: Path, path: str | None = None, config_file: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, LOCALCLOUD_SWITCH: "off", **({"PATH": path} if path is not None else {})}
    source = ["--config-file", str(config_file)] if config_file else ["--stack", stack]
    command = [sys.executable, "-m", "tools.plan", *source, "--out", str(out)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env)


def width_pt(svg: bytes) -> float:
    return float(ET.fromstring(svg).get("width").removesuffix("pt"))


def tops(svg: bytes) -> dict[str, float]:
    """Each node's and cluster's top: the y of its first line of text (y grows downwards)."""
    root = ET.fromstring(svg)
    return {
        group.find(f"{SVG}title").text: float(group.find(f"{SVG}text").get("y"))
        for group in root.iter(f"{SVG}g")
        if group.get("class") in ("node", "cluster") and group.find(f"{SVG}text") is not None
    }


def members(svg: bytes) -> dict[str, set[str]]:
    """Each cluster's label (its lines joined by ' / ') -> the nodes drawn inside its box."""
    root = ET.fromstring(svg)
    extents = {}
    for group in root.iter(f"{SVG}g"):
        if group.get("class") == "cluster":
            outline = next(element for element in group if element.tag in (f"{SVG}polygon", f"{SVG}path"))
            points = [(float(x), float(y)) for x, y in re.findall(r"(-?[\d.]+),(-?[\d.]+)", outline.get("points") or outline.get("d"))]
            label = " / ".join(text.text.strip() for text in group.iter(f"{SVG}text"))
            extents[label] = (min(x for x, _ in points), max(x for x, _ in points), min(y for _, y in points), max(y for _, y in points))
    inside: dict[str, set[str]] = {label: set() for label in extents}
    for group in root.iter(f"{SVG}g"):
        if group.get("class") == "node":
            text = group.find(f"{SVG}text")
            x, y = float(text.get("x")), float(text.get("y"))
            for label, (left, right, top, bottom) in extents.items():
                if left < x < right and top < y < bottom:
                    inside[label].add(group.find(f"{SVG}title").text)
    return inside


def boxes(svg: bytes) -> dict[str, list[str]]:
    """Each node's and cluster's title (its id) and the lines of text shown in it."""
    root = ET.fromstring(svg)
    found = {}
    for group in root.iter(f"{SVG}g"):
        if group.get("class") in ("node", "cluster"):
            title = group.find(f"{SVG}title").text
            found[title] = [text.text.strip() for text in group.iter(f"{SVG}text") if text.text]
    return found


def arrows(svg: bytes) -> set[tuple[str, str]]:
    root = ET.fromstring(svg)
    titles = [g.find(f"{SVG}title").text for g in root.iter(f"{SVG}g") if g.get("class") == "edge"]
    return {tuple(title.split("->")) for title in titles}


def exposure(lines: list[str]) -> dict[str, set[str]]:
    """A security group's box: remote CIDR -> what it may reach (continuation lines joined)."""
    open_to: dict[str, set[str]] = {}
    source = None
    for line in lines[1:]:
        if line.startswith("from "):
            source, _, line = line.removeprefix("from ").partition(": ")
        open_to.setdefault(source, set()).update(part.strip() for part in line.split(","))
    return open_to


@pytest.fixture(scope="module")
def dev(tmp_path_factory):
    out = tmp_path_factory.mktemp("dev") / "plan"
    result = plan("dev", out)
    assert result.returncode == 0, result.stderr
    assert "picture: topology.svg" in result.stdout
    return out


def test_the_dev_picture_shows_addresses_and_exposure(dev):
    svg = (dev / "topology.svg").read_bytes()
    outputs = json.loads((dev / "outputs.json").read_text())
    shown = boxes(svg)
    assert shown["vip 10.0.0.5"] == ["API VIP", "10.0.0.5"] and shown["vip 10.0.0.7"] == ["Ingress VIP", "10.0.0.7"]
    infra = outputs["infraId"]
    assert len(outputs["nodes"]) == 6
    for name, addresses in outputs["nodes"].items():
        assert shown[f"node {name}"][:2] == [name, ", ".join(addresses)]
    # dev has workers: they run the routers, so they alone take the ingress group.
    assert shown[f"node {infra}-master-0"][2:] == ["security groups:", "master"]
    assert shown[f"node {infra}-worker-0"][2:] == ["security groups:", "ingress, worker"]
    assert shown[f"node {infra}-bootstrap"][2:] == ["security groups:", "bootstrap, master"]
    # The floating IPs, each NATed to what it fronts.
    assert ("fip ocp4-vips-api-fip", "vip 10.0.0.5") in arrows(svg)
    assert ("fip ocp4-vips-ingress-fip", "vip 10.0.0.7") in arrows(svg)
    assert ("fip ocp4-bootstrap-fip", f"node {infra}-bootstrap") in arrows(svg)
    # Each with the DNS name that must resolve to it (the etcHosts output's).
    assert shown["fip ocp4-vips-api-fip"] == ["floating IP", outputs["apiFloatingIp"], "api.ocp4.osd2019.local"]
    assert shown["fip ocp4-vips-ingress-fip"] == ["floating IP", outputs["ingressFloatingIp"], "*.apps.ocp4.osd2019.local"]
    assert shown["fip ocp4-bootstrap-fip"] == ["floating IP", outputs["bootstrapGather"].split("--bootstrap ")[1].split()[0]]
    assert f"{outputs['apiFloatingIp']} api.ocp4.osd2019.local" in outputs["etcHosts"]
    assert f"{outputs['ingressFloatingIp']} console-openshift-console.apps.ocp4.osd2019.local" in outputs["etcHosts"]
    # The router's gateway on the external network the stack names; the machine network's CIDR.
    router = shown["router ocp4-network-router"]
    assert router == [f"router {infra}-external-router", "external gateway: external"]
    assert ("router ocp4-network-router", "vip 10.0.0.5") in arrows(svg)
    assert shown["cluster_external"][0] == "external network external"
    assert shown["cluster_machine"][0] == f"machine network 10.0.0.0/16 (subnet {infra}-nodes)"
    # What each group lets in: the API and routes from anywhere, SSH only from the machine
    # network and the configured CIDR.
    groups = {title.removeprefix(f"sg {infra}-"): exposure(lines) for title, lines in shown.items() if title.startswith("sg ")}
    assert set(groups) == {"master", "worker", "ingress", "bootstrap"}
    assert groups["master"]["0.0.0.0/0"] == {"icmp", "tcp 6443"}
    assert groups["ingress"]["0.0.0.0/0"] == {"tcp 80", "tcp 443"}
    ssh_from = str(load_config(stack_config("dev")).openstack.ssh_allowed_cidr)
    assert groups["bootstrap"] == {ssh_from: {"tcp 22"}}
    assert {source for group in groups.values() for source, ports in group.items() if "tcp 22" in ports} == {ssh_from, "10.0.0.0/16"}


def test_the_same_plan_draws_the_same_bytes_and_the_committed_picture_is_current(dev, tmp_path):
    again = plan("dev", tmp_path / "again")
    assert again.returncode == 0, again.stderr
    drawn = (dev / "topology.svg").read_bytes()
    assert (tmp_path / "again/topology.svg").read_bytes() == drawn
    assert b"Generated by graphviz" not in drawn  # no version of dot in the picture
    # dot measures text with the font fontconfig gives for Helvetica: Liberation Sans (.ci/run installs it).
    font = subprocess.run(["fc-match", "-f", "%{family}", "Helvetica"], capture_output=True, text=True).stdout
    assert "Liberation Sans" in font, f"Helvetica is {font!r} here: apt-get install fonts-liberation2"
    assert COMMITTED.is_file() and COMMITTED.read_bytes() == drawn, f"docs/images/dev-topology.svg is stale: {REGENERATE}"


def planned_edit(tmp_path, old: str, new: str) -> tuple[bytes, str]:
    """The picture and infra ID of the offline plan of Pulumi.dev.yaml with `old` replaced by `new`."""
    stack_file = tmp_path / "Pulumi.dev.yaml"
    stack_file.write_text((ROOT / "Pulumi.dev.yaml").read_text().replace(old, new))
    result = plan("dev", tmp_path / "p", config_file=stack_file)
    assert result.returncode == 0, result.stderr
    return (tmp_path / "p/topology.svg").read_bytes(), json.loads((tmp_path / "p/outputs.json").read_text())["infraId"]


def test_five_workers_read_at_800_px_grouped_by_role_top_to_bottom(tmp_path):
    """The newcomer's stack had 5 workers: one long row of 3,063 pt, unreadable at the README's width."""
    svg, infra = planned_edit(tmp_path, "ocp:workers:\n    count: 2", "ocp:workers:\n    count: 5")
    assert width_pt(svg) <= README_WIDTH_PT
    # Each role a box saying what its nodes share: flavor and server group (Pulumi.dev.yaml's flavors).
    pools = {label: inside for label, inside in members(svg).items() if label.split(":")[0] in ("bootstrap", "masters", "workers")}
    assert pools == {
        "bootstrap: flavor master": {f"node {infra}-bootstrap"},
        f"masters: flavor master / server group {infra}-master (soft-anti-affinity)": {f"node {infra}-master-{index}" for index in range(3)},
        f"workers: flavor worker / server group {infra}-worker (soft-anti-affinity)": {f"node {infra}-worker-{index}" for index in range(5)},
    }
    # Top to bottom: the floating IPs, the VIPs, the bootstrap, the masters, the workers, the security groups.
    top = tops(svg)
    order = [
        "fip ocp4-vips-api-fip", "vip 10.0.0.5", f"node {infra}-bootstrap", f"node {infra}-master-0",
        f"node {infra}-worker-0", f"node {infra}-worker-4", f"sg {infra}-worker",
    ]
    assert [top[title] for title in order] == sorted(top[title] for title in order)
    # Rows of three, in the order of their addresses.
    rows = sorted({top[f"node {infra}-worker-{index}"] for index in range(5)})
    assert len(rows) == 2
    assert [index for index in range(5) if top[f"node {infra}-worker-{index}"] == rows[0]] == [0, 1, 2]
    x = {title: float(ET.fromstring(svg).find(f".//{SVG}g[{SVG}title='{title}']/{SVG}text").get("x")) for title in top}
    assert x[f"node {infra}-worker-0"] < x[f"node {infra}-worker-1"] < x[f"node {infra}-worker-2"]
    assert x["fip ocp4-vips-api-fip"] < x["fip ocp4-vips-ingress-fip"] and x["vip 10.0.0.5"] < x["vip 10.0.0.7"]


def test_the_bootstrap_helper_and_its_floating_ip_fit_the_width_too(tmp_path):
    """configSource: helper adds a fourth floating IP and a server with no role: they wrap and get a box of their own."""
    svg, infra = planned_edit(tmp_path, "configSource: glance ", "configSource: helper ")
    assert width_pt(svg) <= README_WIDTH_PT
    assert members(svg)["bootstrap helper: flavor m1.small"] == {f"node {infra}-bootstrap-helper"}
    assert ("fip ocp4-bootstrap-helper-fip", f"node {infra}-bootstrap-helper") in arrows(svg)
    top = tops(svg)
    assert top[f"node {infra}-bootstrap"] < top[f"node {infra}-bootstrap-helper"] < top[f"node {infra}-master-0"]


def test_a_libvirt_stack_shows_its_network_and_domains(tmp_path):
    result = plan("kvm", tmp_path / "kvm")
    assert result.returncode == 0, result.stderr
    svg = (tmp_path / "kvm/topology.svg").read_bytes()
    shown = boxes(svg)
    network = next(lines for title, lines in shown.items() if title.startswith("cluster_kvm"))
    assert network[:2] == ["libvirt network kvm4 192.168.126.0/24", "mode nat, domain kvm4.lab.local"]
    # Grouped by role, with their size (Pulumi.kvm.yaml: masters 4 vCPUs 16 GiB, workers 4 vCPUs 8 GiB).
    pools = {label: inside for label, inside in members(svg).items() if label.split(":")[0] in ("bootstrap", "masters", "workers")}
    assert pools == {
        "bootstrap: 4 vCPUs, 16384 MiB": {"node kvm4-bootstrap"},
        "masters: 4 vCPUs, 16384 MiB": {f"node kvm4-master-{index}" for index in range(3)},
        "workers: 4 vCPUs, 8192 MiB": {f"node kvm4-worker-{index}" for index in range(2)},
    }
    nodes = json.loads((tmp_path / "kvm/outputs.json").read_text())["nodes"]
    assert {title: lines for title, lines in shown.items() if title.startswith("node ")} == {
        f"node {name}": [name, address] for name, (address,) in nodes.items()
    }
    assert shown["vip 192.168.126.5"] == ["API VIP", "192.168.126.5"]
    assert not any(title.startswith("sg ") for title in shown)


def test_a_standalone_stack_draws_too(tmp_path):
    result = plan("standalone", tmp_path / "p")
    assert result.returncode == 0, result.stderr
    shown = boxes((tmp_path / "p/topology.svg").read_bytes())
    nodes = json.loads((tmp_path / "p/outputs.json").read_text())["nodes"]
    assert all(shown[f"node {name}"][:2] == [name, ", ".join(addresses)] for name, addresses in nodes.items())
    assert {"vip 10.0.0.5", "vip 10.0.0.7", "router ocp4-network-router"} <= set(shown)


def test_without_dot_the_plan_writes_the_rest_and_says_how(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for directory in ("/usr/local/bin", "/usr/bin", "/bin"):
        for tool in sorted(Path(directory).iterdir()):
            if tool.name != "dot" and not (bin_dir / tool.name).exists():
                (bin_dir / tool.name).symlink_to(tool)
    result = plan("dev", tmp_path / "p", path=str(bin_dir))
    assert result.returncode == 0, result.stderr
    assert "picture: none, Graphviz's dot is missing: apt-get install graphviz, then run the plan again" in result.stdout
    assert not (tmp_path / "p/topology.svg").exists()
    assert (tmp_path / "p/resources.json").is_file() and (tmp_path / "p/state.json").is_file()


def test_a_dual_stack_stack_draws_each_node_with_both_addresses(tmp_path):
    """The nodes output lists a dual-stack node's every address (issue 49): its box shows both, ordered by the first
    (the picture once took the two for one address and stopped the plan)."""
    stack_file = tmp_path / "Pulumi.dev.yaml"
    stack_file.write_text(yaml.safe_dump({"config": {key: value for key, value in families(V4, V6).items() if key != "ocp:pullSecret"}}))
    result = plan("dev", tmp_path / "p", config_file=stack_file)
    assert result.returncode == 0, result.stderr[-3000:]
    shown = boxes((tmp_path / "p/topology.svg").read_bytes())
    nodes = json.loads((tmp_path / "p/outputs.json").read_text())["nodes"]
    assert all(len(addresses) == 2 for addresses in nodes.values())
    assert all(shown[f"node {name}"][:2] == [name, ", ".join(addresses)] for name, addresses in nodes.items())
