"""A stack's offline plan, written out, as the lab's nodes: what each one runs, from its files.

The lab runs the very files `tools.plan` writes for each node (`files/<absolute path>`);
roles, the machine network and the gateway come from the address plan. A *shape* changes
the node counts of the stack (a compact cluster, five masters) as a stack file would. The
lab runs the host's binaries, not images: images the stack does not set are given as
`ocp:networking.images` (LAB_IMAGES) so that the plan never depends on a recorded payload.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

from cluster.addresses import Role, plan_addresses
from cluster.networking import IMAGE_NAMES
from cluster.config import load_config
from ignition.networking import HAPROXY_CFG, KEEPALIVED_CONF
from harness.lab.keepalived import KeepalivedConf, parse
from tools.mock_run import run_program
from tools.plan import PlanError, stack_config, write_plan

# Node counts that differ from the stack's own ("as-is": none).
SHAPES: dict[str, dict[str, int]] = {
    "as-is": {},
    "compact": {"workers": 0},
    "five-masters": {"masters": 5},
}


# Never pulled: the lab runs the host's keepalived and haproxy.
LAB_IMAGES = {name: f"localhost/ocp-lab/{name}:host" for name in IMAGE_NAMES}


@dataclass(frozen=True)
class LabNode:
    name: str
    role: Role
    ip: IPv4Address
    files: Path  # every file Ignition would write on the node, under its absolute path
    keepalived: KeepalivedConf

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
    network: IPv4Network
    gateway: IPv4Address
    nodes: tuple[LabNode, ...]  # those that run keepalived, bootstrap first
    # A worker slot no node has: the address of a node created while the lab runs.
    spare_worker: IPv4Address

    @property
    def label(self) -> str:
        return self.stack if self.shape == "as-is" else f"{self.stack}/{self.shape}"

    def vip(self, name: str) -> IPv4Address:
        return next(instance.vip for node in self.nodes if (instance := node.keepalived.instance(name)))

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
    for role, count in SHAPES[shape].items():
        section = json.loads(config.get(f"ocp:{role}", "{}"))
        config[f"ocp:{role}"] = json.dumps({**section, "count": count})
    networking = json.loads(config.get("ocp:networking", "{}"))
    config["ocp:networking"] = json.dumps({**networking, "images": {**LAB_IMAGES, **networking.get("images", {})}})
    write_plan(run_program(config, stack=stack_name), out)
    addresses = plan_addresses(load_config(config))
    nodes = []
    for node in addresses.nodes:
        files = out / "nodes" / node.name / "files"
        conf = files / KEEPALIVED_CONF.lstrip("/")
        if conf.is_file():
            nodes.append(LabNode(node.name, node.role, node.ip, files, parse(conf.read_text())))
    if not nodes:
        raise PlanError(
            f"no node of stack {stack_name} runs this program's keepalived: the lab needs a stack whose nodes get "
            "the on-node networking (ocp:openstack.mode standalone, or libvirt), e.g. --stack standalone"
        )
    spare = addresses.worker_slots[addresses.worker_count :]
    if not spare:
        raise PlanError(f"stack {stack_name} has no free worker slot for a new node: raise ocp:workers.maxCount")
    return LabPlan(stack_name, shape, addresses.network, addresses.gateway, tuple(nodes), spare[0].ip)
