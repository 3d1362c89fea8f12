"""The commands a stack's state holds, against this program's own. Pure Python.

The engine runs a command resource from the state: its `delete` when the resource goes (a worker
removed, the bootstrap's teardown, `destroy`), from the stored outputs; and where the program ignores
changes, the stored `create` or `update` on a replacement or an update. Whoever can write the state (the
backend's bucket) could so run anything on the machine of the next `python -m ocp up|install|destroy`,
with its credentials. The install driver therefore reads the state first (the export it makes anyway)
and stops on any difference here, naming the resource and the input.

What is compared, in the inputs and in the outputs of every `command:*` resource:

- `create`, `update`, `delete`: this program's script for that resource, made by the functions the
  components call (a script that carries data, the cleanup's zones or the upload's path, is parsed,
  the data checked, and the script made again from it and compared whole), or an earlier release's
  (`EARLIER`, by SHA-256: a command that runs once keeps the script it ran for good); absent where the
  program sets none;
- `interpreter`, `dir`: the program's (it never sets `dir`);
- `environment`: only the variables the program sets for that resource (so no PATH, LD_PRELOAD,
  BASH_ENV, ...), each value as the stack file gives it where a running stack cannot change it, and
  otherwise by its shape, as data: the programs it names (`OC`, `OPENSHIFT_INSTALL`: the stack file's,
  or one so named, since those keys may change after the command stored them), kubeconfigs without
  `exec` or `auth-provider` (each runs a program), pull secrets of `auths` alone (a credential helper is
  a program), addresses as IP addresses, names as names. The scripts quote every value.

A command resource this program does not make is a difference, as are a provider to be downloaded from
elsewhere (`pluginDownloadURL`), a libvirt URI other than the stack file's (its `command` parameter
names a program to run), an OpenStack provider of another cloud than the stack file's, and a kubeconfig
of the wrong shape in the installer's output or the `kubeconfig` stack output (the driver runs `oc`
with it).
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cluster.cleanup import CLEANUP_SCRIPT, OWN_GROUP_ZONES, cleanup_script, mark_script
from cluster.config import ClusterConfig
from cluster.drain import drain_script
from cluster.helper_ssh import ECDSA_KEY_TYPE, KEY_TYPE, upload_command, upload_script
from cluster.installer import (
    CONFIG_FILE,
    REMOVE_FILE,
    WRITE_FILE,
    pointer_script,
    read_script,
    run_script,
    update_script,
    worker_images_script,
)
from cluster.installer_output import INFRA_ID
from cluster.network_tag import tag_script
from cluster.state_values import (
    Check,
    address,
    among,
    bundle_problem,
    data,
    kubeconfig_problem,
    one_or,
    pattern,
    plain,
    program,
    pull_secret_problem,
    stack_file,
)

COMMAND = "command:local:Command"
SCRIPTS = ("create", "update", "delete")
BASH = ["/bin/bash", "-c"]
ENCRYPTED = "is encrypted in the export (run with the stack's key)"
NO_OP = "true"

# The scripts of earlier releases, by kind and input (SHA-256 of the text): those stay in a stack's state
# until the program updates them, and for good where it never does (a command run once). Each release's
# states are in tests/states, which tests/cluster/test_state_scripts.py holds to this table.
EARLIER: dict[tuple[str, str], frozenset[str]] = {
    ("installer", "create"): frozenset({
        "99af6516cdfda33add37963ed087a86d6519e2156f18d651a33e7dbe6ab0a51e",  # run_script, 35e8df7
        "015f524e06864670f849036b9cd35ac30e1d414b1e452696403a217732a7a03d",  # run_script, 0.1.0
        "f922ce57ec26aeee35262f606fce7c6e0de29682a3fc5c78a951288e4761f7c8",  # read_script, 35e8df7 and 0.1.0
    }),
    ("installer", "update"): frozenset({"f922ce57ec26aeee35262f606fce7c6e0de29682a3fc5c78a951288e4761f7c8"}),  # read_script
    ("drain", "delete"): frozenset({"54676d5bbe79e7de940b7a57264d1e9da9fa49e794684d98b482d97f06b912f1"}),  # 35e8df7
    ("cleanup", "delete"): frozenset({"57b1f53f73a3747f1f1fbc20727e4438b651e6441fdc84aa26f3b56c512ec1d9"}),  # 35e8df7, 0.1.0: openstack CLI
    # Written to its path directly (a link planted there was followed), before the mktemp of issue 49.
    ("file", "create"): frozenset({"2b3fd53ad5a7680bda26b1f74f0cba93993bf36c8b25db6c1992cdd55563abe6"}),  # 35e8df7, 0.1.0
    ("images", "create"): frozenset({"b7361477558293c384b8f3a608480885d1d60db16c8b773107f5bbd646ec8800"}),  # 35e8df7 to 0.1.0+: no --idms-file
    ("pointer-worker", "create"): frozenset({
        "a6e5640b48fe18500a7b6df98f1194e26aff68b0fad05068e7c4c9e1e2ab3bd8",  # 35e8df7
        "93fafab07deaa172b10c33554c237ebd2bb379e3457a2619d19b392f35c639b6",  # 0.1.0
    }),
}

_NAME = re.compile(r"(?!-)[A-Za-z0-9.-]{1,253}")
_WORDS = re.compile(r"([a-z0-9-]+( [a-z0-9-]+)*)?")
_HOST_KEY = re.compile(rf"({KEY_TYPE.decode()}|{ECDSA_KEY_TYPE.decode()}) [A-Za-z0-9+/]+={{0,2}}( [A-Za-z0-9._-]+)?")
_SSH_USER = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}")
_CONFIG_FILE = re.compile(r"/([^\n]*/)?" + re.escape(CONFIG_FILE))
_HELPER_PATH = re.compile(r"/[0-9a-f]{32}/bootstrap\.ign")


@dataclass(frozen=True)
class Difference:
    resource: str  # the URN's name
    urn: str
    input: str  # as the state names it: `delete`, `environment.BASH_ENV`
    why: str


@dataclass(frozen=True)
class Kind:
    """What this program gives one kind of command resource."""

    name: str  # the key of EARLIER
    title: str  # what the message calls it
    scripts: Mapping[str, frozenset[str]]  # input -> the texts the program gives; an input not here must be absent
    environment: Mapping[str, Check]
    interpreter: list[str] | None = None
    parsed: Mapping[str, Callable[[str], bool]] | None = None  # input -> a script made again from the data it carries


def differences(deployment: Mapping[str, Any] | list[dict[str, Any]], config: ClusterConfig | None, stack: str) -> list[Difference]:
    """Every difference of an exported deployment (`pulumi stack export --show-secrets`; or its list of
    resources) from this program with the stack file `config` (None when it cannot be read: the checks that
    need it then go by shape alone)."""
    if isinstance(deployment, Mapping):
        resources = list(deployment.get("resources") or [])
        resources += [pending["resource"] for pending in deployment.get("pending_operations") or [] if isinstance(pending.get("resource"), dict)]
    else:
        resources = list(deployment)
    kinds: dict[str, Kind] | None = None  # made at the first command: a state of none needs no stack file
    found: list[Difference] = []
    for resource in resources:
        urn = str(resource.get("urn", ""))
        kind_of = str(resource.get("type", ""))
        name = _name(urn)
        seen: set[str] = set()

        def add(field: str, why: str | None, urn: str = urn, name: str = name, seen: set[str] = seen) -> None:
            if why is not None and field not in seen:
                seen.add(field)
                found.append(Difference(name, urn, field, why))

        if kind_of.startswith("command:"):
            kinds = kinds if kinds is not None else _kinds(config, stack)
            kind = _kind_of(kinds, kind_of, urn)
            if kind is None:
                add("type", f"{kind_of} {name} is no command this program makes")
                continue
            for part in ("inputs", "outputs"):
                for field, why in _command(kind, resource.get(part) or {}):
                    add(field, why)
                if kind.name == "installer":
                    add("stdout", bundle_problem((resource.get(part) or {}).get("stdout")))
        elif kind_of.startswith("pulumi:providers:"):
            for part in ("inputs", "outputs"):
                for field, why in _provider(kind_of.split(":")[-1], resource.get(part) or {}, config):
                    add(field, why)
        elif kind_of == "pulumi:pulumi:Stack":
            kubeconfig = plain((resource.get("outputs") or {}).get("kubeconfig"))
            if kubeconfig is not None:
                add("outputs.kubeconfig", kubeconfig_problem(kubeconfig))
    return found


# --------------------------------------------------------------------------- the program's commands


def _kinds(config: ClusterConfig | None, stack: str) -> dict[str, Kind]:
    """The program's command resources, by the type of their parent component."""
    stated = _stated(config)
    oc = program(config.installer.oc if config else None, r"(oc|kubectl)([-._][A-Za-z0-9._-]*)?", "oc or kubectl")
    kubeconfig: Check = kubeconfig_problem
    pull_secret = one_or(config.pull_secret.get_secret_value() if config else None, pull_secret_problem)
    node = pattern(_NAME, "a server name")
    pointer_environment = {
        "POINTER_SOURCE": among("install", "cluster"), "INSTALL_POINTER": data, "KUBECONFIG_DATA": kubeconfig, "OC": oc,
        "SERVER": node, "API_URL": data, "LENIENT": among("1"),
    }
    cloud = stack_file(stated("openstack.cloud"))
    drain = Kind(
        "drain", "the drain of a worker", {"create": frozenset({NO_OP}), "delete": frozenset({drain_script()})},
        {"NODE": node, "OC": oc, "KUBECONFIG_DATA": kubeconfig}, BASH,
    )
    return {
        "ocp:installer:Installer": Kind(
            "installer", "the installer's run",
            {"create": frozenset({run_script(), read_script()}), "update": frozenset({update_script(), read_script()})},
            {
                "OPENSHIFT_INSTALL": program(
                    config.installer.binary if config else None, r"openshift-install([-._][A-Za-z0-9._-]*)?", "openshift-install"
                ),
                "OC": oc,
                # ocp:installer.dir may change after the run (inert); the script refuses a directory it did not make.
                "INSTALLER_DIR": data,
                "ASSETS_DIR": data,
                "STACK": among(stack),
                "STACK_ID": pattern(re.compile(r"[^\n]+/[^\n]+/" + re.escape(stack)), f"organization/project/{stack}"),
                "INSTALL_CONFIG": data, "PULL_SECRET": pull_secret, "INSTALL_FACTS": data, "GENERATION": pattern(re.compile(r"[0-9]{1,9}"), "a number"),
                "PLATFORM": among("openstack", "none"), "RELEASE_COMPONENTS": pattern(_WORDS, "payload names"), "FIPS": among("true"),
                "EXTRA_MANIFESTS": data, "CLOUD_PROVIDER_CONFIG": data, "CLOUD_CA_BUNDLE": data, "OS_CLOUD": cloud,
            },
        ),
        "ocp:openstack:NodePool": drain,
        "ocp:openstack:Workers": drain,  # the workers' pool before it was a NodePool (35e8df7), until an up moves it
        "ocp:libvirt:Machine": drain,
        "ocp:openstack:Cleanup": Kind(
            "cleanup", "the destroy's cleanup", {"create": frozenset({NO_OP}), "delete": frozenset({CLEANUP_SCRIPT})},
            {"OS_CLOUD": cloud, "INFRA_ID": pattern(INFRA_ID, "an infra ID")}, BASH, {"delete": _cleanup_again},
        ),
        # Its second command (`-mark-on-destroy`): the same script, told to tag what the cleanup then takes.
        "ocp:openstack:Cleanup mark": Kind(
            "mark", "the destroy's mark", {"create": frozenset({NO_OP}), "delete": frozenset({mark_script()})},
            {"OS_CLOUD": cloud, "INFRA_ID": pattern(INFRA_ID, "an infra ID")}, BASH,
        ),
        "ocp:openstack:Network": Kind(
            "tag", "the network's tag", {"create": frozenset({tag_script("add")}), "delete": frozenset({tag_script("remove")})},
            {
                "OS_CLOUD": cloud,
                "NETWORK": stack_file(stated("openstack.existingNetwork.networkId")),
                "TAG": pattern(re.compile(INFRA_ID.pattern + "-primaryClusterNetwork"), "<infraID>-primaryClusterNetwork"),
            },
            BASH,
        ),
        "ocp:openstack:BootstrapImage": Kind(
            "file", "the bootstrap's config file", {"create": frozenset({WRITE_FILE}), "delete": frozenset({REMOVE_FILE})},
            {"FILE": pattern(_CONFIG_FILE, f"an absolute path to {CONFIG_FILE}")},
        ),
        "ocp:openstack:BootstrapHelper": Kind(
            "upload", "the helper's upload", {"create": frozenset()},
            {
                "HELPER_HOST": address, "HELPER_USER": one_or(stated("bootstrap.helper.sshUser"), pattern(_SSH_USER, "a user name")),
                "HELPER_HOST_KEY": pattern(_HOST_KEY, "an SSH public key"), "HELPER_KEY_FILE": data,
            },
            parsed={"create": _upload_again},
        ),
        "ocp:openstack:WorkerPointers": Kind("pointer-worker", "a worker's pointer", {"create": frozenset({pointer_script("worker")})}, pointer_environment),
        "ocp:openstack:MasterPointers": Kind("pointer-master", "a master's pointer", {"create": frozenset({pointer_script("master")})}, pointer_environment),
        "ocp:nodes:WorkerImages": Kind(
            "images", "a worker's images", {"create": frozenset({worker_images_script()})},
            {
                "IMAGES_SOURCE": among("install", "cluster"), "INSTALL_IMAGES": data, "KUBECONFIG_DATA": kubeconfig,
                "PULL_SECRET": pull_secret, "OC": oc, "COMPONENTS": pattern(_WORDS, "payload names"), "SERVER": node, "API_URL": data,
            },
        ),
    }


