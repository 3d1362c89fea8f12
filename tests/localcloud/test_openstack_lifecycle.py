"""The dev (integrated) and standalone stacks' whole life with the real engine, the OpenStack
plugin built here and the local cloud: `pulumi up` judged through the OpenStack APIs, the
bootstrap's config fetched from Glance as the bootstrap would, with a token that can do nothing
else and stops working with the bootstrap's teardown, a second preview that changes
nothing, every day-2 edit of the stack's catalogue previewed against the offline preview,
workers 2 -> 3 -> 1 and the bootstrap's teardown applied with the masters untouched, and
`pulumi destroy` leaving nothing that carries the infra ID (also what the cluster made itself).

Real: the CLI and its Python host, the OpenStack plugin (terraform-provider-openstack v3.4.0
under the bridge: toolchain/pins.toml says why not pulumi-openstack's own), openshift-install
(integrated: against the local cloud; standalone: platform none), Keystone, Nova, Neutron,
Glance, Cinder, and (integrated) OpenStack's cloud controller manager initializing the nodes registered
in a real API server (harness/ccm.py). Not real: the command plugin (harness/command_standin), `oc` for the release
lookups (tools/real_installer.py: no registry), and the machines (Nova's fake driver: nothing
boots). One module-scoped stack per committed stack: the tests run in order and build on each
other.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import gzip
import hashlib
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator

import pytest

from cluster import dataurl
from cluster.addresses import plan_addresses, server_name
from cluster.config import load_config
from cluster.firewall import Rule, bootstrap_rules, security_groups
from harness import ccm, ignition, kubeapi, netns
from harness.localcloud.configuration import TOKEN_CACHE_TIME
from ignition import assembly
from ignition.assembly import Additions, File
from tests.conftest import deploy
from tests.localcloud import cloud_controller
from tests.localcloud.cloud_needs import described, planned_needs, uncharged
from tests.localcloud.conftest import sdk, status_with_token
from tests.localcloud.test_cleanup import standin
from tests.localcloud.engine import Stack, agreement, needs, structured, table, timeline
from tests.localcloud.openstack_stack import PLUGINS, inventory, openstack_stack
from tests.test_day2 import ADDED_GROUP, ADDED_NETWORK, DEV_EDITS, STANDALONE_EDITS

pytestmark = pytest.mark.skipif(needs(*PLUGINS) is not None, reason=str(needs(*PLUGINS)))
CATALOGUE = {"dev": DEV_EDITS, "standalone": STANDALONE_EDITS}
needs_ignition = pytest.mark.skipif(
    (ignition.unavailable() or netns.unavailable()) is not None, reason=str(ignition.unavailable() or netns.unavailable())
)
# What the machine config server stand-in serves each role: a file that says which config the node merged.
MCS_FILE = "/etc/mcs-machine-config-content.json"
MCS_FILE_CONTENTS = {role: f"the {role} pool's rendered config\n".encode() for role in ("master", "worker")}
MCS_CONFIG = {
    role: assembly.dumps(assembly.with_additions({"ignition": {"version": "3.2.0"}}, Additions(files=(File(MCS_FILE, text),)))).encode()
    for role, text in MCS_FILE_CONTENTS.items()
}

# What a running cluster makes itself, by the names and tags it uses (as tests/localcloud/test_cleanup.py).
CLUSTER_MADE = """
network = tenant.network.find_network(f"{infra}-openshift")
tag = f"openshiftClusterID={infra}"
made = tenant.compute.create_server(name=f"{infra}-worker-0-x7k2p", flavor_id=tenant.compute.find_flavor("m1.small").id,
    image_id=tenant.image.find_image("centos-stream-9").id, networks=[{"uuid": network.id}], tags=[tag])
