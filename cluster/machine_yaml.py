"""YAML that a program wrote (the installer's manifests and kubeconfig, a cloud description), read on
every run of the program: with LibYAML's parser where PyYAML has it, several times faster than the
pure one. A user's own files (stack files, manifests) keep the pure parser, whose errors the program
quotes."""

from __future__ import annotations

from typing import Any

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(data: str | bytes) -> Any:
    return yaml.load(data, Loader=_LOADER)  # noqa: S506 - a SafeLoader
