"""The gRPC resource provider: what pulumi-command 1.2.1, built on pulumi-go-provider v1.3.0's
`infer` framework, answers the engine for `command:local:Command` and `command:local:run`.
Facts and where they come from are in the package docstring (harness/command_standin/__init__.py).
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import threading
import time
from concurrent import futures
from typing import Any

import grpc
from google.protobuf import empty_pb2
from pulumi.runtime.proto import engine_pb2, engine_pb2_grpc, plugin_pb2, provider_pb2, provider_pb2_grpc

from harness.command_standin import NAME, VERSION
from harness.command_standin.execute import CommandFailed, Running, run
from harness.command_standin.values import (
    ADD,
    ADD_REPLACE,
    AS_REPLACE,
    DELETE,
    DELETE_REPLACE,
    UNKNOWN,
    UPDATE,
    UPDATE_REPLACE,
    Secret,
    Unknown,
    from_raw,
    deep_equals,
    detailed_diff,
    from_struct,
    is_unknown,
    object_diff,
    path_head,
    reveal,
    to_struct,
)

COMMAND = "command:local:Command"
RUN = "command:local:run"
# Every other token pulumi-command 1.2.1 serves (provider/pkg/provider/provider.go:83-94).
NOT_SUPPORTED = ("command:remote:Command", "command:remote:CopyToRemote", "command:remote:CopyFile")

# local.BaseInputs (provider/pkg/provider/local/base.go:24-33) and common.ResourceInputs
# (provider/pkg/provider/common/inputs.go:6-15): name -> Go type of the field.
BASE_INPUTS = {
    "stdin": "*string",
    "logging": "*local.Logging",
    "interpreter": "*[]string",
    "dir": "*string",
    "environment": "*map[string]string",
    "assetPaths": "*[]string",
    "archivePaths": "*[]string",
    "addPreviousOutputInEnv": "*bool",
}
RESOURCE_INPUTS = {"triggers": "*[]interface {}", "create": "*string", "update": "*string", "delete": "*string"}
COMMAND_INPUTS = {**RESOURCE_INPUTS, **BASE_INPUTS}
RUN_INPUTS = {**BASE_INPUTS, "command": "string"}
# local.BaseOutputs (base.go:131-136): stdout and stderr always, assets and archive optional.
OUTPUTS = ("stdout", "stderr", "assets", "archive")
# Fields of `triggers` with provider:"replaceOnChanges" (inputs.go:10): the schema's replaceOnChanges.
REPLACE_ON_CHANGES = frozenset({"triggers"})
# pulumi-go-provider stores its own version in the provider's inputs (provider.go:736; version.go:27;
# .version at v1.3.0 says 1.2.0).
FRAMEWORK_KEY, FRAMEWORK_VERSION = "__pulumi-go-provider-version", "1.2.0"
# The refused features: assets and archives from path globs need gobwas/glob and Pulumi's asset hashing.
REFUSED = {"assetPaths", "archivePaths"}

_KIND = {
    ADD: provider_pb2.PropertyDiff.ADD,
    ADD_REPLACE: provider_pb2.PropertyDiff.ADD_REPLACE,
    DELETE: provider_pb2.PropertyDiff.DELETE,
    DELETE_REPLACE: provider_pb2.PropertyDiff.DELETE_REPLACE,
    UPDATE: provider_pb2.PropertyDiff.UPDATE,
    UPDATE_REPLACE: provider_pb2.PropertyDiff.UPDATE_REPLACE,
}
MAX_MESSAGE = 400 * 1024 * 1024  # as Pulumi's Go plugins allow


def urn_type(urn: str) -> str:
    return urn.split("::")[2].split("$")[-1] if urn.count("::") >= 3 else ""


def urn_name(urn: str) -> str:
    return urn.split("::")[-1]


# --- Check: decode into the typed inputs (mapper errors become check failures) ---------------


def _go_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, dict):
        return "map[string]interface {}"
    return "resource.PropertyValue"


def _fits(value: Any, go_type: str) -> bool:
    while isinstance(value, Secret):
        value = value.value
    if isinstance(value, Unknown):
        return True
    base = go_type.lstrip("*")
    if base in ("string", "local.Logging"):
        return isinstance(value, str)
    if base == "bool":
        return isinstance(value, bool)
    if base == "[]string":
        return isinstance(value, list) and all(_fits(item, "string") for item in value)
    if base == "map[string]string":
        return isinstance(value, dict) and all(_fits(item, "string") for item in value.values())
    if base == "[]interface {}":
        return isinstance(value, list)
    return True


def check_inputs(inputs: dict[str, Any], fields: dict[str, str], owner: str) -> list[tuple[str, str]]:
    """(property, reason) for every input that does not decode, worded as the SDK's mapper words them."""
    failures = []
    for key, value in inputs.items():
        if key not in fields:
            failures.append((key, f"Unrecognized field '{key}' on '{owner}'"))
        elif not _fits(value, fields[key]):
            actual = value.value if isinstance(value, Secret) else value
            failures.append((key, f"Field '{key}' on '{owner}' must be a '{fields[key]}'; got '{_go_type(actual)}' instead"))
    for key, go_type in fields.items():
        if not go_type.startswith("*") and key not in inputs:
            failures.append((key, f"Missing required field '{key}' on '{owner}'"))
    for key in sorted(REFUSED & inputs.keys()):
        failures.append(
            (key, f"{key} is not supported by the stand-in pulumi-resource-command {VERSION} (harness/command_standin): use pulumi-command itself")
        )
    return failures


