"""The cluster's configuration: what a stack file may say, checked before anything is created.

Pure Python (pydantic v2), no Pulumi. `load_config` takes the stack's `ocp:*` keys as
Pulumi hands them to a program (objects as JSON text) and returns a frozen `ClusterConfig`,
or raises `ConfigError` with one message per problem, each naming the key as the user
writes it (`ocp:masters.count`) and saying what to write instead.

The parts: the value types (config_fields), the sections (config_schema), the rules across
keys (config_rules); this module reads the keys and words pydantic's errors.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from cluster.config_base import ConfigError
from cluster.config_fields import pem_bundle_problem
from cluster.config_openstack import OpenStack
from cluster.config_rules import Partial, cross_key_problems
from cluster.config_schema import ClusterConfig, Libvirt, RoleBase

# Public import paths of the sections and checks, as the program and the tests use them.
__all__ = [
    "ClusterConfig",
    "ConfigError",
    "KNOWN_KEYS",
    "Libvirt",
    "OpenStack",
    "RoleBase",
    "STRUCTURED_KEYS",
    "load_config",
    "parse_raw",
    "pem_bundle_problem",
    "secret_problems",
]

NAMESPACE = "ocp"
# Keys that may be set with --secret: the program writes them only into the installer's
# secret outputs (install-config, ignition). Any other key reaches resources in clear.
SECRET_KEYS = ("pullSecret", "proxy")

# Keys the program reads; anything else in the `ocp:` namespace is an error.
KNOWN_KEYS = tuple(field.alias or to_camel(name) for name, field in ClusterConfig.model_fields.items())
# Keys whose value is an object or a list: Pulumi hands those over as JSON text.
STRUCTURED_KEYS = frozenset(
    {
        "masters", "workers", "bootstrap", "openstack", "libvirt", "installer", "nameservers", "proxy", "tags",
        "networking", "clusterNetwork", "capabilities", "imageDigestSources", "ntpServers",
    }
)
# Lists the installer also takes as one string (one address, or comma-separated).
SCALAR_LISTS = frozenset({"nameservers", "ntpServers"})
# The default OpenStack provider's key; the program's own provider reads ocp:openstack.cloud.
PROVIDER_CLOUD = "openstack:cloud"


def parse_raw(raw: Mapping[str, str], problems: list[str] | None = None) -> dict[str, Any]:
    """Turn Pulumi's `ocp:key -> text` config into model input; objects arrive as JSON text.
    A key that cannot be read is left out and its problem appended to `problems` (raised
    as ConfigError when no list is passed)."""
    found: list[str] = []
    data: dict[str, Any] = {}
    for full_key, text in raw.items():
        namespace, _, key = full_key.partition(":")
        if namespace != NAMESPACE:
            continue
        if isinstance(text, str) and not text.strip():
            found.append(f"ocp:{key}: is empty: give it a value or remove the line")
        elif key in STRUCTURED_KEYS and isinstance(text, str):
            try:
                data[key] = json.loads(text)
            except ValueError as error:
                if key in SCALAR_LISTS:
                    data[key] = text
                else:
                    found.append(f"ocp:{key}: expected an object or a list, got text that is not JSON ({error.msg})")
        else:
            data[key] = text
    if problems is None and found:
        raise ConfigError(found)
    if problems is not None:
        problems += found
    return data


def load_config(raw: Mapping[str, str]) -> ClusterConfig:
    """The stack's configuration (`ocp:*` keys, and `openstack:cloud` if set), or ConfigError
    listing every problem at once."""
    problems: list[str] = []
    data = parse_raw(raw, problems)
    unreadable = {problem.split(":", 2)[1] for problem in problems}
    problems += _provider_cloud(raw.get(PROVIDER_CLOUD), data)
    for key in sorted(set(data) - set(KNOWN_KEYS)):
        problems.append(f"ocp:{key}: not a setting of this program{_did_you_mean(key, KNOWN_KEYS)}")
        del data[key]
    try:
        config = ClusterConfig.model_validate(data)
    except ValidationError as error:
        items = [item for item in error.errors() if not (item["type"] == "missing" and item["loc"][0] in unreadable)]
        problems += [message for item in items for message in _describe(item)]
        if all(item["loc"] for item in items):  # cross-key checks did not run: run those they can
            problems += cross_key_problems(_partial(data))
        raise ConfigError(list(dict.fromkeys(problems))) from None
    if problems:
        raise ConfigError(problems)
    return config


def secret_problems(secret_keys: Iterable[str]) -> list[str]:
    """Keys set with --secret whose values the program would write into resources in clear."""
    return [
        f"{full_key}: is set as a secret, but the program writes it into resources in clear (names, tags, "
        f"addresses): only {' and '.join(f'ocp:{key}' for key in SECRET_KEYS)} stay secret; set it without "
        "--secret (`pulumi config set` again) if it may be seen, or leave it out"
        for full_key in sorted(secret_keys)
        if full_key.partition(":")[2] in set(KNOWN_KEYS) - set(SECRET_KEYS)
    ]


def _provider_cloud(cloud: str | None, data: dict[str, Any]) -> list[str]:
    """One source of truth for the cloud: ocp:openstack.cloud, taken from openstack:cloud when
    only that is set; two different values are refused."""
    section = data.get("openstack")
    if cloud is None or not isinstance(section, dict):
        return []
    if "cloud" not in section:
        data["openstack"] = {**section, "cloud": cloud}
        return []
    if section["cloud"] != cloud:
        return [
            f"ocp:openstack.cloud: {section['cloud']!r} contradicts {PROVIDER_CLOUD} {cloud!r}, and the program "
            f"creates every resource in ocp:openstack.cloud: remove {PROVIDER_CLOUD} (or make both the same "
            "clouds.yaml entry)"
        ]
    return []


def _partial(data: Mapping[str, Any]) -> Partial:
    values = {}
    for name, field in ClusterConfig.model_fields.items():
        key = field.alias or to_camel(name)
        if key in data:
            try:
                values[name] = _adapter(name).validate_python(data[key])
            except ValidationError:
                continue
        elif not field.is_required():
            values[name] = field.get_default(call_default_factory=True)
    fields_set = {name for name, field in ClusterConfig.model_fields.items() if (field.alias or to_camel(name)) in data}
    return Partial(values, fields_set, ClusterConfig)


_ADAPTERS: dict[str, TypeAdapter] = {}


def _adapter(name: str) -> TypeAdapter:
    if name not in _ADAPTERS:
        _ADAPTERS[name] = TypeAdapter(ClusterConfig.model_fields[name].rebuild_annotation())
    return _ADAPTERS[name]


# Hints for required keys, by the end of their path.
_REQUIRED_HINTS = {
    "rootVolume.size": (
        "is required: the boot volume's size in GiB, e.g. size: 120 (or remove rootVolume to boot from the flavor's disk)"
    ),
}


def _describe(item: Mapping[str, Any]) -> list[str]:
    path = [str(part) for part in item["loc"] if not _is_union_tag(part)]
    message = item["msg"].removeprefix("Value error, ")
    if item["type"] == "extra_forbidden":
        message = "unknown key" + (
            _did_you_mean(path[-1], _keys_at(path[:-1])) or ": remove it or check its spelling against docs/config.md"
        )
    elif item["type"] in ("tuple_type", "list_type"):
        message = "is not a list: write [a, b], or one `- item` per line under the key"
    elif item["type"] == "missing":
        dotted = ".".join(path)
        message = next((hint for end, hint in _REQUIRED_HINTS.items() if dotted.endswith(end)), "is required")
    if not path:  # model-level validators name their keys in the message, one problem per line
        return message.splitlines()
    key = f"ocp:{path[0]}" + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in path[1:])
    return [f"{key}: {message}"]


def _did_you_mean(key: str, known: Iterable[str]) -> str:
    known = list(known)
    if to_camel(key) in known and to_camel(key) != key:
        return f": keys are camelCase, write {to_camel(key)}"
    close = [name for name in known if name.lower() == key.lower()] or difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if close:
        return f": did you mean {close[0]}?"
    return f" (known: {', '.join(sorted(known))})" if known else ""


def _keys_at(path: list[str]) -> list[str]:
    """The keys the model accepts at `path` (camelCase), for spelling suggestions."""
    model: type[BaseModel] | None = ClusterConfig
    for part in path:
        field = next((f for n, f in model.model_fields.items() if part in (n, f.alias or to_camel(n))), None) if model else None
        model = _model_in(field.annotation) if field else None
    return [field.alias or to_camel(name) for name, field in model.model_fields.items()] if model else []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in getattr(annotation, "__args__", ()):
        found = _model_in(argument)
        if found is not None:
            return found
    return None


def _is_union_tag(part: Any) -> bool:
    # pydantic names union branches in locations ("literal['create','none']", "function-after[...]")
    return isinstance(part, str) and ("[" in part or part in {"str", "int", "IPv4Address"})