machine = tenant.compute.wait_for_server(made, wait=180)
volume = tenant.block_storage.create_volume(name="pvc-9d8e7f", size=1, metadata={"cinder.csi.openstack.org/cluster": infra})
volume = tenant.block_storage.wait_for_status(volume, "available", wait=120)
port = tenant.network.create_port(name=f"{infra}-worker-0-x7k2p-0", network_id=network.id)
tenant.network.set_tags(port, [tag])
result = {"server": machine.id, "volume": volume.id, "port": port.id}
"""

# The project's security groups, and what a destroy must leave of the cluster's own: load balancers,
# trunks, snapshots, floating IPs and lb-sg-* groups described as the cluster's, ports on its network.
GROUPS = "result = sorted(g.name for g in tenant.network.security_groups())"
CLUSTERS_LEFT = """
networks = {n.id for n in tenant.network.networks() if (n.name or "").startswith(infra)}
result = {
    "load balancers": [lb.name for lb in tenant.load_balancer.load_balancers()
        if lb.name.startswith(f"kube_service_{infra}_") or lb.vip_network_id in networks or lb.id in made_lbs],
    "trunks": [t.name for t in tenant.network.trunks() if (t.name or "").startswith(infra) or f"openshiftClusterID={infra}" in (t.tags or [])],
    "snapshots": [s.name for s in tenant.block_storage.snapshots(details=True) if (s.metadata or {}).get("cinder.csi.openstack.org/cluster") == infra],
    "floating IPs": [f.floating_ip_address for f in tenant.network.ips() if f.id in made_ips or f.description.endswith(f"from cluster {infra}")],
    "lb-sg groups": [g.name for g in tenant.network.security_groups() if g.name.startswith("lb-sg-") and (g.id in made_groups or g.description.endswith(infra))],
    "ports": [p.name or p.id for p in tenant.network.ports() if p.network_id in networks or p.id in made_ports],
    "volumes": [v.id for v in tenant.block_storage.volumes() if v.id in made_volumes],
    "shares": [s.name for s in tenant.shared_file_system.shares() if (s.metadata or {}).get("manila.csi.openstack.org/cluster") == infra],
}
"""

# Nova shows a server's user_data to an admin, from microversion 2.3 on.
USER_DATA = """
result = admin.compute.get(f"/servers/{server}", microversion="2.3").json()["server"]["OS-EXT-SRV-ATTR:user_data"]
"""

# What Keystone says of a token, as keystonemiddleware asks (a token with access rules is shown only
# to a validator that says it knows them); where else the bootstrap's token might reach.
TOKEN = """
answer = admin.identity.get("/auth/tokens", headers={"X-Subject-Token": token, "OpenStack-Identity-Access-Rules": "1"}, raise_exc=False)
result = {
    "status": answer.status_code, "token": answer.json()["token"] if answer.status_code == 200 else None,
    "compute": tenant.compute.get_endpoint(), "other_image": tenant.image.find_image("rhcos").id,
    "credentials": [c["name"] for c in tenant.identity.get(f"/users/{tenant.current_user_id}/application_credentials").json()["application_credentials"]],
}
"""


@pytest.fixture(scope="module", params=["dev", "standalone"])
def stack(request, cloud, cloud_env, tmp_path_factory) -> Iterator[Stack]:
    yield from openstack_stack(request.param, tmp_path_factory.mktemp(f"{request.param}-lifecycle"), cloud, cloud_env)


INSTANCE = "openstack:compute/instance:Instance"


def _by_type(state: list[dict], kind: str) -> dict[str, dict]:
    return {r["urn"].rsplit("::", 1)[1]: r for r in state if r["type"] == kind}


def _rules(rules: list[Rule]) -> list[tuple]:
    return sorted((rule.protocol, rule.port_min, rule.port_max, str(rule.source)) for rule in rules)


def test_up_creates_the_stack_in_the_cloud(stack, tmp_path):
    # What the offline plan's needs table says this stack takes of the project, against what the cloud charges.
    before = described(stack.cloud)  # type: ignore[attr-defined]
    needs_table = planned_needs(stack.project / f"Pulumi.{stack.name}.yaml", before, tmp_path)
    stack.groups_before = sdk(stack.cloud, GROUPS)  # type: ignore[attr-defined]
    began = time.monotonic()
    stack.up(event_log=tmp_path / "events.jsonl")
    took = time.monotonic() - began
    assert uncharged(needs_table, before, described(stack.cloud)) == []  # type: ignore[attr-defined]
    # The critical path: soft anti-affinity makes the masters one after another (components/openstack/machines.py).
    steps = timeline(tmp_path / "events.jsonl")
    masters = sorted((start, end) for name, (kind, start, end) in steps.items() if kind == INSTANCE and "-master-" in name)
    installer = [end - start for name, (kind, start, end) in steps.items() if name == "installer-run"]
    print(
        f"pulumi up of {stack.name}: {took:.0f} s; the masters one after another {masters[-1][1] - masters[0][0]} s "
        f"(each {', '.join(f'{end - start} s' for start, end in masters)}), the installer run {sum(installer)} s"
    )
    outputs = stack.outputs()
    infra = outputs["infraId"]
    found = inventory(stack, infra)
    state = stack.state()
    config = load_config({key: value for key, value in stack.base.items()})
    plan = plan_addresses(config)
    tag = f"openshiftClusterID={infra}"

    # Servers: ACTIVE, with the flavor, image, zone, config drive and tags the program asked for.
    instances = _by_type(state, INSTANCE)
    assert {r["inputs"]["name"] for r in instances.values()} == set(found["servers"])
    for resource in instances.values():
        inputs, server = resource["inputs"], found["servers"][resource["inputs"]["name"]]
        assert server["id"] == resource["id"] and server["status"] == "ACTIVE", server
        # The image by the ID the preflight resolved its name to.
        assert server["flavor"] == inputs["flavorName"] and server["image_id"] == inputs.get("imageId"), (server, inputs)
        assert server["zone"] == inputs.get("availabilityZone", server["zone"]) and server["config_drive"] is True
        assert server["tags"] == sorted(inputs["tags"]) and tag in server["tags"]
    names = {node.name: server_name(config, node, infra) for node in plan.nodes}
    assert set(found["servers"]) == set(names.values())

    # Ports: each node's fixed IP and the VIPs it may hold (masters: API and Ingress, bootstrap: API, workers: Ingress).
    subnet = found["subnets"][f"{infra}-nodes"]
    ports = {port["name"]: port for port in found["ports"].values()}
    for node in plan.nodes:
        port = ports[names[node.name]]
        assert port["fixed_ips"] == [[subnet["id"], str(node.ip)]] and port["device"] == found["servers"][names[node.name]]["id"]
        wanted = {"master": {plan.api_vip, plan.ingress_vip}, "bootstrap": {plan.api_vip}, "worker": {plan.ingress_vip}}[node.role]
        assert set(port["pairs"]) == {str(vip) for vip in wanted}, (node.name, port["pairs"])
        assert tag in port["tags"]
    # The VIP ports hold the VIPs and carry the floating IPs the outputs name.
    for vip, address in (("api", plan.api_vip), ("ingress", plan.ingress_vip)):
        port = ports[f"{infra}-{vip}-port"]
        assert port["fixed_ips"] == [[subnet["id"], str(address)]] and port["device"] == ""
        floating = found["floating_ips"][outputs[f"{vip}FloatingIp"]]
        assert floating["port"] == next(pid for pid, p in found["ports"].items() if p["name"] == f"{infra}-{vip}-port")
        assert floating["network"] == found["external"][config.openstack.external_network]

    # Security groups, rule by rule: the exposure table's rules and no other ingress rule.
    wanted_groups = {f"{infra}-{group}": _rules(rules) for group, rules in security_groups(config, plan).items()}
    if bootstrap_rules(config):
        wanted_groups[f"{infra}-bootstrap"] = _rules(bootstrap_rules(config))
    got = {name: [tuple(rule) for rule in group["rules"]] for name, group in found["groups"].items()}
    assert got == wanted_groups
    assert all(tag in group["tags"] for group in found["groups"].values())

    # Server groups and their members; the router's gateway; the subnet's DNS and pools.
    masters = sorted(found["servers"][names[n.name]]["id"] for n in plan.nodes if n.role == "master")
    workers = sorted(found["servers"][names[n.name]]["id"] for n in plan.nodes if n.role == "worker")
    assert found["server_groups"][f"{infra}-master"] == {"policy": config.masters.server_group_policy, "members": masters}
    assert found["server_groups"][f"{infra}-worker"] == {"policy": config.workers.server_group_policy, "members": workers}
    assert found["routers"][f"{infra}-external-router"]["gateway"] == found["external"][config.openstack.external_network]
    assert subnet["dns"] == [str(server) for server in config.nameservers] and subnet["cidr"] == str(config.machine_network)
    planned_subnet = next(iter(_by_type(state, "openstack:networking/subnet:Subnet").values()))["inputs"]
    assert subnet["pools"] == [{"start": p["start"], "end": p["end"]} for p in planned_subnet["allocationPools"]]

    # Root volumes where the stack sets them, each attached to its server.
    for resource in instances.values():
        devices = resource["inputs"].get("blockDevices") or []
        server = found["servers"][resource["inputs"]["name"]]
        assert len(server["volumes"]) == len(devices)
        for volume_id, device in zip(server["volumes"], devices):
            assert found["volumes"][volume_id]["size"] == device["volumeSize"]

    # The bootstrap's config in Glance: private, bare/raw, tagged; the outputs.
    image = found["images"][f"{infra}-ignition"]
    assert (image["status"], image["visibility"], image["container"], image["disk"]) == ("active", "private", "bare", "raw")
    assert tag in image["tags"]
    assert outputs["apiVip"] == str(plan.api_vip) and outputs["ingressVip"] == str(plan.ingress_vip)
    assert outputs["kubeconfig"] == "[secret]" and outputs["kubeadminPassword"] == "[secret]"
    stack.infra = infra  # type: ignore[attr-defined]


def test_the_bootstrap_fetches_its_whole_config_from_glance(stack):
    """What the bootstrap's Ignition does with the shim Nova holds: fetch the merge source with its
    header from the real Glance, and check the bytes against the shim's sha512."""
    bootstrap = _by_type(stack.state(), INSTANCE)["ocp4-bootstrap-node"]
    user_data = sdk(stack.cloud, USER_DATA, server=bootstrap["id"])  # type: ignore[attr-defined]
    shim = json.loads(base64.b64decode(user_data))
    (merge,) = shim["ignition"]["config"]["merge"]
    headers = {h["name"]: h["value"] for h in merge["httpHeaders"]}
    assert set(headers) == {"X-Auth-Token"} and merge["source"].endswith("/file")
    with urllib.request.urlopen(urllib.request.Request(merge["source"], headers=headers), timeout=30) as response:
        served = response.read()
    assert merge["verification"]["hash"] == "sha512-" + hashlib.sha512(served).hexdigest()
    # The whole config: the installer's bootstrap.ign, every file of it, and this program's additions.
    full = json.loads(served)
    installer = json.loads((stack.project / structured(stack.base["ocp:installer"])["dir"] / "bootstrap.ign").read_text())
    paths = {f["path"] for f in full["storage"]["files"]}
    assert {f["path"] for f in installer["storage"]["files"]} <= paths
    assert "/etc/hostname" in paths and len(served) > 100_000
    # Without the token Glance refuses it.
    try:
        urllib.request.urlopen(merge["source"], timeout=30)
        refused = None
    except urllib.error.HTTPError as error:
        refused = error.code
    assert refused == 401


