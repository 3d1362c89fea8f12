"""Run the real program (`__main__.py`) under Pulumi mocks: no cloud, no Pulumi CLI.

Each run gets a fresh event loop and a fresh `contextvars` context (Pulumi keeps its
settings and root stack in context variables), so runs never leak into each other. The
mocks answer like the providers would, and the installer's command is answered by the
fake installer (`tools.sample_installer`), fed the very install-config the program built.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import runpy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime.rpc import _special_secret_sig, _special_sig_key
from pulumi.runtime.settings import SETTINGS
from pulumi.runtime.stack import wait_for_rpcs

from ignition.installer_assets import bundle
from tools import sample_installer

PROGRAM = Path(__file__).resolve().parent.parent / "__main__.py"
SECRET_MASK = "[secret]"


@dataclass
class Resource:
    type: str
    name: str
    parent: str | None  # the parent's URN; None for children of the stack
    urn: str
    inputs: dict[str, Any]  # secrets still wrapped, see unwrap() and mask()
    dependencies: tuple[str, ...] = ()  # URNs of explicit depends_on

    @property
    def secret_paths(self) -> list[str]:
        return _secret_paths(self.inputs, "")


@dataclass
class ProgramRun:
    resources: list[Resource] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    secret_outputs: set[str] = field(default_factory=set)

    def of_type(self, type_: str) -> list[Resource]:
        return [resource for resource in self.resources if resource.type == type_]

    def by_name(self, name: str) -> Resource:
        return next(resource for resource in self.resources if resource.name == name)


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(_special_sig_key) == _special_secret_sig


def unwrap(value: Any) -> Any:
    """The plain value, secrets revealed."""
    if is_secret(value):
        return unwrap(value["value"])
    if isinstance(value, dict):
        return {key: unwrap(item) for key, item in value.items()}
    if isinstance(value, list):
        return [unwrap(item) for item in value]
    return value


def mask(value: Any) -> Any:
    """The value with every secret replaced by "[secret]"."""
    if is_secret(value):
        return SECRET_MASK
    if isinstance(value, dict):
        return {key: mask(item) for key, item in value.items()}
    if isinstance(value, list):
        return [mask(item) for item in value]
    return value


def _secret_paths(value: Any, path: str) -> list[str]:
    if is_secret(value):
        return [path or "."]
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in _secret_paths(item, f"{path}.{key}" if path else key)]
    if isinstance(value, list):
        return [p for index, item in enumerate(value) for p in _secret_paths(item, f"{path}[{index}]")]
    return []


class ClusterMocks(pulumi.runtime.Mocks):
    """Provider answers: stable ids, documentation-range floating IPs, the fake installer's output."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        state = dict(args.inputs)
        if args.typ == "command:local:Command":
            install_config = unwrap(args.inputs["environment"])["INSTALL_CONFIG"]
            state["stdout"] = bundle(sample_installer.generate(install_config))
            state["stderr"] = ""
        elif args.typ == "command:remote:Command":
            state["stdout"], state["stderr"] = "", ""
        elif args.typ == "openstack:networking/floatingIp:FloatingIp":
            # 203.0.113.0/24 is TEST-NET-3: never reachable by mistake. Derived from the name,
            # so the address does not depend on the order resources register in.
            state["address"] = f"203.0.113.{int(hashlib.sha256(args.name.encode()).hexdigest(), 16) % 250 + 1}"
        elif args.typ == "openstack:networking/floatingIpAssociate:FloatingIpAssociate":
            state["floatingIp"] = unwrap(args.inputs["floatingIp"])
        digest = hashlib.sha256(f"{args.typ}/{args.name}".encode()).hexdigest()[:12]
        return f"{args.name}-{digest}", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        if args.token == "openstack:networking/getNetwork:getNetwork":
            return {"id": f"network-{args.args.get('name')}", "name": args.args.get("name")}
        if args.token == "openstack:images/getImage:getImage":
            return {"id": f"image-{args.args.get('name')}", "name": args.args.get("name")}
        return {}


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """The mock monitor, also keeping each resource's parent and raw inputs, in order."""

    def __init__(self, mocks: pulumi.runtime.Mocks, run: ProgramRun):
        super().__init__(mocks)
        self.run = run

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            inputs = pulumi.runtime.rpc.deserialize_properties(request.object, keep_unknowns=True)
            self.run.resources.append(
                Resource(
                    request.type, request.name, request.parent or None, response.urn, inputs, tuple(request.dependencies)
                )
            )
        return response


def run_program(
    config: dict[str, str],
    stack: str = "dev",
    secret_keys: tuple[str, ...] = ("ocp:pullSecret",),
    into: ProgramRun | None = None,
) -> ProgramRun:
    """Evaluate `__main__.py` with this config; raises what the program raises (pulumi.RunError).

    Pass `into` to keep what was registered even when the program fails."""
    return contextvars.Context().run(_run, config, stack, secret_keys, into or ProgramRun())


def _run(config: dict[str, str], stack: str, secret_keys: tuple[str, ...], run: ProgramRun) -> ProgramRun:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        mocks = ClusterMocks()
        # Pending outputs live in a module-wide set that set_mocks does not reset: a failed run
        # would leave tasks of its closed loop there, and the next run would wait for them forever.
        SETTINGS.outputs.clear()
        pulumi.runtime.set_all_config(dict(config), list(secret_keys))
        pulumi.runtime.set_mocks(mocks, project="ocp", stack=stack, preview=False, monitor=RecordingMonitor(mocks, run))
        runpy.run_path(str(PROGRAM), run_name="__main__")
        loop.run_until_complete(wait_for_rpcs())
        root = pulumi.runtime.get_root_resource()
        run.outputs, run.secret_outputs = loop.run_until_complete(_resolve_outputs(root.outputs if root else {}))
    finally:
        # A failed program leaves RPCs under way (the root stack's registration at least):
        # let them finish, so nothing is destroyed while pending.
        pending = asyncio.all_tasks(loop)
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        SETTINGS.outputs.clear()
        loop.close()
        asyncio.set_event_loop(None)
    return run


async def _resolve_outputs(outputs: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    values, secrets = {}, set()
    for key, value in outputs.items():
        output = pulumi.Output.from_input(value)
        values[key] = await output.future()
        if await output.is_secret():
            secrets.add(key)
    return values, secrets
