"""A stack's offline plan, written out, as the lab's nodes: what each one runs, from its files.

The lab runs the very files `tools.plan` writes for each node (`files/<absolute path>`);
roles, the machine network and the gateway come from the address plan. A *shape* changes
the node counts of the stack (a compact cluster, five masters) as a stack file would. The
lab runs the host's binaries, not images: images the stack does not set are given as
`ocp:networking.images` (LAB_IMAGES) so that the plan never depends on a recorded payload.
A shape may add an address family too: `dual-stack` (compact) puts an IPv6 machine network
after the stack's IPv4 one, and every scenario measures the IPv6 VIPs (keepalived's instances
`api_ipv6`, `ingress_ipv6`) while the IPv4 ones run beside them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from pathlib import Path

from cluster.addresses import Role, plan_addresses
from cluster.networking import IMAGE_NAMES
from cluster.config import load_config
from ignition.networking import HAPROXY_CFG, KEEPALIVED_CONF
from harness.lab.keepalived import KeepalivedConf, parse
from tools import mock_cloud
from tools.mock_run import run_program
from tools.plan import PlanError, stack_config, write_plan

# Node counts that differ from the stack's own ("as-is": none).
SHAPES: dict[str, dict[str, int]] = {
    "as-is": {},
    "compact": {"workers": 0},
    "five-masters": {"masters": 5},
    "dual-stack": {"workers": 0},
}
# A family a shape adds after the stack's own: its (machine, cluster, service) networks, ULA.
LAB_IPV6 = ("fd0c:1ab::/64", {"cidr": "fd0c:1ab:1::/48", "hostPrefix": 64}, "fd0c:1ab:2::/112")
SECOND_FAMILY = {"dual-stack": LAB_IPV6}
Address = IPv4Address | IPv6Address


# Never pulled: the lab runs the host's keepalived and haproxy.
LAB_IMAGES = {name: f"localhost/ocp-lab/{name}:host" for name in IMAGE_NAMES}


@dataclass(frozen=True)
class LabNode:
    name: str
    role: Role
    ips: tuple[Address, ...]  # one per family, the primary first
    files: Path  # every file Ignition would write on the node, under its absolute path
    keepalived: KeepalivedConf

    @property
    def ip(self) -> Address:
        return self.ips[0]

    def file(self, path: str) -> Path:
        return self.files / path.lstrip("/")

    @property
    def runs_haproxy(self) -> bool:
        return self.file(HAPROXY_CFG).is_file()

    def may_hold(self, vip: str) -> bool:
        return self.keepalived.instance(vip) is not None


@dataclass(frozen=True)
class LabPlan:
    stack: str
    shape: str
    networks: tuple[IPv4Network | IPv6Network, ...]  # the primary first
    gateways: tuple[Address, ...]
    nodes: tuple[LabNode, ...]  # those that run keepalived, bootstrap first
    # A worker slot no node has: the addresses of a node created while the lab runs.
    spare_worker: tuple[Address, ...]
    # The IP version of the VIPs the scenarios observe (0: the primary family's).
    observed: int = 0

    @property
    def network(self) -> IPv4Network | IPv6Network:
        return self.networks[0]

    @property
    def gateway(self) -> Address:
        return self.gateways[0]

    def interfaces(self, ips: tuple[Address, ...]) -> list[str]:
        """`ips` (one per family) as interface addresses in their networks, the primary first."""
        return [f"{ip}/{network.prefixlen}" for ip, network in zip(ips, self.networks, strict=True)]

    @property
    def label(self) -> str:
        return self.stack if self.shape == "as-is" else f"{self.stack}/{self.shape}"

    def vip(self, name: str) -> Address:
        """The VIP of keepalived's instance `name` (`api`, `ingress`) in the observed family."""
        version = self.observed or self.network.version
        return next(
            instance.vip
            for node in self.nodes
            for instance in node.keepalived.instances
            if instance.name in (name, f"{name}_ipv{version}") and instance.vip.version == version
        )

    def candidates(self, vip: str) -> tuple[LabNode, ...]:
        return tuple(node for node in self.nodes if node.may_hold(vip))

    def advert_int(self) -> float:
        return max(instance.advert_int for node in self.nodes for instance in node.keepalived.instances)

    def of_role(self, role: Role) -> tuple[LabNode, ...]:
        return tuple(node for node in self.nodes if node.role == role)


