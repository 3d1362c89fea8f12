"""What the Machine API (machine-api-provider-openstack, on CAPO's networking service) makes
for a Machine of a MachineSet that sets `trunk: true`, as the installer's MachineSets do where
Neutron has the `trunk` extension: the port `<machine>-0` with the cluster's tag and the
machine's security group, a trunk with the port as its parent, named and described as the port
and tagged alike (CAPO pkg/cloud/services/networking/trunk.go getOrCreateTrunkForPort, tags as
the port's), then the server `<machine>` on that port with the cluster's tag.
"""

from __future__ import annotations

import secrets
import string


def machine_on_trunk(conn, infra: str, network, group, flavor: str, image: str) -> dict:
    tag = f"openshiftClusterID={infra}"
    suffix = "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(5))
    machine = f"{infra}-worker-0-{suffix}"
    port = conn.network.create_port(name=f"{machine}-0", network_id=network.id, security_group_ids=[group.id], description="Created by cluster-api-provider-openstack")
    conn.network.set_tags(port, [tag])
    trunk = conn.network.create_trunk(name=port.name, port_id=port.id, description=port.description)
    conn.network.set_tags(trunk, [tag])
    server = conn.compute.create_server(
        name=machine, flavor_id=conn.compute.find_flavor(flavor).id, image_id=conn.image.find_image(image).id, networks=[{"port": port.id}], tags=[tag]
    )
    server = conn.compute.wait_for_server(server, interval=1, wait=300)
    return {"MachineSet server": server.id, "trunk": trunk.id, "trunk's parent port": port.id}