def _kind_of(kinds: Mapping[str, Kind], type_: str, urn: str) -> Kind | None:
    if type_ != COMMAND:
        return None
    chain = _qualified(urn).split("$")
    kind = kinds.get(chain[-2] + (" mark" if _name(urn).endswith("-mark-on-destroy") else "")) if len(chain) >= 2 else None
    if kind is not None and kind.name == "drain" and not _name(urn).endswith("-drain"):
        return None
    return kind


def _command(kind: Kind, values: Mapping[str, Any]) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for field in SCRIPTS:
        if field not in values or values[field] is None:
            continue
        text = plain(values[field])
        if text is ...:
            found.append((field, ENCRYPTED))
        elif field not in kind.scripts:
            found.append((field, f"is set, and this program gives {kind.title} no {field}"))
        elif not isinstance(text, str) or not _known(kind, field, text):
            found.append((field, f"is not this program's script for {kind.title} (nor an earlier release's)"))
    interpreter = plain(values.get("interpreter"))
    if interpreter not in (None, kind.interpreter) and not (kind.interpreter is None and interpreter == []):
        found.append(("interpreter", f"is not {kind.interpreter or 'the default /bin/sh -c'}, as this program gives {kind.title}"))
    if values.get("dir") is not None:
        found.append(("dir", f"is set, and this program runs {kind.title} in the project's directory"))
    environment = plain(values.get("environment"))
    if environment is None:
        return found
    if environment is ...:
        return [*found, ("environment", ENCRYPTED)]
    if not isinstance(environment, Mapping):
        return [*found, ("environment", "is no map of variables")]
    for key in sorted(environment):
        check = kind.environment.get(key)
        value = environment[key]
        if check is None:
            found.append((f"environment.{key}", f"is no variable this program sets for {kind.title}"))
        elif value is ...:
            found.append((f"environment.{key}", ENCRYPTED))
        elif not isinstance(value, str):
            found.append((f"environment.{key}", "is no text"))
        else:
            why = check(value)
            if why is not None:
                found.append((f"environment.{key}", why))
    return found


