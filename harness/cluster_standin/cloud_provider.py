"""What the cloud controller manager (cloud-provider-openstack's OpenStack cloud provider) makes
for a Service of type LoadBalancer.

- pkg/openstack/loadbalancer.go: GetLoadBalancerName names it `kube_service_<cluster-name>_<ns>_<svc>`
  (servicePrefix, lbFormat); createOctaviaLoadBalancer describes it `Kubernetes external service
  <ns>/<svc> from cluster <cluster-name>`, tags it with its name and puts its VIP on the node
  subnet; listeners `listener_<n>_<name>` and pools `pool_<n>_<name>` with one member per node;
  ensureFloatingIP puts a floating IP on the VIP port, described `Floating IP for Kubernetes
  external service <ns>/<svc> from cluster <cluster-name>`.
- pkg/openstack/loadbalancer_sg.go: ensureAndUpdateOctaviaSecurityGroup (manage-security-groups)
  makes `lb-sg-<service uid>-<ns>-<svc>`, described `Security Group for <ns>/<svc> Service
  LoadBalancer in cluster <cluster-name>`, untagged, with a rule per NodePort from the member
  subnet; applyNodeSecurityGroupIDForLB appends it to every member's port.
- The cluster name is the infra ID from 4.16 (the CCM operator passes --cluster-name); on 4.14
  and 4.15 it is `kubernetes` (FACTS §12).
"""

from __future__ import annotations

import uuid

LEGACY_CLUSTER_NAME = "kubernetes"


def load_balancer(conn, cluster_name: str, namespace: str, service: str, subnet, node_ports: list, external_network, node_port: int) -> dict:
    name = f"kube_service_{cluster_name}_{namespace}_{service}"
    lb = conn.load_balancer.create_load_balancer(
        name=name,
        description=f"Kubernetes external service {namespace}/{service} from cluster {cluster_name}",
        vip_subnet_id=subnet.id,
        tags=[name],
    )
    _active(conn, lb)
    listener = conn.load_balancer.create_listener(
        name=f"listener_0_{name}", protocol="TCP", protocol_port=80, load_balancer_id=lb.id, tags=[name]
    )
    _active(conn, lb)
    pool = conn.load_balancer.create_pool(name=f"pool_0_{name}", protocol="TCP", lb_algorithm="ROUND_ROBIN", listener_id=listener.id)
    _active(conn, lb)
    for port in node_ports:
        conn.load_balancer.create_member(pool, name=port.name, address=port.fixed_ips[0]["ip_address"], protocol_port=node_port, subnet_id=subnet.id)
        _active(conn, lb)
    lb = conn.load_balancer.get_load_balancer(lb.id)
    # ensureFloatingIP: only where a floating network is known (the router's); none otherwise.
    floating_ip = external_network and conn.network.create_ip(
        floating_network_id=external_network.id,
        port_id=lb.vip_port_id,
        description=f"Floating IP for Kubernetes external service {namespace}/{service} from cluster {cluster_name}",
    )
    group = conn.network.create_security_group(
        name=f"lb-sg-{uuid.uuid4()}-{namespace}-{service}",
        description=f"Security Group for {namespace}/{service} Service LoadBalancer in cluster {cluster_name}",
    )
    conn.network.create_security_group_rule(
        security_group_id=group.id, direction="ingress", ethertype="IPv4", protocol="tcp",
        port_range_min=node_port, port_range_max=node_port, remote_ip_prefix=subnet.cidr,
    )
    for port in node_ports:
        current = conn.network.get_port(port.id)
        conn.network.update_port(current, security_groups=[*current.security_group_ids, group.id])
    made = {"load balancer": lb.id, "VIP port": lb.vip_port_id, "security group": group.id}
    return made | ({"floating IP": floating_ip.id} if floating_ip else {})


def _active(conn, lb) -> None:
    conn.load_balancer.wait_for_load_balancer(lb.id, status="ACTIVE", failures=["ERROR"], interval=1, wait=300)