@needs_ignition
def test_the_real_ignition_boots_the_bootstrap_from_glance(stack, tmp_path):
    """The real Ignition on the user_data Nova holds: it fetches the merge source from the real Glance
    with the shim's header, checks the sha512 and writes every file of what it fetched (the
    installer's bootstrap.ign: bootkube.sh, the TLS assets; with the program's replacements and
    additions) into a scratch root."""
    bootstrap = _by_type(stack.state(), INSTANCE)["ocp4-bootstrap-node"]
    user_data = base64.b64decode(sdk(stack.cloud, USER_DATA, server=bootstrap["id"])).decode()  # type: ignore[attr-defined]
    began = time.monotonic()
    result = ignition.run(user_data, tmp_path / "bootstrap")
    assert result.ok, f"{result.failure()}\n{result.log[-3000:]}"
    print(f"the real Ignition ran the bootstrap's user_data against Glance in {time.monotonic() - began:.0f} s: {len(result.files)} files")
    # Every file of the config Ignition fetched (the shim and Glance's image merged; the program's
    # additions replace some of the installer's), written with its last entry's bytes.
    wanted = {}
    for entry in result.fetched["storage"]["files"]:
        if entry.get("append") or not (entry.get("contents") or {}).get("source"):
            continue  # appended to what the node has, or contents-less: not this file's whole contents
        contents = dataurl.decode_data_url(entry["contents"]["source"])
        wanted[entry["path"]] = gzip.decompress(contents) if entry["contents"].get("compression") == "gzip" else contents
    assert {path: result.files[path].contents if path in result.files else None for path in wanted} == wanted
    installer = json.loads((stack.project / structured(stack.base["ocp:installer"])["dir"] / "bootstrap.ign").read_text())
    assert {entry["path"] for entry in installer["storage"]["files"]} <= set(result.files)  # bootkube.sh, the TLS assets, ...
    assert "/usr/local/bin/bootkube.sh" in result.files and "/opt/openshift/tls/machine-config-server.crt" in result.files
    assert result.files["/etc/hostname"].contents == f"{bootstrap['inputs']['name']}\n".encode()
    for unit in installer["systemd"]["units"]:
        if unit["name"] == "approve-csr.service":  # the installer's blanket approver, masked (issue 49, item 5)
            assert result.links.get(f"/etc/systemd/system/{unit['name']}") == "/dev/null", sorted(result.links)
        elif unit.get("enabled"):
            assert unit["name"] in result.enabled, unit["name"]


