"""Read a `Pulumi.<stack>.yaml` into the `ocp:key -> text` form a Pulumi program receives.

Used where there is no Pulumi CLI to do it (offline plan, tests). Objects become JSON text
and booleans `true`/`false`, as the CLI passes them. `secure:` values cannot be decrypted
here; they are left out and reported, so the caller can substitute sample values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True)
class StackFile:
    path: Path
    config: dict[str, str]
    encrypted_keys: tuple[str, ...]


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def read_stack_file(path: str | Path) -> StackFile:
    path = Path(path)
    document = yaml.safe_load(path.read_text()) or {}
    config: dict[str, str] = {}
    encrypted = []
    for key, value in (document.get("config") or {}).items():
        if isinstance(value, dict) and set(value) == {"secure"}:
            encrypted.append(key)
            continue
        config[key] = _as_text(value)
    return StackFile(path, config, tuple(encrypted))
