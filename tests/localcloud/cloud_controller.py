"""The real OpenStack cloud controller (harness/ccm.py) against a stack deployed on the local cloud, for the
tests that judge a stack's shape by it (the lifecycle's dev stack, the zones, two families): the stack's
nodes registered as their kubelets would, each checked as the controller initialized it against the plan
and the servers; a LoadBalancer Service's load balancer made and checked against the nodes. Test harness."""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cluster.addresses import plan_addresses, server_name
from cluster.config import load_config
from harness import ccm, kubeapi
from tests.localcloud.conftest import sdk
from tests.localcloud.engine import Stack, structured
from tests.localcloud.openstack_stack import inventory

INSTANCE = "openstack:compute/instance:Instance"
# The cluster name OpenShift 4.14 and 4.15 run the controller under (no --cluster-name: upstream's default).
LEGACY_CLUSTER_NAME = "kubernetes"


def skip_unless_runnable(stack: Stack) -> None:
    if not load_config(stack.base).integrated:
        pytest.skip("a standalone cluster runs no cloud controller (platform none)")
    reason = ccm.missing() or kubeapi.missing()
    if reason:
        pytest.skip(reason)


def installer_files(stack: Stack) -> ccm.InstallerFiles:
    """What the deployed stack put in its cluster for the controller (the bootstrap's Ignition config carries it)."""
    directory = stack.project / structured(stack.base["ocp:installer"])["dir"]
    return ccm.InstallerFiles.from_bootstrap(json.loads((directory / "bootstrap.ign").read_text()))


def planned_nodes(config: dict, infra: str, servers: dict) -> dict:
    """The plan's masters and workers of `config` whose servers the cloud holds, by server name."""
    cluster = load_config(config)
    return {
        name: node for node in plan_addresses(cluster).nodes
        if node.role != "bootstrap" and (name := server_name(cluster, node, infra)) in servers
    }


@contextlib.contextmanager
def controller_for(files: ccm.InstallerFiles, work: Path, cluster_name: str) -> Iterator[tuple[kubeapi.KubeAPI, ccm.CloudController]]:
    """A real API server and the real controller, configured from a stack's installer files, under `cluster_name`."""
    with kubeapi.running(work / "api") as api, ccm.running(api.kubeconfig, files, cluster_name, work / "ccm") as controller:  # type: ignore[arg-type]
        yield api, controller


def register(api: kubeapi.KubeAPI, nodes: dict) -> None:
    """Each node as its kubelet registers it: its name, role and planned addresses (every family's) as --node-ip."""
    known = ccm.nodes(api)
    for name, node in nodes.items():
        if name not in known:
            ccm.register_node(api, name, role=node.role, node_ips=tuple(str(ip) for ip in node.ips))


def initialized_as_planned(stack: Stack, infra: str, work: Path, decoy: bool = False, config: dict | None = None) -> tuple[dict, dict, str]:
    """Starts the controller for the stack deployed with `config` (its base by default), registers its nodes, and checks each as the controller
    initialized it: providerID the server's; its addresses the plan's, every family's, then the hostname; the
    instance-type label the server's flavor and the one the program asked for; the zone label the server's zone,
    which is the one asked for; the region the cloud provider config's. With `decoy`, the
    bootstrap's server is registered with an address not its own (the API VIP), and must stay uninitialized:
    the check can fail. Returns the Nodes by name, the servers and the controller's log."""
    deployed = config or stack.base
    config = load_config(deployed)
    servers = inventory(stack, infra)["servers"]
    asked = {r["inputs"]["name"]: r["inputs"] for r in stack.state() if r["type"] == INSTANCE}
    nodes = planned_nodes(deployed, infra, servers)
    assert nodes, sorted(servers)
    plan, files = plan_addresses(config), installer_files(stack)
    bootstrap = next((name for node in plan.nodes if node.role == "bootstrap" and (name := server_name(config, node, infra)) in servers), None)
    began = time.monotonic()
    with controller_for(files, work, infra) as (api, controller):
        register(api, nodes)
        if decoy and bootstrap:
            ccm.register_node(api, bootstrap, role="master", node_ips=(str(plan.api_vip),))
        ccm.wait_initialized(api, controller, sorted(nodes))
        took = time.monotonic() - began
        assert controller.listening() == set()  # --secure-port=0, as OpenShift runs it: it serves nothing
        time.sleep(2)  # its address patch follows the node's update in the same sync
        found = ccm.nodes(api)
        log = controller.log(400)
    print(f"the real cloud controller initialized {len(nodes)} nodes in {took:.0f} s (API server and controller started)")
    region = re.search(r"^region\s*=\s*(\S+)", files.config, re.MULTILINE)
    got = {name: found[name] for name in nodes}
    for name, node in nodes.items():
        server, labels = servers[name], got[name]["metadata"]["labels"]
        assert got[name]["spec"]["providerID"] == f"openstack:///{server['id']}", name
        assert [(a["type"], a["address"]) for a in got[name]["status"]["addresses"]] == [
            *(("InternalIP", str(ip)) for ip in node.ips), ("Hostname", name)
        ], got[name]["status"]
        assert labels["node.kubernetes.io/instance-type"] == server["flavor"] == asked[name]["flavorName"], labels
        assert labels["topology.kubernetes.io/zone"] == server["zone"], labels
        # The local cloud's Nova places a server asked into the default zone (nova) on any host, an aggregate's too.
        assert asked[name].get("availabilityZone", server["zone"]) in (server["zone"], "nova"), (asked[name], server)
        assert labels.get("topology.kubernetes.io/region") == (region[1] if region else None), labels
    if decoy and bootstrap:
        left = found[bootstrap]
        assert not ccm.initialized(left) and left["spec"].get("providerID") is None, left
        assert f'provided node ip for node "{bootstrap}" is not valid' in log, log[-3000:]
    return got, servers, log