@needs_ignition
def test_masters_and_workers_boot_from_the_config_server_the_installer_certified(stack, tmp_path):
    """Each role's pointer as Nova holds it, run by the real Ignition in a namespace holding the
    pointer's address: it fetches from a machine config server stand-in there, serving (integrated)
    over TLS with the installer's own machine-config-server certificate and key, trusting only the
    pointer's CA; a server certificate another CA signed is refused."""
    instances = _by_type(stack.state(), INSTANCE)
    installer = json.loads((stack.project / structured(stack.base["ocp:installer"])["dir"] / "bootstrap.ign").read_text())
    tls = tmp_path / "tls"
    tls.mkdir()
    for entry in installer["storage"]["files"]:
        if entry["path"] in ("/opt/openshift/tls/machine-config-server.crt", "/opt/openshift/tls/machine-config-server.key"):
            (tls / entry["path"].rsplit("/", 1)[1]).write_bytes(dataurl.decode_data_url(entry["contents"]["source"]))
    served = {f"/config/{role}": MCS_CONFIG[role] for role in ("master", "worker")}
    with netns.lab("boot") as lab:
        node = lab.namespace("node")
        for name in ("master-0", "worker-0"):
            (server,) = [resource for key, resource in instances.items() if key.endswith(f"-{name}")]
            user_data = base64.b64decode(sdk(stack.cloud, USER_DATA, server=server["id"])).decode()  # type: ignore[attr-defined]
            (merge,) = json.loads(user_data)["ignition"]["config"]["merge"]
            pointer = urllib.parse.urlsplit(merge["source"])
            if name == "master-0":
                lab.run(node, ["ip", "addr", "add", f"{pointer.hostname}/32", "dev", "lo"], check=True)
            certificate = (tls / "machine-config-server.crt", tls / "machine-config-server.key") if pointer.scheme == "https" else None
            assert (pointer.scheme == "https") == load_config(stack.base).integrated, merge["source"]
            with ignition.ConfigServer(served, certificate=certificate, address=pointer.hostname, port=pointer.port, netns=node) as mcs:
                result = ignition.run(user_data, tmp_path / name, netns=node)
            assert result.ok, f"{name}: {result.failure()}\n{result.log[-3000:]}"
            assert [path for path, _ in mcs.requests] == [pointer.path]
            assert result.files[MCS_FILE].contents == MCS_FILE_CONTENTS[pointer.path.rsplit("/", 1)[1]]
            if certificate:
                other = ignition.Authority.make("another-root-ca").issue(tmp_path / "other", pointer.hostname)
                with ignition.ConfigServer(served, certificate=other, address=pointer.hostname, port=pointer.port, netns=node):
                    refused = ignition.run(user_data, tmp_path / f"{name}-refused", netns=node, timeout=15)
                assert not refused.ok and MCS_FILE not in refused.files
                assert "x509: certificate signed by unknown authority" in refused.log
    assert lab.leftovers() == []