def _failures(found: list[tuple[str, str]]) -> list[provider_pb2.CheckFailure]:
    return [provider_pb2.CheckFailure(property=key, reason=reason) for key, reason in found]


def _only(values: dict[str, Any], fields) -> dict[str, Any]:
    return {key: value for key, value in values.items() if key in fields}


# --- CheckConfig: complexconfig's JSON decoding of string config values ----------------------


def _config_value(value: Any) -> Any:
    if isinstance(value, Secret):
        return Secret(_config_value(value.value))
    if not isinstance(value, str):
        return value
    try:
        decoded = json.loads(value)
    except ValueError:
        return value
    return from_raw(decoded)


class CommandProvider(provider_pb2_grpc.ResourceProviderServicer):
    def __init__(self, engine_address: str | None):
        self.running = Running()
        self.sends_old_inputs = False
        self._engine = None
        self._engine_lock = threading.Lock()
        self.engine_address = engine_address

    # --- plumbing -----------------------------------------------------------------------

    def _log(self, urn: str):
        def log(line: str) -> None:
            with self._engine_lock:
                if self._engine is None and self.engine_address:
                    channel = grpc.insecure_channel(self.engine_address, options=_channel_options())
                    self._engine = engine_pb2_grpc.EngineStub(channel)
            if self._engine is not None:
                self._engine.Log(engine_pb2.LogRequest(severity=engine_pb2.INFO, message=line, urn=urn, ephemeral=True))

        return log

    def _unsupported(self, context, token: str):
        if token in NOT_SUPPORTED:
            context.abort(
                grpc.StatusCode.UNIMPLEMENTED,
                f"{token} is not supported by the stand-in pulumi-resource-command {VERSION} (harness/command_standin in this "
                f"checkout): it implements {COMMAND} and {RUN} only",
            )
        context.abort(grpc.StatusCode.NOT_FOUND, f"Resource '{token}' not found")

    def _execute(self, command: str, props: dict[str, Any], urn: str, previous: dict[str, Any], timeout: float = 0) -> dict[str, str]:
        plain = reveal(props)
        logging = plain.get("logging")
        outcome = run(
            command,
            interpreter=plain.get("interpreter"),
            dir=plain.get("dir"),
            environment=plain.get("environment"),
            stdin=plain.get("stdin"),
            previous_stdout=_text(reveal(previous.get("stdout"))),
            previous_stderr=_text(reveal(previous.get("stderr"))),
            add_previous_output=plain.get("addPreviousOutputInEnv") is not False,
            log_stdout=logging in (None, "stdout", "stdoutAndStderr"),
            log_stderr=logging in (None, "stderr", "stdoutAndStderr"),
            log=self._log(urn),
            running=self.running,
            timeout=timeout,
        )
        return {"stdout": outcome.stdout, "stderr": outcome.stderr}

    # --- plugin-level calls ---------------------------------------------------------------

    def GetPluginInfo(self, request, context):
        return plugin_pb2.PluginInfo(version=VERSION)

    def GetSchema(self, request, context):
        return provider_pb2.GetSchemaResponse(schema=json.dumps(schema()))

    def CheckConfig(self, request, context):
        news = {key: _config_value(value) for key, value in from_struct(request.news).items()}
        news[FRAMEWORK_KEY] = FRAMEWORK_VERSION
        return provider_pb2.CheckResponse(inputs=to_struct(news))

    def Configure(self, request, context):
        self.sends_old_inputs = request.sends_old_inputs and request.sends_old_inputs_to_delete
        return provider_pb2.ConfigureResponse(acceptSecrets=True, supportsPreview=True, acceptResources=True, acceptOutputs=True)

    def Cancel(self, request, context):
        self.running.kill_all()
        return empty_pb2.Empty()

    # --- resources ------------------------------------------------------------------------

    def Check(self, request, context):
        token = request.type or urn_type(request.urn)
        if token != COMMAND:
            self._unsupported(context, token)
        news = from_struct(request.news)
        found = check_inputs(news, COMMAND_INPUTS, "local.CommandInputs")
        if found:
            return provider_pb2.CheckResponse(inputs=to_struct(news), failures=_failures(found))
        return provider_pb2.CheckResponse(inputs=to_struct(_only(news, COMMAND_INPUTS)))

    def _olds_and_news(self, request, context) -> tuple[dict[str, Any], dict[str, Any]]:
        """A Command's state and new inputs, ignored top-level keys taken from the state."""
        token = request.type or urn_type(request.urn)
        if token != COMMAND:
            self._unsupported(context, token)
        state = from_struct(request.olds)
        news = from_struct(request.news)
        for key in request.ignoreChanges:
            if key in state:
                news[key] = state[key]
        return state, news

    def Diff(self, request, context):
        state, news = self._olds_and_news(request, context)
        news = {key: value for key, value in news.items() if key != "version" and not key.startswith("__")}
        if self.sends_old_inputs:
            old_inputs = from_struct(request.old_inputs)
        else:
            old_inputs = {key: state.get(key) for key in COMMAND_INPUTS}
        change = object_diff(old_inputs, news)
        details = detailed_diff(change)
        for path, kind in details.items():
            if path in REPLACE_ON_CHANGES:
                details[path] = AS_REPLACE.get(kind, kind)
        replaces = {path_head(path) for path, kind in details.items() if kind in AS_REPLACE.values()}
        return provider_pb2.DiffResponse(
            changes=provider_pb2.DiffResponse.DIFF_SOME if change is not None else provider_pb2.DiffResponse.DIFF_NONE,
            replaces=sorted(replaces),
            diffs=sorted({path_head(path) for path in details}),
            detailedDiff={path: provider_pb2.PropertyDiff(kind=_KIND[kind], inputDiff=False) for path, kind in details.items()},
            hasDetailedDiff=True,
            deleteBeforeReplace=False,
        )

    def Create(self, request, context):
        token = request.type or urn_type(request.urn)
        if token != COMMAND:
            self._unsupported(context, token)
        inputs = _only(from_struct(request.properties), COMMAND_INPUTS)
        resource_id = urn_name(request.urn) + secrets.token_hex(4)
        outputs: dict[str, Any] = dict(inputs)
        if request.preview:
            outputs.update(stdout=UNKNOWN, stderr=UNKNOWN)
        elif "create" not in inputs:
            outputs.update(stdout="", stderr="")
        else:
            try:
                outputs.update(self._execute(reveal(inputs["create"]), inputs, request.urn, {}, request.timeout))
            except CommandFailed as failure:
                context.abort(grpc.StatusCode.UNKNOWN, str(failure))
        return provider_pb2.CreateResponse(id=resource_id, properties=to_struct(outputs))

    def Read(self, request, context):
        token = request.type or urn_type(request.urn)
        if token != COMMAND:
            self._unsupported(context, token)
        return provider_pb2.ReadResponse(
            id=request.id, properties=to_struct(from_struct(request.properties)), inputs=to_struct(from_struct(request.inputs))
        )

    def Update(self, request, context):
        state, news = self._olds_and_news(request, context)
        previous = {key: state[key] for key in OUTPUTS if key in state}
        previous["stdout"] = _text(reveal(previous.get("stdout")))
        previous["stderr"] = _text(reveal(previous.get("stderr")))
        outputs: dict[str, Any] = {**_only(news, COMMAND_INPUTS), **previous}
        if request.preview:
            # An output that mirrors no input is unknown when an input is unknown or differs from
            # the state (infer/resource.go markComputed, 545-590).
            changed = any(
                is_unknown(news.get(key)) or (key in state and not deep_equals(news.get(key), state[key])) for key in COMMAND_INPUTS
            )
            if changed:
                for key in OUTPUTS:
                    if key in outputs:
                        outputs[key] = UNKNOWN
            return provider_pb2.UpdateResponse(properties=to_struct(outputs))
        command = news.get("update", news.get("create"))
        if command is not None:
            try:
                outputs.update(self._execute(reveal(command), news, request.urn, previous, request.timeout))
            except CommandFailed as failure:
                context.abort(grpc.StatusCode.UNKNOWN, str(failure))
        return provider_pb2.UpdateResponse(properties=to_struct(outputs))

    def Delete(self, request, context):
        token = request.type or urn_type(request.urn)
        if token != COMMAND:
            self._unsupported(context, token)
        state = from_struct(request.properties)
        if state.get("delete") is not None:
            try:
                self._execute(reveal(state["delete"]), state, request.urn, state, request.timeout)
            except CommandFailed as failure:
                context.abort(grpc.StatusCode.UNKNOWN, str(failure))
        return empty_pb2.Empty()

    # --- functions ------------------------------------------------------------------------

    def Invoke(self, request, context):
        if request.tok != RUN:
            context.abort(grpc.StatusCode.NOT_FOUND, f"Invoke '{request.tok}' not found")
        args = from_struct(request.args)
        found = check_inputs(args, RUN_INPUTS, "local.RunInputs")
        if found:
            return provider_pb2.InvokeResponse(failures=_failures(found))
        inputs = _only(args, RUN_INPUTS)
        try:
            outputs = self._execute(reveal(inputs["command"]), inputs, "", {})
        except CommandFailed as failure:
            context.abort(grpc.StatusCode.UNKNOWN, str(failure))
        response = provider_pb2.InvokeResponse()
        getattr(response, "return").CopyFrom(to_struct({**inputs, **outputs}))
        return response


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _channel_options():
    return [("grpc.max_receive_message_length", MAX_MESSAGE), ("grpc.max_send_message_length", MAX_MESSAGE)]


