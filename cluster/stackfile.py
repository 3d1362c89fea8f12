"""Read a `Pulumi.<stack>.yaml` into the `ocp:key -> text` form a Pulumi program receives.

Used where there is no Pulumi CLI to do it (offline plan, tests). Objects become JSON text
and booleans `true`/`false`, as the CLI passes them. `secure:` values cannot be decrypted
here; they are left out and reported, so the caller can substitute sample values. A file
that is not what Pulumi reads raises StackFileError naming `file:line:column`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


class StackFileError(ValueError):
    """The stack file itself is unreadable: one message, `path:line:column: what to fix`."""


@dataclass(frozen=True)
class StackFile:
    path: Path
    config: dict[str, str]
    encrypted_keys: tuple[str, ...]


class _Loader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice (PyYAML would keep the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                first = seen[key].start_mark.line + 1
                raise yaml.constructor.ConstructorError(
                    None, None, f"{key} is given twice (first on line {first}): keep one", key_node.start_mark
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _Loader.construct_mapping)

_HINT = "indent with spaces only, close every quote and bracket, one `ocp:key: value` per line under `config:`"


def _as_text(value: Any) -> str:
    if value is None:
        return ""  # `ocp:key:` with nothing after it; the config check names the key
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _holds_secure(value: Any) -> bool:
    if isinstance(value, dict):
        return set(value) == {"secure"} or any(_holds_secure(item) for item in value.values())
    return isinstance(value, list) and any(_holds_secure(item) for item in value)


def read_stack_file(path: str | Path) -> StackFile:
    path = Path(path)
    try:
        document = yaml.load(path.read_text(), Loader=_Loader) or {}  # noqa: S506 - a SafeLoader
    except yaml.MarkedYAMLError as error:
        # An unclosed quote is found at the end of the file: point at where it opens.
        opened = error.context is not None and error.context.startswith("while scanning")
        mark = (error.context_mark if opened else None) or error.problem_mark or error.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        what = " ".join(part for part in (error.problem, error.context) if part)
        hint = "" if "given twice" in what else f" ({_HINT})"
        raise StackFileError(f"{where}: {what}{hint}") from None
    except yaml.YAMLError as error:
        raise StackFileError(f"{path}: not YAML ({error}); {_HINT}") from None
    config_section = document.get("config") if isinstance(document, dict) else None
    if not isinstance(document, dict) or not isinstance(config_section, (dict, type(None))):
        raise StackFileError(f"{path}: expected a mapping with a `config:` mapping of `ocp:key: value` lines")
    config: dict[str, str] = {}
    encrypted = []
    for key, value in (config_section or {}).items():
        if _holds_secure(value):  # the CLI marks the whole key secret, `--path` parts too
            encrypted.append(key)
            continue
        config[str(key)] = _as_text(value)
    return StackFile(path, config, tuple(encrypted))