def test_the_bootstraps_token_reads_its_image_and_nothing_else(stack):
    """The shim's token is one of the bootstrap's application credential: Keystone says so, with its
    one access rule; the real Glance (service_type = image) serves that image's file and refuses the
    image list and another image's file, Nova refuses the server list."""
    bootstrap = _by_type(stack.state(), INSTANCE)["ocp4-bootstrap-node"]
    user_data = sdk(stack.cloud, USER_DATA, server=bootstrap["id"])  # type: ignore[attr-defined]
    (merge,) = json.loads(base64.b64decode(user_data))["ignition"]["config"]["merge"]
    token = {h["name"]: h["value"] for h in merge["httpHeaders"]}["X-Auth-Token"]
    image_id = merge["source"].split("/v2/images/")[1].removesuffix("/file")
    found = sdk(stack.cloud, TOKEN, token=token)  # type: ignore[attr-defined]
    assert found["status"] == 200 and found["token"]["methods"] == ["application_credential"], found
    credential = found["token"]["application_credential"]
    assert credential["name"] == f"{stack.infra}-bootstrap-ignition" and credential["restricted"] is True  # type: ignore[attr-defined]
    assert [(r["service"], r["method"], r["path"]) for r in credential["access_rules"]] == [("image", "GET", f"/v2/images/{image_id}/file")]
    assert status_with_token(merge["source"], token) == 200
    base = merge["source"].split("/v2/images/")[0]
    refused = {
        "image list": status_with_token(f"{base}/v2/images", token),
        "another image's file": status_with_token(f"{base}/v2/images/{found['other_image']}/file", token),
        "the image itself": status_with_token(f"{base}/v2/images/{image_id}", token),
        "server list": status_with_token(f"{found['compute'].rstrip('/')}/servers", token),
    }
    assert refused == dict.fromkeys(refused, 401), refused
    stack.bootstrap_token = (token, merge["source"])  # type: ignore[attr-defined]