def schema() -> dict[str, Any]:
    """The package's shape (names, types, replaceOnChanges), without upstream's prose."""

    def properties(fields: dict[str, str]) -> dict[str, Any]:
        types = {
            "string": {"type": "string"},
            "bool": {"type": "boolean"},
            "local.Logging": {"$ref": "#/types/command:local:Logging"},
            "[]string": {"type": "array", "items": {"type": "string"}},
            "map[string]string": {"type": "object", "additionalProperties": {"type": "string"}},
            "[]interface {}": {"type": "array", "items": {"$ref": "pulumi.json#/Any"}},
        }
        out = {key: dict(types[go_type.lstrip("*")]) for key, go_type in fields.items()}
        for key in REPLACE_ON_CHANGES & out.keys():
            out[key]["replaceOnChanges"] = True
        return out

    outputs = {
        "stdout": {"type": "string"},
        "stderr": {"type": "string"},
        "assets": {"type": "object", "additionalProperties": {"$ref": "pulumi.json#/Asset"}},
        "archive": {"$ref": "pulumi.json#/Archive"},
    }
    return {
        "name": NAME,
        "version": VERSION,
        "types": {
            "command:local:Logging": {
                "type": "string",
                "enum": [{"value": value} for value in ("stdout", "stderr", "stdoutAndStderr", "none")],
            }
        },
        "resources": {
            COMMAND: {
                "inputProperties": properties(COMMAND_INPUTS),
                "properties": {**properties(COMMAND_INPUTS), **outputs},
                "required": ["stderr", "stdout"],
            }
        },
        "functions": {
            RUN: {
                "inputs": {"properties": properties(RUN_INPUTS), "required": ["command"], "type": "object"},
                "outputs": {"properties": {**properties(RUN_INPUTS), **outputs}, "required": ["command", "stderr", "stdout"], "type": "object"},
            }
        },
    }


