"""`<local cloud venv>/bin/python -m harness.cluster_standin INFRA_ID [--cloud NAME]`: does to the
deployed stack of that infra ID what its live cluster's controllers would (see __init__.py), as
the tenant of clouds.yaml entry NAME (default `openstack`), and prints what it made as JSON."""

from __future__ import annotations

import argparse
import json
import sys

import openstack

from harness.cluster_standin import cinder_csi, cloud_provider, egressip, machine_api, manila_csi


def act(conn, infra: str) -> dict:
    network = conn.network.find_network(f"{infra}-openshift", ignore_missing=False)
    subnet = conn.network.find_subnet(f"{infra}-nodes", ignore_missing=False)
    router = conn.network.find_router(f"{infra}-external-router", ignore_missing=False)
    external = conn.network.get_network(router.external_gateway_info["network_id"])
    nodes = [port for port in conn.network.ports(network_id=network.id) if (port.device_owner or "").startswith("compute:")]
    workers = sorted((port for port in nodes if port.name.startswith(f"{infra}-worker-")), key=lambda port: port.name)
    members = workers or sorted((port for port in nodes if port.name.startswith(f"{infra}-master-")), key=lambda port: port.name)
    if not members:
        raise SystemExit(f"cluster_standin: no node ports of {infra} on {network.name}: is its stack deployed?")
    model = conn.compute.get_server(members[0].device_id)
    made = {
        # 4.16 and later: the CCM's cluster name is the infra ID; 4.14 and 4.15: `kubernetes`.
        "Service demo/web (4.16+)": cloud_provider.load_balancer(conn, infra, "demo", "web", subnet, members, external, 30080),
        "Service legacy/web (4.14, 4.15)": cloud_provider.load_balancer(
            conn, cloud_provider.LEGACY_CLUSTER_NAME, "legacy", "web", subnet, members, external, 30081
        ),
        "EgressIP": egressip.egress_ip(conn, subnet, members[0]),
    }
    group = conn.network.find_security_group(f"{infra}-worker") or conn.network.find_security_group(f"{infra}-master", ignore_missing=False)
    # A MachineSet like the installer's: the workers' flavor and image (a server booted from a volume shows none: rhcos then).
    image = (model.image or {}).get("id") or "rhcos"
    machine = machine_api.machine_on_trunk(conn, infra, network, group, model.flavor["original_name"], image)
    made["MachineSet on a trunk"] = machine
    made["PVC with a snapshot"] = cinder_csi.volume_with_snapshot(conn, infra, machine["MachineSet server"])
    if conn.has_service("shared-file-system"):  # Manila CSI is deployed where the cloud has Manila
        made["shared PVC with a snapshot"] = manila_csi.share_with_snapshot(conn, infra)
    return made


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.cluster_standin", description=__doc__)
    parser.add_argument("infra_id")
    parser.add_argument("--cloud", default="openstack")
    options = parser.parse_args(argv)
    json.dump(act(openstack.connect(cloud=options.cloud), options.infra_id), sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
