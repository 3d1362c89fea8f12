"""What cloud-network-config-controller does for an EgressIP on OpenStack
(pkg/cloudprovider/openstack.go): AssignPrivateIP reserves the address with
reserveNeutronIPAddress, an unbound port `egressip-<ip>` on the node's subnet with that fixed
IP, device_owner `OpenShiftEgressIP` and device_id `OpenShiftEgressIP_<server id>`, no tags;
then allowIPAddressOnNeutronPort appends the IP to the node port's allowed_address_pairs.
"""

from __future__ import annotations

import ipaddress

DEVICE_OWNER = "OpenShiftEgressIP"


def egress_ip(conn, subnet, node_port) -> dict:
    address = _free_address(conn, subnet)
    reservation = conn.network.create_port(
        name=f"egressip-{address}",
        network_id=subnet.network_id,
        fixed_ips=[{"subnet_id": subnet.id, "ip_address": address}],
        device_owner=DEVICE_OWNER,
        device_id=f"{DEVICE_OWNER}_{node_port.device_id}",
    )
    current = conn.network.get_port(node_port.id)
    conn.network.update_port(current, allowed_address_pairs=[*(current.allowed_address_pairs or []), {"ip_address": address}])
    return {"EgressIP port": reservation.id, "EgressIP": address, "node port": node_port.id}


def _free_address(conn, subnet) -> str:
    """The highest address of the subnet that no port holds (an EgressIP the user chose)."""
    taken = {fixed["ip_address"] for port in conn.network.ports(network_id=subnet.network_id) for fixed in port.fixed_ips}
    network = ipaddress.ip_network(subnet.cidr)
    return next(str(host) for host in reversed(list(network.hosts())[-64:]) if str(host) not in taken and str(host) != subnet.gateway_ip)