# What the real cloud controller made for a Service, as Octavia and Neutron hold it.
SERVICE_MADE = """
lb = tenant.load_balancer.find_load_balancer(name, ignore_missing=False)
pools = [tenant.load_balancer.get_pool(p["id"]) for p in lb.pools]
group = tenant.network.find_security_group(group_name, ignore_missing=False)
result = {
    "load balancer": {"id": lb.id, "tags": sorted(lb.tags or []), "description": lb.description, "vip_subnet": lb.vip_subnet_id,
        "vip_port": lb.vip_port_id, "status": lb.provisioning_status},
    "listeners": sorted([l.name, l.protocol, l.protocol_port, sorted(l.tags or [])] for l in map(tenant.load_balancer.get_listener, [l["id"] for l in lb.listeners])),
    "pools": {p.name: sorted([m.name, m.address, m.protocol_port] for m in tenant.load_balancer.members(p)) for p in pools},
    "floating IPs": [{"id": f.id, "address": f.floating_ip_address, "network": f.floating_network_id, "description": f.description,
        "tags": sorted(f.tags or [])} for f in tenant.network.ips(port_id=lb.vip_port_id)],
    "group": {"id": group.id, "description": group.description, "tags": sorted(group.tags or []), "rules": sorted(
        [r["protocol"], r["port_range_min"], r["port_range_max"], r["remote_ip_prefix"]] for r in group.security_group_rules if r["direction"] == "ingress")},
    "ports with the group": sorted(p.name for p in tenant.network.ports(security_groups=[group.id])),
    "external": tenant.network.find_network("external", ignore_missing=False).id,
}
"""


def service_load_balancer(stack: Stack, infra: str, work: Path, cluster_name: str, namespace: str, service_name: str) -> dict[str, str]:
    """The real controller, under `cluster_name` (the infra ID from 4.16; `kubernetes` on 4.14 and 4.15), with the
    stack's nodes registered, makes Service namespace/service_name's load balancer, its listener, pool and members
    (every node: the controller excludes none without the exclusion label), floating IP and lb-sg-* group on the
    nodes' ports, each checked against the plan; then it stops, leaving them in the cloud as a cluster destroyed
    with its Services does. What it made, as `kind: ID`, for the destroy's check."""
    seen = inventory(stack, infra)
    nodes = planned_nodes(stack.base, infra, seen["servers"])
    began = time.monotonic()
    with controller_for(installer_files(stack), work, cluster_name) as (api, controller):
        register(api, nodes)
        ccm.wait_initialized(api, controller, sorted(nodes))
        ccm.create_load_balancer_service(api, namespace, service_name)
        service = ccm.wait_load_balancer(api, controller, namespace, service_name)
    print(f"the real cloud controller ({cluster_name}) made Service {namespace}/{service_name}'s load balancer in {time.monotonic() - began:.0f} s")
    name = f"kube_service_{cluster_name}_{namespace}_{service_name}"
    made = sdk(stack.cloud, SERVICE_MADE, name=name, group_name=f"lb-sg-{service['metadata']['uid']}-{namespace}-{service_name}")  # type: ignore[attr-defined]
    subnet = seen["subnets"][f"{infra}-nodes"]
    node_port = service["spec"]["ports"][0]["nodePort"]
    lb = made["load balancer"]
    assert (lb["tags"], lb["description"], lb["vip_subnet"], lb["status"]) == (
        [name], f"Kubernetes external service {namespace}/{service_name} from cluster {cluster_name}", subnet["id"], "ACTIVE"
    ), made
    assert made["listeners"] == [[f"listener_0_{name}", "TCP", 80, [name]]], made
    assert made["pools"] == {f"pool_0_{name}": sorted([n, str(node.ip), node_port] for n, node in nodes.items())}, made
    (floating,) = made["floating IPs"]
    assert (floating["network"], floating["description"]) == (
        made["external"], f"Floating IP for Kubernetes external service {namespace}/{service_name} from cluster {cluster_name}"
    ), floating
    assert [entry["ip"] for entry in service["status"]["loadBalancer"]["ingress"]] == [floating["address"]], service["status"]
    group = made["group"]
    assert group["description"] == f"Security Group for {namespace}/{service_name} Service LoadBalancer in cluster {cluster_name}", group
    assert ["tcp", node_port, node_port, subnet["cidr"]] in group["rules"], group
    assert made["ports with the group"] == sorted(nodes), made
    what = f"Service {namespace}/{service_name} (the real controller, cluster name {cluster_name})"
    return {f"{what}: load balancer": lb["id"], f"{what}: VIP port": lb["vip_port"], f"{what}: floating IP": floating["id"], f"{what}: security group": group["id"]}
