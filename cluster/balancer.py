"""What a load balancer of the user's own must front (`ocp:loadBalancer: UserManaged`). Pure Python.

The installer's contract for `platform.openstack.loadBalancer.type: UserManaged` (and the UPI
guides'): the balancer holds the API VIP and the Ingress VIP as its frontend addresses, on the
machine network or routed to it, and no node runs keepalived or haproxy. One pool per frontend
port, each with the health check that tells a member serving from one that is not:

- 6443, the API: the bootstrap (while it exists) and the masters, `GET /readyz` over HTTPS;
- 22623, the machine config server: the same members, `GET /healthz` over HTTPS;
- 22624, its plain-HTTP listener, only where the nodes' pointer configs fetch from it (standalone
  mode and libvirt: `http://<API VIP>:22624/config/<role>`, ignition.nodes): `GET /healthz`;
- 80 and 443, the routers: the router nodes, `GET /healthz/ready` on 1936 over HTTP.

The bootstrap is a member until it is removed (`bootstrap.enabled: false`): take it out of the
pools then. The machine config server's frontends (22623, 22624) are internal: it serves every
node's config, secrets included, to whoever asks, so they must not be reachable from beyond the
machine network, though they share the API VIP with 6443. docs/networking.md ("A load balancer of
your own") has the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from cluster.addresses import AddressPlan, Node, host_port
from cluster.config import ClusterConfig
from cluster.networking import API_PORT, MCS_HTTP_PORT, ROUTER_HEALTH_PORT

MCS_PORT = 22623
INGRESS_HTTP_PORT = 80
INGRESS_HTTPS_PORT = 443
# Why a frontend is internal (`Pool.internal`), as the stack's loadBalancerPools output says it.
INTERNAL_WHY = (
    "the machine config server serves the nodes' configs, secrets included, to whoever asks: "
    "listen on the machine network only, never beyond it (unlike 6443 on the same VIP)"
)


@dataclass(frozen=True)
class Pool:
    """One frontend of the balancer and the members behind it."""

    name: str
    vip: str  # api or ingress: which VIP the frontend listens on
    port: int  # the frontend's port, and the members' (TCP passed through)
    check_port: int
    check_scheme: str  # http or https (the members' certificates: verify none)
    check_path: str
    members: tuple[Node, ...]

    @property
    def internal(self) -> bool:
        """Whether the frontend must stay on the machine network (INTERNAL_WHY)."""
        return self.port in (MCS_PORT, MCS_HTTP_PORT)

    @property
    def check(self) -> str:
        return f"{self.check_scheme.upper()} GET {self.check_path} on {self.check_port}"


def pools(config: ClusterConfig, plan: AddressPlan) -> tuple[Pool, ...]:
    """Every pool the user's balancer needs now, members as this configuration has them (the
    bootstrap only while it exists; routers where they were placed at install: pass the plan
    cluster.day2.installed_plan gives)."""
    control_plane = ((plan.bootstrap,) if plan.bootstrap_enabled else ()) + plan.masters
    result = [
        Pool("api", "api", API_PORT, API_PORT, "https", "/readyz", control_plane),
        Pool("machine-config", "api", MCS_PORT, MCS_PORT, "https", "/healthz", control_plane),
    ]
    if not config.integrated:
        result.append(Pool("machine-config-http", "api", MCS_HTTP_PORT, MCS_HTTP_PORT, "http", "/healthz", control_plane))
    for name, port in (("ingress-http", INGRESS_HTTP_PORT), ("ingress-https", INGRESS_HTTPS_PORT)):
        result.append(Pool(name, "ingress", port, ROUTER_HEALTH_PORT, "http", "/healthz/ready", plan.router_nodes))
    return tuple(result)


def frontend(plan: AddressPlan, pool: Pool) -> str:
    """`<VIP>:<port>`: where the balancer listens for `pool`."""
    return host_port(plan.api_vip if pool.vip == "api" else plan.ingress_vip, pool.port)