def test_the_real_cloud_controller_initializes_every_node_as_the_servers_are(stack, tmp_path):
    """The real OpenStack cloud controller manager (harness/ccm.py: v1.33.0, given the installer's cloud provider
    config and clouds.yaml from the bootstrap's Ignition config as OpenShift's operators give them) against a real
    API server where each master and worker registers as its kubelet would: it finds each node's server by its
    name, accepts the planned address the kubelet names (else it keeps the node tainted), and sets the providerID,
    the addresses, the zone, region and instance-type labels, all as the cloud holds that server. The bootstrap's
    server registered with an address not its own (its API VIP) stays uninitialized: the check can fail."""
    cloud_controller.skip_unless_runnable(stack)
    cloud_controller.initialized_as_planned(stack, stack.infra, tmp_path, decoy=True)  # type: ignore[attr-defined]


def test_a_second_preview_changes_nothing(stack):
    steps, output = stack.steps(stack.base)
    assert steps is not None, output[-4000:]
    changed = {name: action for name, action in steps.items() if action != "same"}
    assert changed == {}, changed


def test_the_catalogue_previews_as_the_offline_preview_says(stack):
    """Every edit of tests/test_day2.py for this stack whose base is the committed config, previewed by the
    real engine and plugin against the deployed stack and by the offline preview against the same config."""
    edits = [edit for edit in CATALOGUE[stack.name] if edit.base(stack.base) == stack.base and not edit.hours_later]
    # A network or group added by ID must exist for the preflight (which reads a group's rules): the local cloud's
    # lab-internal and the project's own `default` group (its ingress only from its members) stand in for them.
    real = sdk(stack.cloud, "result = tenant.network.find_network('lab-internal', ignore_missing=False).id")  # type: ignore[attr-defined]
    group = sdk(stack.cloud, "result = next(tenant.network.security_groups(name='default', project_id=tenant.current_project_id)).id")  # type: ignore[attr-defined]
    edits = [dataclasses.replace(edit, change=lambda config, change=edit.change: _made_real(change(config), real, group)) for edit in edits]
    began = time.monotonic()
    rows, disagreements = agreement(stack, deploy(stack.base, stack.name), edits)
    took = time.monotonic() - began
    print(f"{len(edits)} previews of {stack.name} in {took:.0f} s, {took / len(edits):.1f} s each (the offline one's included)")
    print(table(rows))
    assert disagreements == [], "\n".join(disagreements)


def _made_real(config: dict, network_id: str, group_id: str) -> dict:
    """The edit's config with the catalogue's made-up network and group IDs replaced by the cloud's."""
    return json.loads(json.dumps(config).replace(ADDED_NETWORK, network_id).replace(ADDED_GROUP, group_id))


def _registered(api, controller, stack, config: dict, infra: str) -> list[str]:
    """Registers, as their kubelets would, the nodes of `config` not yet in the API; the names of all, once initialized."""
    nodes = cloud_controller.planned_nodes(config, infra, inventory(stack, infra)["servers"])
    cloud_controller.register(api, nodes)
    ccm.wait_initialized(api, controller, sorted(nodes))
    return sorted(nodes)