def _leave_with_engine(address: str, provider: CommandProvider, server: grpc.Server) -> None:
    """As the SDK's providers do (sdk/go/pulumi/provider/main.go, rpcutil.Healthcheck): ask the engine's health
    service every few minutes and stop once it does not answer (a CLI killed with SIGKILL never stops its plugins);
    Unimplemented counts as alive."""
    period = float(os.environ.get("OCP_STANDIN_HEALTHCHECK_SECONDS", "300"))
    with grpc.insecure_channel(address) as channel:
        check = channel.unary_unary("/grpc.health.v1.Health/Check", request_serializer=bytes, response_deserializer=bytes)
        while True:
            time.sleep(period)
            try:
                check(b"", timeout=30)
            except grpc.RpcError as error:
                if error.code() != grpc.StatusCode.UNIMPLEMENTED:
                    provider.running.kill_all()
                    server.stop(0)
                    return


def serve(argv: list[str]) -> None:
    """Serve on a free loopback port and print it as the first line of stdout, as the engine expects."""
    addresses = [arg for arg in argv if not arg.startswith("-")]
    provider = CommandProvider(addresses[0] if addresses else None)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=128), options=_channel_options())
    provider_pb2_grpc.add_ResourceProviderServicer_to_server(provider, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    sys.stdout.write(f"{port}\n")
    sys.stdout.flush()
    if addresses:
        threading.Thread(target=_leave_with_engine, args=(addresses[0], provider, server), daemon=True).start()
    try:
        server.wait_for_termination()
    except KeyboardInterrupt:
        provider.running.kill_all()
        server.stop(0)

