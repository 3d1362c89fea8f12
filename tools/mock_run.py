"""Run the real program (`__main__.py`) under Pulumi mocks: no cloud, no Pulumi CLI.

Each run gets a fresh event loop and a fresh `contextvars` context (Pulumi keeps its
settings and root stack in context variables), so runs never leak into each other. The
mocks answer like the providers would, and the installer's command is answered by its run
script (cluster/installer.py) with the real `openshift-install` of the toolchain where it can
run here (platform none: tools/real_installer.py), else with the fake installer
(`tools.sample_installer`), fed the very install-config the program built.

Given a deployed state (`tools.preview.Engine`), a run is the *next* `pulumi up` of that
stack: what the engine keeps between runs (outputs of unchanged resources, so the
installer's configs and infra ID; ignored inputs) comes from the state, and every
registration gets the step the engine would take.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import contextvars
import hashlib
import json
import logging
import os
import runpy
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.rpc import _special_secret_sig, _special_sig_key
from pulumi.runtime.settings import SETTINGS
from pulumi.runtime.stack import wait_for_rpcs
from pulumi.runtime.sync_await import _sync_await

from cluster.cloud_provider_config import MERGE_AWK
from cluster.installer import RECORD_FILE, RELEASE_FILE, ROOT_FILE, bundle, read_script, unbundle, upi_manifests
from components import program
from tools import real_installer, sample_installer
from tools.mock_cloud import MockCloud
from tools.preview import Deployed, Engine

PROGRAM = Path(__file__).resolve().parent.parent / "__main__.py"
SECRET_MASK = "[secret]"
# Steps after which a resource keeps its id (and, but for its inputs, its outputs).
KEEPS_IDENTITY = {"same", "update", "resize", "rebuild"}


@dataclass
class Resource:
    type: str
    name: str
    parent: str | None  # the parent's URN; None for children of the stack
    urn: str
    inputs: dict[str, Any]  # as the program registered them, secrets still wrapped: see unwrap() and mask()
    dependencies: tuple[str, ...] = ()  # URNs of explicit depends_on
    options: dict[str, Any] = field(default_factory=dict)
    custom: bool = True
    id: str = ""
    kept_inputs: dict[str, Any] = field(default_factory=dict)  # what the engine keeps (ignored inputs as deployed), plain
    outputs: dict[str, Any] = field(default_factory=dict)  # plain
    action: str = "create"

    @property
    def secret_paths(self) -> list[str]:
        return _secret_paths(self.inputs, "")


@dataclass
class ProgramRun:
    resources: list[Resource] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    secret_outputs: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)
    installer: str | None = None  # which installer made the configs, when this run made them
    installer_kind: str | None = None  # "user" (the user's own), "toolchain" (its build) or "fake"

    def of_type(self, type_: str) -> list[Resource]:
        return [resource for resource in self.resources if resource.type == type_]

    def by_name(self, name: str) -> Resource:
        return next(resource for resource in self.resources if resource.name == name)

    def state(self) -> list[dict[str, Any]]:
        """What the engine would store after this run: enough for `deployed_from` to take it up."""
        return [
            {
                "type": r.type,
                "name": r.name,
                "urn": r.urn,
                "id": r.id,
                "custom": r.custom,
                "inputs": r.kept_inputs,
                "outputs": r.outputs,
                "secretInputs": sorted({path.split(".")[0].split("[")[0] for path in r.secret_paths}),
                "deleteBeforeReplace": bool(r.options.get("deleteBeforeReplace")),
                "protect": bool(r.options.get("protect")),
            }
            for r in self.resources
        ]


def deployed_from(state: list[dict[str, Any]]) -> Engine:
    """An engine whose deployed state is what `ProgramRun.state()` wrote."""
    return Engine(
        {
            item["urn"]: Deployed(
                item["type"],
                item["name"],
                item["urn"],
                item["id"],
                item["inputs"],
                item["outputs"],
                tuple(item.get("secretInputs", ())),
                item.get("deleteBeforeReplace", False),
                item.get("protect", False),
            )
            for item in state
        }
    )


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
    """Provider answers: stable ids, documentation-range floating IPs, the installer run's output."""

    def __init__(self, now: float, cloud: MockCloud | None = None, user_installer: Path | None = None):
        self.now = now
        self.cloud = cloud or MockCloud()
        self.user_installer = user_installer
        self.installer: str | None = None
        self.installer_kind: str | None = None

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        state = dict(args.inputs)
        if args.typ == "command:local:Command" and args.name == "installer-run":
            state["stdout"] = self._installer_run(unwrap(args.inputs["environment"]))
            state["stderr"] = ""
        elif args.typ == "command:local:Command":  # run as pulumi-command runs it (the cleanup's is a no-op)
            state["stdout"], state["stderr"] = self._local_command(args.name, unwrap(args.inputs))
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

    @staticmethod
    def _local_command(name: str, inputs: dict[str, Any]) -> tuple[str, str]:
        """The command's create, run here with its environment; a failure fails the resource. One
        fed from stdin writes what it is given (the Glance upload's file), and one that tags a network in
        the cloud (cluster/network_tag.py): not run offline."""
        if inputs.get("stdin") or "-m cluster.network_tag" in inputs["create"]:
            return "", ""
        interpreter = inputs.get("interpreter") or ["/bin/sh", "-c"]
        environment = {"PATH": os.environ["PATH"], **(inputs.get("environment") or {})}
        result = subprocess.run([*interpreter, inputs["create"]], env=environment, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise pulumi.RunError(f"{name}: {result.stderr.strip()}")
        return result.stdout, result.stderr

    def _installer_run(self, environment: dict[str, str]) -> str:
        """What cluster.installer.run_script prints: made by the real installer where it runs here,
        else by the fake one."""
        if "ASSETS_DIR" in environment:  # the user's configs: the very read_script, run
            result = subprocess.run(
                ["bash", "-c", read_script()], env={"PATH": os.environ["PATH"], **environment}, capture_output=True, text=True
            )
            if result.returncode != 0:
                raise pulumi.RunError(f"installer-run: {result.stderr.strip()}")
            files = unbundle(result.stdout)
            return bundle({**files, ROOT_FILE: _plan_root(files)})
        record = {
            "generatedAt": int(self.now),
            "generation": int(environment["GENERATION"]),
            "stack": json.loads(environment["INSTALL_FACTS"]),
            "masterPointers": True,  # as run_script records it
        }
        if real_installer.serves(environment, self.user_installer):
            try:
                files = unbundle(real_installer.bundle(environment, self.user_installer))
            except RuntimeError as error:
                raise pulumi.RunError(f"installer-run: {error}") from None
            files[RECORD_FILE] = json.dumps(record).encode()  # made at the engine's clock, not the process's
            self.installer = real_installer.version(self.user_installer)
            self.installer_kind = "user" if self.user_installer else "toolchain"
            return bundle(files)
        install_config = environment["INSTALL_CONFIG"]
        added = _added_manifests(environment)
        if environment.get("PLATFORM") == "openstack" or added:  # create manifests, the UPI edits, the stack's own, create ignition-configs
            manifests = sample_installer.manifests(install_config)
            if environment.get("PLATFORM") == "openstack":
                manifests = upi_manifests(manifests)
            clash = sorted(set(added) & set(manifests))
            if clash:  # as the run script refuses it
                name = clash[0].removeprefix("openshift/")
                raise pulumi.RunError(f"installer-run: ocp:installer.extraManifests: {name} would replace the installer's own {clash[0]}")
            if environment.get("CLOUD_PROVIDER_CONFIG"):  # merged by the run script's own awk program
                manifests[CLOUD_CONFIG] = _merged_cloud_config(manifests[CLOUD_CONFIG], environment["CLOUD_PROVIDER_CONFIG"])
            files = sample_installer.ignition_configs(install_config, {**manifests, **added})
        else:
            files = sample_installer.generate(install_config)
        release = sample_installer.release_images()
        wanted = environment.get("RELEASE_COMPONENTS", "").split()
        release["images"] = {name: ref for name, ref in release["images"].items() if name in wanted}
        files[RECORD_FILE] = json.dumps(record).encode()
        files[RELEASE_FILE] = json.dumps(release).encode()
        files[ROOT_FILE] = _plan_root(files)
        self.installer = f"the fake installer (tools/sample_installer, shaped like {sample_installer.INSTALLER_VERSION})"
        self.installer_kind = "fake"
        return bundle(files)

    def call(self, args: pulumi.runtime.MockCallArgs) -> Any:
        answer = self.cloud.call(args.token, args.args)
        return {} if answer is None else answer


def _plan_root(files: dict[str, bytes]) -> bytes:
    """The run script's 32 random bytes, made from the configs here so that a plan is the same on every run."""
    return hashlib.sha256(b"ocp-offline-plan-root\0" + files["metadata.json"]).digest()


CLOUD_CONFIG = "manifests/cloud-provider-config.yaml"


def _merged_cloud_config(installers: bytes, settings: str) -> bytes:
    """The fake's cloud provider config with the stack's settings merged as the run script merges them."""
    merged = subprocess.run(["awk", MERGE_AWK], input=installers, env={"PATH": os.environ.get("PATH", os.defpath), "CLOUD_PROVIDER_CONFIG": settings}, capture_output=True, check=True)
    return merged.stdout


def _added_manifests(environment: dict[str, str]) -> dict[str, bytes]:
    """The manifests the run script writes into openshift/, or manifests/ for `manifests/<name>` (its
    EXTRA_MANIFESTS: `name base64` lines), so that the fake's bootstrap config carries them as the installer's does."""
    lines = (line.split(" ", 1) for line in environment.get("EXTRA_MANIFESTS", "").splitlines() if line.strip())
    return {name if name.startswith("manifests/") else f"openshift/{name}": base64.b64decode(data) for name, data in lines}


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """The mock monitor, also keeping each resource's parent, inputs and options, in order;
    with an engine, registrations take the steps the engine would take on that state."""

    def __init__(
        self, mocks: pulumi.runtime.Mocks, run: ProgramRun, engine: Engine | None, no_default_providers: frozenset[str] = frozenset()
    ):
        super().__init__(mocks)
        self.run = run
        self.engine = engine
        # pulumi:disable-default-providers: packages ("*": all) whose resources and invokes must name their provider.
        self.no_default_providers = no_default_providers
        # Event loops the SDK makes in its worker threads: closed with the run.
        self.thread_loops: set[asyncio.AbstractEventLoop] = set()
        # Each registration's alias URNs: its children inherit them, as in the engine.
        self.aliases: dict[str, list[str]] = {}
        self.root = ""  # the stack's URN: the parent of what has no other

    def alias_urns(self, request: Any, urn: str) -> list[str]:
        """The URNs this registration answers to besides its own: its aliases, and its URN under
        each alias of its parent."""
        parents = self.aliases.get(request.parent, [])
        found = [self.make_urn(parent, request.type, request.name) for parent in parents]
        found += list(request.aliasURNs)
        for alias in request.aliases:
            if alias.urn:
                found.append(alias.urn)
                continue
            spec = alias.spec
            for parent in [self.root] if spec.noParent else [spec.parentUrn] if spec.parentUrn else [request.parent, *parents]:
                found.append(self.make_urn(parent, spec.type or request.type, spec.name or request.name))
        return [alias for alias in dict.fromkeys(found) if alias != urn]

    def RegisterResource(self, request: Any) -> Any:
        if request.type == "pulumi:pulumi:Stack":
            response = super().RegisterResource(request)
            self.root = response.urn
            return response
        pulumi_mocks._ensure_event_loop()
        self.thread_loops.add(asyncio.get_event_loop())
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.custom and not request.type.startswith("pulumi:providers:"):
            self.refuse_default_provider(request.type, request.provider, urn)
        self.aliases[urn] = self.alias_urns(request, urn)
        # Deployed under an alias: the engine takes it as that resource, not a new one.
        deployed_urn = next((u for u in (urn, *self.aliases[urn]) if self.engine is not None and u in self.engine.deployed), urn)
        inputs = pulumi.runtime.rpc.deserialize_properties(request.object, keep_unknowns=True)
        plain = unwrap(inputs)
        options = {
            "ignoreChanges": list(request.ignoreChanges),
            "dependsOn": list(request.dependencies),
            "deleteBeforeReplace": request.deleteBeforeReplace,
            "replaceOnChanges": list(request.replaceOnChanges),
            "protect": request.protect,
            "retainOnDelete": request.retainOnDelete,
        }
        custom = bool(request.custom)
        resource = Resource(
            request.type, request.name, request.parent or None, urn, inputs, tuple(request.dependencies), options, custom
        )
        action, kept = "create", plain
        if self.engine is not None:
            action, kept = self.engine.step(
                request.type,
                request.name,
                deployed_urn,
                plain,
                request.ignoreChanges,
                request.replaceOnChanges,
                request.deleteBeforeReplace,
                [path.split(".")[0].split("[")[0] for path in resource.secret_paths],
                custom,
            )
        if action == "replace" and request.protect:  # as the engine refuses it, before any step runs
            raise pulumi.RunError(
                f'unable to replace resource "{urn}" as it is currently marked for protection: '
                "lower ocp:protect to false first if the replacement is meant"
            )
        deployed = self.engine.deployed.get(deployed_urn) if self.engine is not None else None
        if deployed is not None and action in KEEPS_IDENTITY:
            id_, state = deployed.id, {**deployed.outputs, **kept}
        else:
            args = pulumi.runtime.MockResourceArgs(request.type, request.name, kept, request.provider, request.importId, custom)
            id_, state = self.mocks.new_resource(args)
            if deployed is not None:  # replaced: a new resource with a new id
                id_ = f"{id_}-{hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()[:8]}"
        resource.id, resource.kept_inputs, resource.outputs, resource.action = id_, kept, unwrap(state), action
        self.run.resources.append(resource)
        self.resources[urn] = pulumi_mocks.MockMonitor.ResourceRegistration(urn, id_, state)
        obj_proto = _sync_await(pulumi.runtime.rpc.serialize_properties(state, {}))
        return resource_pb2.RegisterResourceResponse(urn=urn, id=id_, object=obj_proto)

    def Invoke(self, request: Any) -> Any:
        pulumi_mocks._ensure_event_loop()
        self.thread_loops.add(asyncio.get_event_loop())
        self.refuse_default_provider(request.tok, request.provider, request.tok)
        return super().Invoke(request)

    def refuse_default_provider(self, token: str, provider: str, what: str) -> None:
        """As the engine refuses it: with no provider of its own, a resource or invoke would get
        the package's default provider, configured from the stack's `<package>:` keys."""
        package = token.split(":", 1)[0]
        if provider or package == "pulumi" or not ({"*", package} & self.no_default_providers):
            return
        raise pulumi.RunError(f"Default provider for '{package}' disabled. '{what}' must use an explicit provider.")


def disabled_default_providers(config: dict[str, str]) -> frozenset[str]:
    """The packages `pulumi:disable-default-providers` names (a JSON list, as the stack file's list reaches the program)."""
    text = config.get("pulumi:disable-default-providers")
    return frozenset(json.loads(text)) if text else frozenset()


class _Warnings(logging.Handler):
    def __init__(self, run: ProgramRun):
        super().__init__(logging.WARNING)
        self.run = run

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno == logging.WARNING:
            self.run.warnings.append(record.getMessage())


def run_program(
    config: dict[str, str],
    stack: str = "dev",
    secret_keys: tuple[str, ...] = ("ocp:pullSecret",),
    into: ProgramRun | None = None,
    engine: Engine | None = None,
    now: float | None = None,
    cloud: dict[str, Any] | None = None,
    installer: Path | None = None,
) -> ProgramRun:
    """Evaluate `__main__.py` with this config; raises what the program raises (pulumi.RunError).

    Pass `into` to keep what was registered even when the program fails; `engine` to run
    against a deployed state; `now` for the program's clock (default: the real one); `cloud`
    to describe the cloud the invokes read (default samples/cloud/dev.yaml, tools/mock_cloud.py);
    `installer` for the user's own openshift-install (default: the toolchain's where it runs, else the fake)."""
    at = time.time() if now is None else now
    return contextvars.Context().run(_run, config, stack, secret_keys, into or ProgramRun(), engine, at, cloud, installer)


def _run(
    config: dict[str, str],
    stack: str,
    secret_keys: tuple[str, ...],
    run: ProgramRun,
    engine: Engine | None,
    now: float,
    cloud: dict[str, Any] | None = None,
    installer: Path | None = None,
) -> ProgramRun:
    loop = asyncio.new_event_loop()
    # A refused run fails every output that waits on the refusal; the refusal itself is
    # raised once, by wait_for_rpcs: the echoes would only bury it.
    loop.set_exception_handler(_quiet_about_refusals)
    asyncio.set_event_loop(loop)
    # What a deployed stack holds is in the cloud too.
    mocks = ClusterMocks(now, MockCloud(cloud, engine.deployed.values() if engine is not None else ()), installer)
    monitor = RecordingMonitor(mocks, run, engine, disabled_default_providers(config))
    logger = logging.getLogger(f"tools.mock_run.{id(run)}")
    logger.propagate = False
    handler = _Warnings(run)
    logger.addHandler(handler)
    clock = program.now
    program.now = lambda: now
    try:
        # Pending outputs live in a module-wide set that set_mocks does not reset: a failed run
        # would leave tasks of its closed loop there, and the next run would wait for them forever.
        SETTINGS.outputs.clear()
        pulumi.runtime.set_mocks(mocks, project="ocp", stack=stack, preview=False, monitor=monitor, logger=logger)
        with engine_config(config, stack, secret_keys) as program_file:
            runpy.run_path(str(program_file), run_name="__main__")
            loop.run_until_complete(wait_for_rpcs())
            root = pulumi.runtime.get_root_resource()
            run.outputs, run.secret_outputs = loop.run_until_complete(_resolve_outputs(root.outputs if root else {}))
    finally:
        run.installer, run.installer_kind = mocks.installer, mocks.installer_kind
        program.now = clock
        # A failed program leaves RPCs under way (the root stack's registration at least):
        # let them finish, so nothing is destroyed while pending.
        pending = asyncio.all_tasks(loop)
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        SETTINGS.outputs.clear()
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()
        asyncio.set_event_loop(None)
        # The SDK's worker threads made loops of their own; left open, they are collected at
        # interpreter exit and complain ("Invalid file descriptor: -1").
        for thread_loop in monitor.thread_loops - {loop}:
            if not thread_loop.is_closed():
                thread_loop.close()
        logger.removeHandler(handler)
    return run


@contextlib.contextmanager
def engine_config(config: dict[str, str], stack: str, secret_keys: tuple[str, ...]) -> Iterator[Path]:
    """Config as the engine hands it to a Python program: every key in PULUMI_CONFIG, the secret
    ones named in PULUMI_CONFIG_SECRET_KEYS (what pulumi.Config reads), and the program in its
    project directory beside Pulumi.<stack>.yaml, which lists the keys set and marks secrets
    `secure:` as the CLI writes it. Yields the program to run there."""
    saved = {name: os.environ.get(name) for name in ("PULUMI_CONFIG", "PULUMI_CONFIG_SECRET_KEYS")}
    with tempfile.TemporaryDirectory(prefix="ocp-project-") as scratch:
        project = Path(scratch)
        for name in (PROGRAM.name, "Pulumi.yaml"):
            (project / name).symlink_to(PROGRAM.parent / name)
        listed = {key: {"secure": "v1:mock"} if key in secret_keys else value for key, value in config.items()}
        (project / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": listed}, sort_keys=True))
        os.environ["PULUMI_CONFIG"] = json.dumps(config)
        os.environ["PULUMI_CONFIG_SECRET_KEYS"] = json.dumps([key for key in secret_keys if key in config])
        try:
            yield project / PROGRAM.name
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def _quiet_about_refusals(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    if isinstance(context.get("exception"), (pulumi.RunError, ValueError)):
        return
    loop.default_exception_handler(context)


async def _resolve_outputs(outputs: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    values, secrets = {}, set()
    for key, value in outputs.items():
        output = pulumi.Output.from_input(value)
        values[key] = await output.future()
        if await output.is_secret():
            secrets.add(key)
    return values, secrets