def test_workers_2_3_1_and_the_bootstrap_teardown_leave_the_masters_as_they_were(stack, tmp_path):
    """Workers 2 -> 3 -> 1 and the bootstrap's teardown leave the masters as they were; integrated, with each
    node registered as its kubelet would once its server is up, the real cloud controller's lifecycle
    controller deletes the Nodes of the workers whose servers `pulumi up` deleted (their Ready condition not
    True: no kubelet here sets one), and no other."""
    infra = stack.infra  # type: ignore[attr-defined]
    before = inventory(stack, infra)
    masters = {name: server for name, server in before["servers"].items() if "-master-" in name}
    master_ports = {pid: port for pid, port in before["ports"].items() if "-master-" in port["name"]}
    config = stack.base
    real = load_config(config).integrated and not (ccm.missing() or kubeapi.missing())
    with contextlib.ExitStack() as running:
        if real:
            api, controller = running.enter_context(cloud_controller.controller_for(cloud_controller.installer_files(stack), tmp_path, infra))
            _registered(api, controller, stack, config, infra)
        for count in (3, 1):
            config = {**config, "ocp:workers": json.dumps({**json.loads(config["ocp:workers"]), "count": count})}
            stack.up(config)
            workers = sorted(name for name in inventory(stack, infra)["servers"] if "-worker-" in name)
            prefix = infra if load_config(stack.base).integrated else structured(stack.base["ocp:clusterName"])
            assert workers == [f"{prefix}-worker-{index}" for index in range(count)]
            if real:
                wanted = _registered(api, controller, stack, config, infra)
                began = time.monotonic()
                while sorted(ccm.nodes(api)) != wanted and time.monotonic() - began < 60:
                    time.sleep(1)
                assert sorted(ccm.nodes(api)) == wanted, controller.log(60)
                print(f"workers {count}: the real lifecycle controller left the Nodes {wanted} within {time.monotonic() - began:.0f} s")
    config = {**config, "ocp:bootstrap": json.dumps({**json.loads(config["ocp:bootstrap"]), "enabled": False})}
    stack.up(config)
    after = inventory(stack, infra)
    assert not any("bootstrap" in name for name in after["servers"])
    assert f"{infra}-ignition" not in after["images"]
    # The bootstrap's credential is gone and its token with it: Keystone at once, Glance once the
    # token falls out of its keystonemiddleware cache (token_cache_time: 300 s by default, TOKEN_CACHE_TIME
    # here). 404 would be the token taken and the image gone; 401 is the token refused.
    token, source = stack.bootstrap_token  # type: ignore[attr-defined]
    found = sdk(stack.cloud, TOKEN, token=token)  # type: ignore[attr-defined]
    assert found["status"] == 404 and f"{infra}-bootstrap-ignition" not in found["credentials"], found
    began = time.monotonic()
    while (status := status_with_token(source, token)) != 401 and time.monotonic() - began < TOKEN_CACHE_TIME + 30:
        time.sleep(2)
    assert status == 401, status
    assert {name: after["servers"][name] for name in masters} == masters
    assert {pid: after["ports"][pid] for pid in master_ports} == master_ports
    stack.base = config


# The nodes' ports as Neutron holds them: their address pairs and security groups.
NODE_PORTS = """
network = tenant.network.find_network(f"{infra}-openshift")
result = {
    port.name: {"pairs": sorted(pair["ip_address"] for pair in port.allowed_address_pairs), "groups": sorted(port.security_group_ids)}
    for port in tenant.network.ports(network_id=network.id)
    if (port.device_owner or "").startswith("compute:") and port.name.startswith((f"{infra}-master-", f"{infra}-worker-"))
}
"""