def load_plan(stack: str | None, config_file: str | None, shape: str, out: Path) -> LabPlan:
    """Evaluate the program for the stack (changed to `shape`) and write its plan to `out`.

    Raises tools.plan.PlanError for a missing stack file, pulumi.RunError for an invalid config."""
    stack_name, config, _notes = stack_config(stack, config_file, None)
    cloud = None  # the offline plan's own description
    for role, count in SHAPES[shape].items():
        section = json.loads(config.get(f"ocp:{role}", "{}"))
        config[f"ocp:{role}"] = json.dumps({**section, "count": count})
    if shape in SECOND_FAMILY:
        machine, cluster, service = SECOND_FAMILY[shape]
        stack = load_config(config)
        config["ocp:machineNetwork"] = json.dumps([str(stack.machine_network), machine])
        config["ocp:clusterNetwork"] = json.dumps(
            [{"cidr": str(stack.cluster_network.cidr), "hostPrefix": stack.cluster_network.host_prefix}, cluster]
        )
        config["ocp:serviceNetwork"] = json.dumps([str(stack.service_network), service])
        # A network the user brings, as two families need: one subnet per family, described to the
        # offline plan's cloud as the user's cloud would have them.
        cloud = mock_cloud.load()
        cloud["neutronNetworks"] = [{"id": "ocp-lab-nodes", "name": "ocp-lab-nodes", "subnets": ["ocp-lab-ipv4", "ocp-lab-ipv6"]}]
        cloud["subnets"] = [
            {"id": "ocp-lab-ipv4", "name": "ocp-lab-ipv4", "network": "ocp-lab-nodes", "cidr": str(stack.machine_network)},
            # The mode that lets Neutron hand out the planned addresses (the preflight insists).
            {"id": "ocp-lab-ipv6", "name": "ocp-lab-ipv6", "network": "ocp-lab-nodes", "cidr": machine, "ipv6AddressMode": "dhcpv6-stateful"},
        ]
        existing = {"networkId": "ocp-lab-nodes", "subnetId": ["ocp-lab-ipv4", "ocp-lab-ipv6"]}
        config["ocp:openstack"] = json.dumps({**json.loads(config.get("ocp:openstack", "{}")), "existingNetwork": existing})
    networking = json.loads(config.get("ocp:networking", "{}"))
    config["ocp:networking"] = json.dumps({**networking, "images": {**LAB_IMAGES, **networking.get("images", {})}})
    write_plan(run_program(config, stack=stack_name, cloud=cloud), out)
    addresses = plan_addresses(load_config(config))
    nodes = []
    for node in addresses.nodes:
        files = out / "nodes" / node.name / "files"
        conf = files / KEEPALIVED_CONF.lstrip("/")
        if conf.is_file():
            nodes.append(LabNode(node.name, node.role, node.ips, files, parse(conf.read_text())))
    if not nodes:
        raise PlanError(
            f"no node of stack {stack_name} runs this program's keepalived: the lab needs a stack whose nodes get "
            "the on-node networking (ocp:openstack.mode standalone, or libvirt), e.g. --stack standalone"
        )
    spare = addresses.worker_slots[addresses.worker_count :]
    if not spare:
        raise PlanError(f"stack {stack_name} has no free worker slot for a new node: raise ocp:workers.maxCount")
    observed = 6 if shape in SECOND_FAMILY else 0
    return LabPlan(stack_name, shape, addresses.networks, addresses.gateways, tuple(nodes), spare[0].ips, observed)