def _known(kind: Kind, field: str, text: str) -> bool:
    if text in kind.scripts[field]:
        return True
    again = (kind.parsed or {}).get(field)
    if again is not None and again(text):
        return True
    digest = hashlib.sha256(text.encode()).hexdigest()
    return digest in EARLIER.get((kind.name, field), frozenset())


def _cleanup_again(text: str) -> bool:
    """The cleanup's script with the zones of the program's own per-zone groups (cleanup_script), made again from them."""
    first, _, _ = text.partition("\n")
    prefix = f"export {OWN_GROUP_ZONES}="
    if not first.startswith(prefix):
        return False
    try:
        words = shlex.split(first[len(prefix):])
        zones = json.loads(words[0]) if len(words) == 1 else None
    except ValueError:
        return False
    if not isinstance(zones, dict) or not all(
        role in ("master", "worker") and isinstance(names, list) and all(isinstance(zone, str) for zone in names) for role, names in zones.items()
    ):
        return False
    return cleanup_script(zones) == text


def _upload_again(text: str) -> bool:
    """The helper's upload (upload_script of upload_command), made again from its URL path, which must be the derived one's shape."""
    for algorithm in (KEY_TYPE.decode(), ECDSA_KEY_TYPE.decode()):
        prefix = upload_script("", algorithm).removesuffix("''\n")  # the script, then the remote command quoted
        if not text.startswith(prefix):
            continue
        try:
            words = shlex.split(text[len(prefix):])
        except ValueError:
            return False
        found = re.search(r"printf '%s\\n' (\S+) \| ", words[0]) if len(words) == 1 else None
        if found is None or not _HELPER_PATH.fullmatch(found.group(1)):
            return False
        return text == upload_script(upload_command(f"https://helper{found.group(1)}"), algorithm)
    return False


