"""`<local cloud venv>/bin/python -m harness.cluster_standin INFRA_ID [--cloud NAME] [--network NET] [--only STEP ...]`:
does to the deployed stack of that infra ID what its live cluster's controllers would (see __init__.py), as
the tenant of clouds.yaml entry NAME (default `openstack`), and prints what it made as JSON.

--network: the network the user gave the stack (ocp:openstack.existingNetwork, by name or ID) instead of the
stack's own `<infraID>-openshift`; the nodes are the ports named by the infra ID there (other clusters' and
projects' ports live on it too), their subnet the one the controllers use, and the load balancers' floating
IPs go to the external network of a router on that subnet (none without one: the cloud provider then makes
none). --only: some of the steps (services, legacy-service, egressip, machineset), each once."""

from __future__ import annotations

import argparse
import json
import sys

import openstack

from harness.cluster_standin import cinder_csi, cloud_provider, egressip, machine_api, manila_csi


STEPS = ("services", "legacy-service", "egressip", "machineset")


def act(conn, infra: str, given: str | None = None, only: tuple[str, ...] = STEPS) -> dict:
    if given is None:
        network = conn.network.find_network(f"{infra}-openshift", ignore_missing=False)
        subnet = conn.network.find_subnet(f"{infra}-nodes", ignore_missing=False)
    else:
        network = conn.network.find_network(given, ignore_missing=False)
    nodes = [
        port for port in conn.network.ports(network_id=network.id)
        if (port.device_owner or "").startswith("compute:") and (port.name or "").startswith(f"{infra}-")
    ]
    # Every node is a member, masters too, as the real controller (v1.33.0) makes them in the lifecycle's dev stack:
    # it leaves out only Nodes labelled node.kubernetes.io/exclude-from-external-load-balancers.
    members = sorted(nodes, key=lambda port: port.name)
    if not members:
        raise SystemExit(f"cluster_standin: no node ports of {infra} on {network.name}: is its stack deployed?")
    if given is not None:  # the cloud provider and the controller take the subnet of the node's address
        subnet = conn.network.get_subnet(members[0].fixed_ips[0]["subnet_id"])
    external = _external_network(conn, subnet)
    workers = [port for port in members if port.name.startswith(f"{infra}-worker-")]
    model = conn.compute.get_server((workers or members)[0].device_id)
    made = {}
    # 4.16 and later: the CCM's cluster name is the infra ID; 4.14 and 4.15: `kubernetes`.
    if "services" in only:
        made["Service demo/web (4.16+)"] = cloud_provider.load_balancer(conn, infra, "demo", "web", subnet, members, external, 30080)
    if "services" in only or "legacy-service" in only:
        made["Service legacy/web (4.14, 4.15)"] = cloud_provider.load_balancer(
            conn, cloud_provider.LEGACY_CLUSTER_NAME, "legacy", "web", subnet, members, external, 30081
        )
    if "egressip" in only:
        made["EgressIP"] = egressip.egress_ip(conn, subnet, members[0])
    if "machineset" not in only:
        return made
    group = conn.network.find_security_group(f"{infra}-worker") or conn.network.find_security_group(f"{infra}-master", ignore_missing=False)
    # A MachineSet like the installer's: the workers' flavor and image (a server booted from a volume shows none: rhcos then).
    image = (model.image or {}).get("id") or "rhcos"
    machine = machine_api.machine_on_trunk(conn, infra, network, group, model.flavor["original_name"], image)
    made["MachineSet on a trunk"] = machine
    made["PVC with a snapshot"] = cinder_csi.volume_with_snapshot(conn, infra, machine["MachineSet server"])
    if conn.has_service("shared-file-system"):  # Manila CSI is deployed where the cloud has Manila
        made["shared PVC with a snapshot"] = manila_csi.share_with_snapshot(conn, infra)
    return made


def _external_network(conn, subnet):
    """The external network of the router with an interface on the subnet (the stack's own, or the user's), if any."""
    for port in conn.network.ports(network_id=subnet.network_id, device_owner="network:router_interface"):
        if any(fixed["subnet_id"] == subnet.id for fixed in port.fixed_ips):
            gateway = conn.network.get_router(port.device_id).external_gateway_info or {}
            if gateway.get("network_id"):
                return conn.network.get_network(gateway["network_id"])
    return None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.cluster_standin", description=__doc__)
    parser.add_argument("infra_id")
    parser.add_argument("--cloud", default="openstack")
    parser.add_argument("--network", default=None)
    parser.add_argument("--only", nargs="+", choices=STEPS, default=list(STEPS))
    options = parser.parse_args(argv)
    json.dump(act(openstack.connect(cloud=options.cloud), options.infra_id, options.network, tuple(options.only)), sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
