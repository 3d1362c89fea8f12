"""Property values as the engine sends them to a provider that accepts secrets, and the diff
the provider framework computes from them.

On the wire (google.protobuf.Struct) a secret is an object carrying the signature key with the
secret signature and a `value`; an unknown is one of seven sentinel strings (one per type);
assets, archives and resource references are signature objects this provider never looks
into (kept as they came). Here a secret is `Secret(value)`, an unknown `Unknown(sentinel)`,
an opaque signature object `Opaque(raw)`; everything else is plain Python (numbers are floats,
as in a Struct). Object properties that are null are dropped on the way in, as the framework's
unmarshalling does (SkipNulls); null array elements stay.

The diff follows the Pulumi SDK that pulumi-command 1.2.1 builds with (sdk/v3 v3.224.0,
provider/go.mod): `PropertyMap.diff`/`PropertyValue.diff` (sdk/go/common/resource/properties_diff.go)
and `NewDetailedDiffFromObjectDiff` (sdk/go/common/resource/plugin/provider.go:642-708), with
property paths written as `PropertyPath.String` writes them (properties_path.go:574-608). Secrets
and unknowns are leaves there: a changed secret list is one change of the whole property.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from google.protobuf import struct_pb2

SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
OUTPUT_VALUE_SIG = "d0e6a833031e9bbcd3f4e8bde6ca49a4"
# sdk/go/common/resource/plugin/rpc.go: the unknown sentinels, bool, number, string, array, asset, archive, object.
UNKNOWN_STRING = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
UNKNOWN_SENTINELS = frozenset(
    {
        "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",
        "3eeb2bf0-c639-47a8-9e75-3b44932eb421",
        UNKNOWN_STRING,
        "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",
        "030794c1-ac77-496b-92df-f27374a8bd58",
        "e48ece36-62e2-4504-bad9-02848725956a",
        "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",
    }
)


@dataclass(frozen=True)
class Secret:
    value: Any


@dataclass(frozen=True)
class Unknown:
    sentinel: str = UNKNOWN_STRING


@dataclass(frozen=True)
class Opaque:
    """An asset, archive, resource reference or byte string: compared, never looked into."""

    raw: Any


UNKNOWN = Unknown()


# --- wire <-> Python ---------------------------------------------------------------------


def from_struct(struct: struct_pb2.Struct | None) -> dict[str, Any]:
    if struct is None:
        return {}
    return _object({key: _plain(value) for key, value in struct.fields.items()})


def _plain(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        return {key: _plain(item) for key, item in value.struct_value.fields.items()}
    if kind == "list_value":
        return [_plain(item) for item in value.list_value.values]
    if kind == "null_value" or kind is None:
        return None
    return getattr(value, kind)


def _object(raw: dict[str, Any]) -> dict[str, Any]:
    return {key: from_raw(item) for key, item in raw.items() if item is not None}


def from_raw(raw: Any) -> Any:
    if isinstance(raw, str) and raw in UNKNOWN_SENTINELS:
        return Unknown(raw)
    if isinstance(raw, list):
        return [from_raw(item) for item in raw]
    if isinstance(raw, dict):
        signature = raw.get(SIG_KEY)
        if signature == SECRET_SIG:
            return Secret(from_raw(raw.get("value")))
        if signature == OUTPUT_VALUE_SIG:
            # An output value: known or not, maybe secret; its dependencies do not matter here.
            inner = from_raw(raw["value"]) if "value" in raw else UNKNOWN
            return Secret(inner) if raw.get("secret") else inner
        if signature is not None:
            return Opaque(raw)
        return _object(raw)
    return raw


def to_struct(values: dict[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update({key: _raw(value) for key, value in values.items() if value is not None})
    return struct


def _raw(value: Any) -> Any:
    if isinstance(value, Secret):
        return {SIG_KEY: SECRET_SIG, "value": _raw(value.value)}
    if isinstance(value, Unknown):
        return value.sentinel
    if isinstance(value, Opaque):
        return value.raw
    if isinstance(value, dict):
        return {key: _raw(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_raw(item) for item in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    raise TypeError(f"cannot send {type(value).__name__} to the engine")


def reveal(value: Any) -> Any:
    """The plain value, secrets opened (for running a command)."""
    if isinstance(value, Secret):
        return reveal(value.value)
    if isinstance(value, dict):
        return {key: reveal(item) for key, item in value.items()}
    if isinstance(value, list):
        return [reveal(item) for item in value]
    return value


def is_unknown(value: Any) -> bool:
    """Top-level unknown, secret or not (putil.IsComputed)."""
    while isinstance(value, Secret):
        value = value.value
    return isinstance(value, Unknown)


# --- equality and diff (sdk v3.224.0 properties_diff.go) -------------------------------------


def deep_equals(old: Any, new: Any) -> bool:
    if isinstance(old, list):
        return isinstance(new, list) and len(old) == len(new) and all(deep_equals(a, b) for a, b in zip(old, new))
    if isinstance(old, dict):
        if not isinstance(new, dict):
            return False
        for key in old.keys() | new.keys():
            if key in old and key in new:
                if not deep_equals(old[key], new[key]):
                    return False
            elif (old if key in old else new)[key] is not None:
                return False
        return True
    if isinstance(old, Secret):
        return isinstance(new, Secret) and deep_equals(old.value, new.value)
    if isinstance(old, Unknown):
        return isinstance(new, Unknown)
    if isinstance(new, (list, dict, Secret, Unknown)):
        return False
    if type(old) is bool or type(new) is bool:
        return type(old) is type(new) and old == new
    return old == new


@dataclass
class ObjectDiff:
    adds: dict[str, Any]
    deletes: dict[str, Any]
    updates: dict[str, ValueDiff]


@dataclass
class ArrayDiff:
    adds: dict[int, Any]
    deletes: dict[int, Any]
    updates: dict[int, ValueDiff]


@dataclass
class ValueDiff:
    old: Any
    new: Any
    array: ArrayDiff | None = None
    object: ObjectDiff | None = None


def object_diff(old: dict[str, Any], new: dict[str, Any]) -> ObjectDiff | None:
    adds: dict[str, Any] = {}
    deletes: dict[str, Any] = {}
    updates: dict[str, ValueDiff] = {}
    for key, before in old.items():
        if key in new:
            after = new[key]
            change = value_diff(before, after)
            if change is None:
                continue
            if before is None:
                adds[key] = after
            elif after is None:
                deletes[key] = before
            else:
                updates[key] = change
        elif before is not None:
            deletes[key] = before
    for key, after in new.items():
        if key not in old and after is not None:
            adds[key] = after
    if not (adds or deletes or updates):
        return None
    return ObjectDiff(adds, deletes, updates)


def value_diff(old: Any, new: Any) -> ValueDiff | None:
    if isinstance(old, list) and isinstance(new, list):
        adds = {index: new[index] for index in range(len(old), len(new))}
        deletes = {index: old[index] for index in range(len(new), len(old))}
        updates = {}
        for index in range(min(len(old), len(new))):
            change = value_diff(old[index], new[index])
            if change is not None:
                updates[index] = change
        if not (adds or deletes or updates):
            return None
        return ValueDiff(old, new, array=ArrayDiff(adds, deletes, updates))
    if isinstance(old, dict) and isinstance(new, dict):
        change = object_diff(old, new)
        return None if change is None else ValueDiff(old, new, object=change)
    return None if deep_equals(old, new) else ValueDiff(old, new)


ADD, ADD_REPLACE, DELETE, DELETE_REPLACE, UPDATE, UPDATE_REPLACE = "add", "add&replace", "delete", "delete&replace", "update", "update&replace"
AS_REPLACE = {ADD: ADD_REPLACE, DELETE: DELETE_REPLACE, UPDATE: UPDATE_REPLACE}


def detailed_diff(change: ObjectDiff | None) -> dict[str, str]:
    """Property path -> kind, as NewDetailedDiffFromObjectDiff gives it."""
    out: dict[str, str] = {}
    if change is not None:
        _object_details((), change, out)
    return out


def _object_details(prefix: tuple, change: ObjectDiff, out: dict[str, str]) -> None:
    for key, value in change.updates.items():
        _value_details((*prefix, key), value, out)
    for key in change.adds:
        out[path_string((*prefix, key))] = ADD
    for key in change.deletes:
        out[path_string((*prefix, key))] = DELETE


def _value_details(prefix: tuple, change: ValueDiff, out: dict[str, str]) -> None:
    if change.object is not None:
        _object_details(prefix, change.object, out)
    elif change.array is not None:
        for index, value in change.array.updates.items():
            _value_details((*prefix, index), value, out)
        for index in change.array.adds:
            out[path_string((*prefix, index))] = ADD
        for index in change.array.deletes:
            out[path_string((*prefix, index))] = DELETE
    elif change.old is None and change.new is not None:
        out[path_string(prefix)] = ADD
    elif change.old is not None and change.new is None:
        out[path_string(prefix)] = DELETE
    else:
        out[path_string(prefix)] = UPDATE


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_]+")


def path_string(path: tuple) -> str:
    text = ""
    for position, element in enumerate(path):
        if isinstance(element, int):
            text += f"[{element}]"
        elif _PLAIN_KEY.fullmatch(element):
            text += element if position == 0 else f".{element}"
        else:
            text += '["' + element.replace('"', '\\"') + '"]'
    return text


def path_head(path: str) -> str:
    """The top-level property of a path string (the rpc layer reports changes by it)."""
    if path.startswith('["'):
        end = 2
        while path[end] != '"' or path[end - 1] == "\\":
            end += 1
        return path[2:end].replace('\\"', '"')
    match = re.match(r"[^.\[]*", path)
    return match.group(0) if match else path