def _provider(package: str, values: Mapping[str, Any], config: ClusterConfig | None) -> list[tuple[str, str]]:
    """Which plugin the engine loads, and how it is configured, come from the state on a destroy: the engine keeps
    the plugin's name, download URL and parameterization under `__internal` (or, from older engines, beside the
    settings: pkg/resource/deploy/providers/registry.go)."""
    found = []
    internal = plain(values.get("__internal"))
    internal = internal if isinstance(internal, Mapping) else {}
    if values.get("pluginDownloadURL") or internal.get("pluginDownloadURL"):
        found.append(("pluginDownloadURL", "is set: this program's providers come from the plugins installed here"))
    if internal.get("name") not in (None, package) or values.get("parameterization") or internal.get("parameterization"):
        found.append(("__internal", f"names another plugin than {package}, or parameterizes it: this program does neither"))
    if package == "libvirt" and "uri" in values:
        uri = plain(values["uri"])
        given = config.libvirt.uri if config is not None and config.libvirt is not None else None
        if given is not None and uri != given:
            found.append(("uri", f"is not the stack file's ocp:libvirt.uri ({given})"))
        elif given is None and re.search(r"[?&](command|netcat)=", str(uri), re.IGNORECASE):
            found.append(("uri", "names a program to run (command= or netcat=)"))
    # The OpenStack provider also keeps what the runner's OS_* variables gave it (region, insecure): only its cloud is known.
    given = config.openstack.cloud if config is not None and config.openstack is not None else None
    if package == "openstack" and given is not None and "cloud" in values and plain(values["cloud"]) != given:
        found.append(("cloud", f"is not the stack file's ocp:openstack.cloud ({given})"))
    # The command plugin's framework adds its own version (pulumi-go-provider's CheckConfig).
    settings = set(values) - {"version", "__internal", "__pulumi-go-provider-version"}
    if package == "command" and settings:
        found.append(("inputs", f"{', '.join(sorted(settings))}: this program's command provider has no settings"))
    return found


def _stated(config: ClusterConfig | None) -> Callable[[str], str | None]:
    """A setting of the stack file by its dotted key, as a string, or None."""
    document = config.model_dump(mode="json", by_alias=True, exclude={"pull_secret"}) if config is not None else {}

    def get(key: str) -> str | None:
        value: Any = document
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value if isinstance(value, str) else None

    return get


def _qualified(urn: str) -> str:
    parts = urn.split("::")
    return parts[2] if len(parts) >= 4 else ""


def _name(urn: str) -> str:
    parts = urn.split("::")
    return "::".join(parts[3:]) if len(parts) >= 4 else urn
