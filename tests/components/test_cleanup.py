"""Destroy cleanup: the script against a fake `openstack` CLI (order, idempotence, no failure),
shellcheck, and the command's place in the plan (dependencies, never run by `pulumi up`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cluster.cleanup import cleanup_script
from components.installer import RUN_ONCE
from tests.conftest import ROOT, deploy, preview, stack_config, with_section
from tools.mock_run import unwrap

INFRA = "ocp4-x7k2p"
CLEANUP = "ocp4-cleanup-on-destroy"

# A local stand-in for the openstack CLI: answers listings from a JSON cloud, applies deletes
# to it, records every call. Deleting a volume still attached fails, as Cinder does.
FAKE_CLI = r'''#!PYTHON
import json, os, re, sys
state_file, log_file = os.environ["FAKE_CLOUD"], os.environ["FAKE_LOG"]
cloud = json.load(open(state_file))
args = sys.argv[1:]
open(log_file, "a").write(" ".join(args) + "\n")
microversion = "2.1"  # what older clients ask Nova for unless told
if args[0] == "--os-compute-api-version":
    microversion, args = args[1], args[2:]

def save():
    json.dump(cloud, open(state_file, "w"))

def option(name):
    return args[args.index(name) + 1] if name in args else None

def container_objects(name):
    return next((c["objects"] for c in cloud["containers"] if c["name"] == name), 0)

def fail(message):
    print(message, file=sys.stderr)
    sys.exit(1)

noun = " ".join(args[:2]) if args[0] in ("floating",) else args[0]
verb = args[2] if args[0] == "floating" else args[1]
target = args[-1]
if noun == "loadbalancer" and verb == "list":
    for lb in cloud["lbs"]:
        print(lb["id"], lb["name"])
elif noun == "loadbalancer" and verb == "show":
    lb = next((lb for lb in cloud["lbs"] if lb["id"] == args[2]), None) or fail("not found")
    print(lb["vip_port"])
elif noun == "loadbalancer" and verb == "delete":
    lb = next((lb for lb in cloud["lbs"] if lb["id"] == target), None) or fail("not found")
    cloud["lbs"].remove(lb)
    cloud["ports"] = [p for p in cloud["ports"] if p["id"] != lb["vip_port"]]
    for fip in cloud["fips"]:
        if fip["port"] == lb["vip_port"]:
            fip["port"] = None
    save()
elif noun == "floating ip" and verb == "list":
    port, tag = option("--port"), option("--tags")
    for fip in cloud["fips"]:
        if (port and fip["port"] == port) or (tag and tag in fip["tags"]):
            print(fip["id"])
elif noun == "floating ip" and verb == "delete":
    fip = next((f for f in cloud["fips"] if f["id"] == target), None) or fail("not found")
    cloud["fips"].remove(fip)
    save()
elif noun == "server" and verb == "list":
    tag, name = option("--tags"), option("--name")
    if tag and tuple(map(int, microversion.split("."))) < (2, 26):
        fail("--os-compute-api-version 2.26 or greater is required to support the --tags option")
    for server in cloud["servers"]:
        if (tag and tag in server["tags"]) or (name and re.search(name, server["name"])):
            print(server["id"], server["name"]) if "Name" in args else print(server["id"])
elif noun == "server" and verb == "group" and args[2] == "list":
    for group in cloud["groups"]:
        print(group["id"], group["name"])
elif noun == "server" and verb == "group" and args[2] == "delete":
    group = next((g for g in cloud["groups"] if g["id"] == target), None) or fail("not found")
    cloud["groups"].remove(group)
    save()
elif noun == "catalog" and verb == "show":
    # As the real CLI (seen against harness.localcloud): a missing service is no error.
    print(target if cloud.get("object_store") else "service " + target + " not found")
elif noun == "catalog" and verb == "list":
    print("\n".join(["identity", "compute", "network", "volumev3", "image", *(["object-store"] if cloud.get("object_store") else []), *(["load-balancer"] if cloud.get("load_balancer", True) else [])]))
elif noun == "container" and verb == "list":
    cloud.get("object_store") or fail("public endpoint for object-store service not found")
    for container in cloud["containers"]:
        if container["name"].startswith(option("--prefix") or ""):
            print(container["name"])
elif noun == "container" and verb == "delete":
    if "--recursive" not in args and container_objects(target):
        fail("Conflict: the container is not empty")
    container = next((c for c in cloud["containers"] if c["name"] == target), None) or fail("not found")
    cloud["containers"].remove(container)
    save()
elif noun == "server" and verb == "delete":
    server = next((s for s in cloud["servers"] if s["id"] == target), None) or fail("not found")
    cloud["servers"].remove(server)
    cloud["ports"] = [p for p in cloud["ports"] if p.get("device") != target]
    for volume in cloud["volumes"]:
        if volume["attached"] == target:
            volume["attached"] = None
    save()
elif noun == "volume" and verb == "list":
    key, value = option("--property").split("=", 1)
    for volume in cloud["volumes"]:
        if volume["metadata"].get(key) == value:
            print(volume["id"])
elif noun == "volume" and verb == "delete":
    volume = next((v for v in cloud["volumes"] if v["id"] == target), None) or fail("not found")
    if volume["attached"]:
        fail("Invalid volume: Volume status must be available or error")
    cloud["volumes"].remove(volume)
    save()
elif noun == "image" and verb == "list":
    for image in cloud["images"]:
        if option("--tag") in image["tags"]:
            print(image["id"])
elif noun == "image" and verb == "delete":
    image = next((i for i in cloud["images"] if i["id"] == target), None) or fail("not found")
    cloud["images"].remove(image)
    save()
elif noun == "port" and verb == "list":
    for port in cloud["ports"]:
        if option("--tags") in port["tags"]:
            print(port["id"], port["name"]) if "Name" in args else print(port["id"])
elif noun == "port" and verb == "delete":
    port = next((p for p in cloud["ports"] if p["id"] == target), None) or fail("not found")
    if port.get("device"):
        fail("port is in use")
    cloud["ports"].remove(port)
    save()
else:
    fail("fake openstack: unknown command " + " ".join(args))
'''

TAG = f"openshiftClusterID={INFRA}"


def a_cloud() -> dict:
    """What an integrated cluster leaves: a LoadBalancer Service with a floating IP, a
    MachineSet worker holding a PVC's volume, its port and a server group the Machine API
    made, the image registry's container; what this program made itself (Pulumi deletes
    those in the same destroy) and things of other clusters, which must all stay."""
    return {
        "object_store": True,
        "lbs": [
            {"id": "lb-1", "name": f"kube_service_{INFRA}_default_web", "vip_port": "port-lb-1"},
            {"id": "lb-other", "name": "kube_service_other-abcde_default_web", "vip_port": "port-lb-other"},
        ],
        "fips": [
            {"id": "fip-lb-1", "port": "port-lb-1", "tags": []},
            {"id": "fip-api", "port": "port-api", "tags": [TAG]},  # this program's API floating IP
            {"id": "fip-other", "port": "port-lb-other", "tags": []},
        ],
        "servers": [
            # Tagged, under a name of the user's choosing: found by the tag (compute API 2.26).
            {"id": "srv-ms-1", "name": "gpu-worker-1", "tags": [TAG]},
            # A user's MachineSet without the tag: found by the name prefix.
            {"id": "srv-ms-2", "name": f"{INFRA}-worker-gpu-8kd3w", "tags": []},
            # A machine of a MachineSet named like this program's workers: a random suffix.
            {"id": "srv-ms-3", "name": f"{INFRA}-worker-0-x7q2c", "tags": [TAG]},
            {"id": "srv-other", "name": "other-abcde-worker-0", "tags": ["openshiftClusterID=other-abcde"]},
            {"id": "srv-lookalike", "name": f"{INFRA}q-worker-0", "tags": []},
            # This program's own, tagged and named by the infra ID like the Machine API's.
            {"id": "srv-master-0", "name": f"{INFRA}-master-0", "tags": [TAG]},
            {"id": "srv-worker-12", "name": f"{INFRA}-worker-12", "tags": [TAG]},
            {"id": "srv-bootstrap", "name": f"{INFRA}-bootstrap", "tags": [TAG]},
            {"id": "srv-helper", "name": f"{INFRA}-bootstrap-helper", "tags": [TAG]},
        ],
        "volumes": [
            {"id": "vol-pvc-1", "attached": "srv-ms-1", "metadata": {"cinder.csi.openstack.org/cluster": INFRA}},
            {"id": "vol-other", "attached": None, "metadata": {"cinder.csi.openstack.org/cluster": "other-abcde"}},
        ],
        "ports": [
            {"id": "port-lb-1", "name": f"{INFRA}-lb-1", "tags": []},
            {"id": "port-ms-1", "name": "gpu-worker-1-0", "tags": [TAG], "device": "srv-ms-1"},
            {"id": "port-ms-3", "name": f"{INFRA}-worker-0-x7q2c-0", "tags": [TAG]},
            {"id": "port-api", "name": f"{INFRA}-api-port", "tags": [TAG]},
            {"id": "port-ingress", "name": f"{INFRA}-ingress-port", "tags": [TAG]},
            {"id": "port-master-0", "name": f"{INFRA}-master-0", "tags": [TAG], "device": "srv-master-0"},
            {"id": "port-lb-other", "name": "other-lb", "tags": []},
        ],
        "groups": [
            {"id": "sg-master", "name": f"{INFRA}-master"},
            {"id": "sg-worker", "name": f"{INFRA}-worker"},
            {"id": "sg-mapo", "name": f"{INFRA}-worker-gpu"},
            {"id": "sg-other", "name": "other-abcde-worker-gpu"},
        ],
        "images": [
            # The bootstrap config an interrupted `pulumi up` uploaded: Pulumi's own is gone by now.
            {"id": "img-left", "name": f"{INFRA}-ignition", "tags": [TAG]},
            {"id": "img-other", "name": "other-abcde-ignition", "tags": ["openshiftClusterID=other-abcde"]},
            {"id": "img-rhcos", "name": "rhcos", "tags": []},
        ],
        "containers": [
            {"name": f"{INFRA}-image-registry-b3c0ffee", "objects": 12},
            {"name": "other-abcde-image-registry-0ddba11", "objects": 3},
            {"name": "backups", "objects": 1},
        ],
    }


@pytest.fixture
def fake(tmp_path: Path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cli = bin_dir / "openstack"
    cli.write_text(FAKE_CLI.replace("PYTHON", sys.executable))
    cli.chmod(0o755)
    state, log = tmp_path / "cloud.json", tmp_path / "calls.log"
    state.write_text(json.dumps(a_cloud()))
    log.write_text("")

    def run(path: str | None = None) -> subprocess.CompletedProcess:
        env = {
            "PATH": path if path is not None else f"{bin_dir}:/usr/bin:/bin",
            "OS_CLOUD": "openstack",
            "INFRA_ID": INFRA,
            "OS_PASSWORD": "s3cret-never-printed",
            "FAKE_CLOUD": str(state),
            "FAKE_LOG": str(log),
            "CLEANUP_RETRY_SECONDS": "0",
        }
        return subprocess.run(["/bin/bash", "-c", cleanup_script()], env=env, capture_output=True, text=True, timeout=60)

    run.state = lambda: json.loads(state.read_text())  # type: ignore[attr-defined]
    run.write = lambda cloud: state.write_text(json.dumps(cloud))  # type: ignore[attr-defined]
    run.calls = lambda: [line for line in log.read_text().splitlines() if line]  # type: ignore[attr-defined]
    return run


def _index(calls: list[str], call: str) -> int:
    return calls.index(call)


OURS = {"srv-master-0", "srv-worker-12", "srv-bootstrap", "srv-helper", "port-api", "port-ingress", "port-master-0", "fip-api", "sg-master", "sg-worker"}


def test_the_script_removes_what_the_cluster_made_in_order(fake):
    result = fake()
    assert result.returncode == 0, result.stderr
    left = fake.state()
    assert [lb["id"] for lb in left["lbs"]] == ["lb-other"]
    assert [f["id"] for f in left["fips"]] == ["fip-api", "fip-other"]
    assert [s["id"] for s in left["servers"]] == ["srv-other", "srv-lookalike", "srv-master-0", "srv-worker-12", "srv-bootstrap", "srv-helper"]
    assert [v["id"] for v in left["volumes"]] == ["vol-other"]
    assert [p["id"] for p in left["ports"]] == ["port-api", "port-ingress", "port-master-0", "port-lb-other"]
    assert [g["id"] for g in left["groups"]] == ["sg-master", "sg-worker", "sg-other"]
    assert [c["name"] for c in left["containers"]] == ["other-abcde-image-registry-0ddba11", "backups"]
    assert [i["id"] for i in left["images"]] == ["img-other", "img-rhcos"]
    calls = fake.calls()
    deletes = [call for call in calls if " delete " in f" {call} "]
    # The load balancer's floating IP while its port still holds it, then the load balancer;
    # the servers before the volume one holds; then ports, server groups, the container.
    assert deletes == [
        "floating ip delete fip-lb-1",
        "loadbalancer delete --cascade --wait lb-1",
        "server delete --wait srv-ms-1",
        "server delete --wait srv-ms-2",
        "server delete --wait srv-ms-3",
        "volume delete vol-pvc-1",  # not --force: admin-only by Cinder's default policy
        "port delete port-ms-3",
        "server group delete sg-mapo",
        "image delete img-left",
        f"container delete --recursive {INFRA}-image-registry-b3c0ffee",
    ]
    assert "s3cret" not in result.stdout + result.stderr
    assert result.stdout.splitlines()[0] == "cleanup: deleted floating IP fip-lb-1 of load balancer lb-1"


def test_nothing_pulumi_deletes_in_the_same_destroy_is_touched(fake, dev_helper_run):
    """The program's own servers, ports, floating IPs and server groups carry the infra ID's
    tag and name too: every name the plan gives them is left to Pulumi, whatever the order."""
    infra = dev_helper_run.outputs["infraId"]
    named = {
        unwrap(r.inputs["name"]).replace(infra, INFRA)
        for r in dev_helper_run.resources
        if r.type.endswith(("/instance:Instance", "/port:Port", "/serverGroup:ServerGroup"))
    }
    assert {f"{INFRA}-master-0", f"{INFRA}-worker-0", f"{INFRA}-api-port", f"{INFRA}-worker", f"{INFRA}-bootstrap-helper"} <= named
    cloud = a_cloud()
    cloud["servers"] = [{"id": f"ours-{name}", "name": name, "tags": [TAG]} for name in sorted(named)]
    cloud["ports"] = [{"id": f"ours-port-{name}", "name": name, "tags": [TAG]} for name in sorted(named)]
    cloud["groups"] = [{"id": f"ours-group-{name}", "name": name} for name in sorted(named)]
    cloud["fips"] = [{"id": f"ours-fip-{name}", "port": None, "tags": [TAG]} for name in sorted(named)]
    fake.write(cloud)
    result = fake()
    assert result.returncode == 0, result.stderr
    assert [call for call in fake.calls() if " delete " in f" {call} " and "ours-" in call] == []
    left = fake.state()
    assert (len(left["servers"]), len(left["ports"]), len(left["groups"]), len(left["fips"])) == (len(named),) * 4


def test_a_second_run_is_harmless(fake):
    assert fake().returncode == 0
    before = fake.state()
    first_calls = len(fake.calls())
    second = fake()
    assert second.returncode == 0, second.stderr
    assert fake.state() == before
    assert not [call for call in fake.calls()[first_calls:] if " delete " in f" {call} "]
    assert second.stdout == "" and second.stderr == ""


def test_failures_never_fail_the_destroy(fake, tmp_path):
    # A listing that fails (no such subcommand on this cloud) and a delete that fails are said, not fatal.
    cloud = a_cloud()
    del cloud["lbs"]  # the fake fails to list load balancers, as a cloud without Octavia would
    cloud["volumes"][0]["attached"] = "srv-elsewhere"  # held by a server the script does not delete
    (tmp_path / "cloud.json").write_text(json.dumps(cloud))
    result = fake()
    assert result.returncode == 0
    assert "cleanup: could not list (openstack loadbalancer list -f value -c id -c name)" in result.stderr
    assert "cleanup: could not delete volume vol-pvc-1 (already gone?)" in result.stderr
    # the rest went on: servers, ports, server groups, the container
    left = fake.state()
    assert {s["id"] for s in left["servers"]} - OURS == {"srv-other", "srv-lookalike"}
    assert {p["id"] for p in left["ports"]} - OURS == {"port-lb-1", "port-lb-other"}
    assert ({g["id"] for g in left["groups"]} - OURS, len(left["containers"])) == ({"sg-other"}, 2)


def test_a_cloud_without_swift_is_no_problem(fake):
    cloud = a_cloud()
    cloud["object_store"] = False
    fake.write(cloud)
    result = fake()
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert not [call for call in fake.calls() if call.startswith("container")]
    assert len(fake.state()["containers"]) == 3


def test_a_cloud_without_octavia_is_no_problem(fake):
    cloud = a_cloud()
    cloud["load_balancer"] = False
    del cloud["lbs"]  # listing them would fail, as without Octavia
    fake.write(cloud)
    result = fake()
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert not [call for call in fake.calls() if call.startswith("loadbalancer")]
    assert {s["id"] for s in fake.state()["servers"]} - OURS == {"srv-other", "srv-lookalike"}


def test_without_the_cli_it_says_so_and_lets_the_destroy_go_on(fake, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "bash").symlink_to("/bin/bash")
    result = fake(path=str(empty))
    assert result.returncode == 0
    assert "cleanup: no openstack CLI" in result.stderr
    assert fake.calls() == []


def test_shellcheck(tmp_path):
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (Debian package 'shellcheck')")
    script = tmp_path / "cleanup.sh"
    script.write_text("#!/usr/bin/env bash\n" + cleanup_script())
    result = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


# The command under mocks: its dependencies, and that `pulumi up` never runs it.
BLOCKED = {
    "ocp4-network-network",
    "ocp4-network-subnet",
    "ocp4-network-router",
    "ocp4-network-router-interface",
    "ocp4-security-master",
    "ocp4-security-worker",
    "ocp4-security-ingress",
}


def test_the_cleanup_runs_after_the_nodes_and_before_the_network_and_groups_go(dev_run):
    cleanup = dev_run.by_name(CLEANUP)
    by_urn = {r.urn: r for r in dev_run.resources}
    depends = {by_urn[urn].name for urn in cleanup.options["dependsOn"]}
    assert BLOCKED <= depends
    # Nothing a node or a VIP is: the engine deletes what depends on a resource before it.
    assert not [by_urn[urn].type for urn in cleanup.options["dependsOn"] if by_urn[urn].type.endswith(("Instance", "Port", "FloatingIp"))]
    # Every master and worker depends on it, so they are gone when it runs: no cloud provider
    # or Machine API left to re-create what it deletes, and PVC volumes are detached. So does
    # the bootstrap's Glance image: the script deletes only what images of it are left.
    nodes = {r.name for r in dev_run.of_type("openstack:compute/instance:Instance") if "-control-plane-" in r.name or "-workers-" in r.name}
    assert len(nodes) == 5
    assert {r.name for r in dev_run.resources if cleanup.urn in r.options.get("dependsOn", [])} == nodes | {"ocp4-bootstrap-config-image"}
    # What else is Pulumi's and tagged (ports, floating IPs, the bootstrap) goes in parallel:
    # the script leaves those names alone (test_nothing_pulumi_deletes_in_the_same_destroy_is_touched).
    assert sorted(cleanup.options["ignoreChanges"]) == sorted(set(RUN_ONCE) - {"delete"})
    inputs = unwrap(cleanup.inputs)
    assert inputs["create"] == "true"
    assert inputs["delete"] == cleanup_script()
    assert set(inputs["environment"]) == {"OS_CLOUD", "INFRA_ID"}
    assert inputs["environment"]["INFRA_ID"] == dev_run.outputs["infraId"]


def test_a_deployed_cleanup_takes_the_current_script_in_place():
    """A stack deployed with an older script runs the current one on destroy: an update (its
    create, `true`, runs), never a replacement (which would run the old delete on a live cluster)."""
    state = deploy(stack_config("dev"))
    for resource in state:
        if resource["name"] == CLEANUP:
            resource["inputs"]["delete"] = "echo an older cleanup"
    result = preview(state, stack_config("dev"))
    assert result.error is None, result.error
    assert (result.changes[CLEANUP].action, result.changes[CLEANUP].fields) == ("update", ("delete",))
    assert {name for name, change in result.changes.items() if change.action != "same"} == {CLEANUP}


def test_standalone_has_no_cleanup(standalone_run):
    assert not [r for r in standalone_run.resources if r.name == CLEANUP]


def test_resources_json_names_its_dependencies(tmp_path):
    out = tmp_path / "plan"
    subprocess.run([sys.executable, "-m", "tools.plan", "--stack", "dev", "--out", str(out)], cwd=ROOT, check=True, capture_output=True, env={**os.environ})
    resources = json.loads((out / "resources.json").read_text())
    entries = resources if isinstance(resources, list) else resources["resources"]
    cleanup = next(r for r in entries if r["name"] == CLEANUP)
    named = {urn.rsplit("::", 1)[-1] for urn in cleanup["options"]["dependsOn"]}
    assert BLOCKED <= named


@pytest.mark.parametrize(
    "edit",
    [
        lambda c: with_section(c, "workers", count=5),
        lambda c: with_section(c, "bootstrap", enabled=False),
        lambda c: with_section(c, "openstack", apiAllowedCidrs=["198.51.100.0/24"]),
        lambda c: {**c, "ocp:tags": json.dumps(["team=ocp"])},
    ],
    ids=["workers.count", "bootstrap.enabled", "apiAllowedCidrs", "tags"],
)
def test_no_up_runs_or_replaces_it(edit):
    state = deploy(stack_config("dev"))
    result = preview(state, edit(stack_config("dev")))
    assert result.error is None, result.error
    assert result.changes[CLEANUP].action == "same"