def test_refresh_and_up_keep_what_the_cluster_added_to_the_nodes_ports(stack, tmp_path):
    """The real cloud controller makes LoadBalancer Services' load balancers under both cluster names OpenShift
    runs it with (the infra ID from 4.16, `kubernetes` on 4.14 and 4.15) and puts their lb-sg-* groups on the
    nodes' ports (tests/localcloud/cloud_controller.py); the controllers' stand-in adds what no controller here
    makes (EgressIP pairs, a MachineSet's server, a PVC), as a live integrated cluster's do; `pulumi refresh`
    then `up` leaves all of it there."""
    if not load_config(stack.base).integrated:
        pytest.skip("a standalone cluster holds no cloud credentials: no controller changes its ports")
    infra = stack.infra  # type: ignore[attr-defined]
    before = sdk(stack.cloud, NODE_PORTS, infra=infra)  # type: ignore[attr-defined]
    if ccm.missing() or kubeapi.missing():
        print(f"the stand-in makes the Services' load balancers: {ccm.missing() or kubeapi.missing()}")
        stack.by_standin = standin(stack.cloud, infra)  # type: ignore[attr-defined]
    else:
        made = cloud_controller.service_load_balancer(stack, infra, tmp_path / "4.16", infra, "demo", "web")
        legacy = cloud_controller.service_load_balancer(stack, infra, tmp_path / "4.14", cloud_controller.LEGACY_CLUSTER_NAME, "legacy", "web")
        stack.by_standin = {**made, **legacy, **standin(stack.cloud, infra, "--only", "egressip", "machineset")}  # type: ignore[attr-defined]
    added = sdk(stack.cloud, NODE_PORTS, infra=infra)  # type: ignore[attr-defined]
    changed = {name: port for name, port in added.items() if name in before and port != before[name]}
    assert any(len(port["pairs"]) > len(before[name]["pairs"]) for name, port in changed.items()), changed  # the EgressIP
    assert any(len(port["groups"]) > len(before[name]["groups"]) for name, port in changed.items()), changed  # lb-sg-*
    refreshed = stack.pulumi("refresh", "--yes", "--skip-preview")
    assert refreshed.returncode == 0, (refreshed.stdout + refreshed.stderr)[-4000:]
    steps, output = stack.steps(stack.base)
    assert steps is not None, output[-4000:]
    changes = {name: action for name, action in steps.items() if action != "same"}
    print(f"after refresh, the preview of {stack.name} changes: {changes or 'nothing'}")
    # The ports above all: their pairs and groups were read back from Neutron with the cluster's additions.
    assert {name: action for name, action in changes.items() if "port" in name} == {}, changes
    # Nothing is replaced or deleted; run alone, the bootstrap and its application credential are still
    # there (Keystone reads the credential's roles back with the reader role that member implies).
    replaced = {name for name, action in changes.items() if action in ("replace", "create-replacement", "delete", "delete-replaced")}
    assert replaced == set(), changes
    stack.up(stack.base)
    assert sdk(stack.cloud, NODE_PORTS, infra=infra) == added  # type: ignore[attr-defined]


def test_destroy_leaves_nothing_that_carries_the_infra_id(stack):
    infra = stack.infra  # type: ignore[attr-defined]
    # An integrated cluster makes servers, volumes and ports itself (Machine API, Cinder CSI), and
    # its controllers load balancers, floating IPs, lb-sg-* groups, EgressIP ports, trunks and
    # snapshots (the stand-in, harness/cluster_standin); a standalone one holds no cloud credentials and makes none.
    made, by_standin = {}, {}
    if load_config(stack.base).integrated:
        made = sdk(stack.cloud, CLUSTER_MADE, infra=infra)  # type: ignore[attr-defined]
        began = time.monotonic()
        by_standin = getattr(stack, "by_standin", None) or standin(stack.cloud, infra)  # type: ignore[attr-defined]
        print(f"the controllers' stand-in made {len(by_standin)} things in {time.monotonic() - began:.0f} s: {sorted(by_standin)}")
    began = time.monotonic()
    if load_config(stack.base).integrated:
        # As the README has a user end a cluster: the protection lowered, then `python -m ocp destroy`, which lifts
        # it with an `up` that changes nothing else and destroys the stack, the cluster's own resources with it.
        stack.write_config({**stack.config(), "ocp:protect": "false"})
        done = stack.ocp("destroy", "--yes")
    else:
        done = stack.destroy()
    print(f"destroy of {stack.name}: {time.monotonic() - began:.0f} s")
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    left = inventory(stack, infra)
    left.pop("external")
    assert {kind: found for kind, found in left.items() if found} == {}, made
    ids = lambda *kinds: [id_ for what, id_ in by_standin.items() if what.endswith(kinds)]  # noqa: E731
    clusters = sdk(stack.cloud, CLUSTERS_LEFT, infra=infra, made_lbs=ids("load balancer"), made_ips=ids("floating IP"),  # type: ignore[attr-defined]
                   made_groups=ids("security group"), made_ports=ids("port"), made_volumes=ids("volume") + [made.get("volume")])
    assert {kind: found for kind, found in clusters.items() if found} == {}, by_standin
    assert sdk(stack.cloud, GROUPS) == stack.groups_before  # type: ignore[attr-defined]
