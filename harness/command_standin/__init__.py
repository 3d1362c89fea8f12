"""A stand-in for the pulumi-command provider plugin, `pulumi-resource-command` 1.2.1.

Why: the real plugin cannot be built on this machine. The Go module proxy refuses
`github.com/pulumi/pulumi-command/provider` at every version (403; `.toolchain/status.json`
keeps its answer), so the engine built here (.toolchain) stops at the first
`command:local:Command` the program registers. The project's rule is that an imitation stays
only where nothing real can run, and then is held to upstream facts: this is that imitation.
It is a real plugin process speaking the engine's gRPC provider protocol (the Python stubs of
the pulumi SDK in the project's venv), so everything around it, the engine, the language host,
the program and the state, is real. Delete it once the real plugin can be built.

What it implements, as pulumi-command v1.2.1 does (read in its source, tag v1.2.1, never copied):

- `command:local:Command`
  - Create runs `create` (nothing when absent) and returns the inputs plus stdout and stderr;
    the ID is the resource name plus 8 random hex digits. In preview nothing runs and stdout
    and stderr are unknown. (provider/pkg/provider/local/commandController.go:34-57; the ID:
    sdk resource_id.go NewUniqueHex(name, 8, 0))
  - Update runs `update`, else `create`, else nothing, with the previous stdout/stderr kept
    and handed to the command in PULUMI_COMMAND_STDOUT / PULUMI_COMMAND_STDERR; nothing runs in
    preview, where stdout and stderr become unknown when an input changed.
    (commandController.go:67-90; pulumi-go-provider v1.3.0 infer/resource.go:1410-1482, 536-590)
  - Delete runs `delete` (nothing when absent) with the inputs and outputs of the state: its
    environment, dir, interpreter, stdin, logging and the last stdout/stderr in
    PULUMI_COMMAND_STDOUT/_STDERR. It runs on destroy and when a replacement removes the old
    resource. (commandController.go:93-99)
  - Running: `interpreter` (default `/bin/sh -c`), `dir` (default: the provider's working
    directory, which the engine sets to the project's), the provider's environment plus
    `environment`, `stdin`, `addPreviousOutputInEnv` (default true; the variables are set only
    when the previous output is not empty), `logging` (default both streams, each line sent to
    the engine as an ephemeral info message); one trailing newline trimmed from stdout and
    stderr; a failure fails the step with `exit status N: running "<command>":` and the
    command's interleaved stdout and stderr. (local/commandOutputs.go:39-146, local/logging.go:27-32,
    util/util.go:29-53)
  - Check decodes the inputs into the typed input struct: an unknown field or a wrong type is
    a check failure; no defaults are added; no input is made secret.
    (local/base.go:24-33, common/inputs.go:6-15; infer/resource.go:994-1047, 1098-1130)
  - Diff compares the old inputs the engine sends with the new inputs (ignoreChanges entries,
    as top-level keys, take the state's value; `version` and `__*` keys dropped): any change
    is an update, a change whose property path is exactly `triggers` (the schema's
    replaceOnChanges, common/inputs.go:10) a replace; nested paths such as `triggers[0]` are
    updates here and the engine replaces through the SDK's `replace_on_changes=["triggers[*]"]`
    (pulumi_command 1.2.1 local/command.py). Changes/replaces are reported per top-level key,
    DIFF_SOME or DIFF_NONE, never delete-before-replace. (infer/resource.go:1132-1253;
    pulumi-go-provider provider.go:169-227; sdk v3.224.0 plugin/provider.go:642-708,
    resource/properties_diff.go:187-331, properties_path.go:574-608)
  - Read (refresh) returns the state and inputs unchanged (infer/resource.go:1353-1364).
  - Secrets: inputs stay secret where they were; stdout and stderr are never made secret by a
    secret input (the framework's default secret flow maps an output only from the input of the
    same name, infer/resource.go:754-807, 592-630; so since pulumi-go-provider commit ea49c5f,
    "Separate computed and secret dependencies", the fix of pulumi-command issue #256): mark them
    with additionalSecretOutputs, as the program does for the installer's run.
  - Timeouts (customTimeouts) and Cancel kill the running commands (pulumi-go-provider
    middleware/cancel/cancel.go).
- `command:local:run` (invoke): runs `command` every time, preview included, and returns the
  inputs plus stdout and stderr; a missing `command` is a failure (local/runController.go:25-33;
  infer/function.go:153-181).
- Plugin-level: GetPluginInfo says 1.2.1; Configure answers acceptSecrets, supportsPreview,
  acceptResources and acceptOutputs, and uses the engine's old inputs when it sends them
  (pulumi-go-provider provider.go:777-800); CheckConfig returns the config with string values
  that are JSON decoded and `__pulumi-go-provider-version` added (middleware/complexconfig,
  provider.go:736); DiffConfig, Handshake, Construct, Call and the rest answer Unimplemented, as
  the framework does for a provider without config. GetSchema gives the package's shape
  (names, types, replaceOnChanges) without upstream's descriptions.

Not implemented: `assetPaths` and `archivePaths` (Check refuses them by name: upstream's gobwas
glob rules and Pulumi's asset/archive hashing are not reproduced); `command:remote:Command`,
`command:remote:CopyToRemote` and `command:remote:CopyFile` (refused by name, Unimplemented);
Attach (the framework's PULUMI_DEBUG_PROVIDERS attach mode); upstream's exact mapper wording of
type errors is approximated. Output that is not UTF-8 is
decoded with replacement characters (upstream's Go would fail to marshal it).

Install it into a PULUMI_HOME with `venv/bin/python -m harness.command_standin install
[--pulumi-home DIR]`: that writes a wrapper naming this checkout's venv python and
`harness/command_standin/__main__.py` by absolute path (`pulumi plugin install --file` copies
the one file) and runs `pulumi plugin install resource command 1.2.1 --file <wrapper>`.
`harness/command_standin/pulumi-resource-command` is the same entry for use from the checkout.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

NAME = "command"
VERSION = "1.2.1"

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

WRAPPER = """\
#!/bin/sh
# pulumi-resource-command {version}: the stand-in in {root}/harness/command_standin
# (its module docstring says what and why). Written by `python -m harness.command_standin install`.
exec '{python}' '{main}' serve "$@"
"""


class InstallError(Exception):
    pass


def wrapper_text(root: Path = ROOT) -> str:
    return WRAPPER.format(version=VERSION, root=root, python=root / "venv" / "bin" / "python", main=root / HERE.relative_to(ROOT) / "__main__.py")


def install(pulumi_home: Path, pulumi: Path | str = "pulumi", env: dict[str, str] | None = None) -> str:
    """Install the stand-in as resource plugin `command` 1.2.1 into `pulumi_home` with the CLI's
    own `plugin install --file`; returns the CLI's output."""
    environment = {**(os.environ if env is None else env), "PULUMI_HOME": str(pulumi_home)}
    # Local files only: no download, no registry lookup, no update check.
    for switch in ("PULUMI_SKIP_UPDATE_CHECK", "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION", "PULUMI_DISABLE_REGISTRY_RESOLVE"):
        environment[switch] = "true"
    with tempfile.TemporaryDirectory(prefix="command-standin-") as scratch:
        wrapper = Path(scratch) / "pulumi-resource-command"
        wrapper.write_text(wrapper_text())
        wrapper.chmod(0o755)
        done = subprocess.run(
            [str(pulumi), "plugin", "install", "resource", NAME, VERSION, "--file", str(wrapper), "--reinstall"],
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
        )
    if done.returncode != 0:
        raise InstallError(f"pulumi plugin install resource {NAME} {VERSION}: {(done.stdout + done.stderr).strip()}")
    return done.stdout + done.stderr
