"""The values a stack's state holds that the state's check (cluster/state_scripts.py) takes as data, each
checked by its shape: where a value can carry a program (a kubeconfig's `exec`, a pull secret's credential
helper, a path naming a tool), the shape leaves none. Pure Python.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable
from typing import Any

import yaml

from cluster.installer_output import unbundle

# Pulumi's mark of a secret value in an export (`--show-secrets` adds its plaintext, JSON-encoded).
SECRET_SIG = "4dabf18193072939515e22adb298388d"
# What a kubeconfig of the installer's holds; `exec` and `auth-provider` run programs, file paths read this machine's files.
_KUBECONFIG_KEYS = {"apiVersion", "kind", "clusters", "contexts", "current-context", "users", "preferences"}
_KUBECONFIG_PARTS = {
    "clusters": ("cluster", {"server", "certificate-authority-data", "tls-server-name"}),
    "contexts": ("context", {"cluster", "user", "namespace"}),
    "users": ("user", {"client-certificate-data", "client-key-data", "token"}),
}

# One value's check: None when it passes, else what is wrong (never the value itself: it may be a secret).
Check = Callable[[Any], "str | None"]


def kubeconfig_problem(text: Any) -> str | None:
    """None for a kubeconfig of the installer's shape (certificates or a token, no program, no local file)."""
    if not isinstance(text, str):
        return "is no kubeconfig"
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        return "is no kubeconfig (not YAML)"
    if not isinstance(document, dict):
        return "is no kubeconfig"
    extra = set(document) - _KUBECONFIG_KEYS
    if extra:
        return f"is a kubeconfig with {', '.join(sorted(map(str, extra)))}, which the installer's has not"
    if document.get("preferences") not in (None, {}):
        return "is a kubeconfig with preferences, which the installer's has not"
    for section, (inner, allowed) in _KUBECONFIG_PARTS.items():
        entries = document.get(section) or []
        if not isinstance(entries, list):
            return f"is a kubeconfig whose {section} is no list"
        for entry in entries:
            body = entry.get(inner) if isinstance(entry, dict) else None
            if not isinstance(body, dict) or set(entry) - {"name", inner}:
                return f"is a kubeconfig with a malformed {section} entry"
            extra = set(body) - allowed
            if extra:
                # exec and auth-provider run programs; the file paths read this machine's files.
                return f"is a kubeconfig whose {section} have {', '.join(sorted(map(str, extra)))}: the installer's never does (exec and auth-provider run programs)"
    return None


def pull_secret_problem(text: Any) -> str | None:
    """None for a registry auth file of `auths` alone (credHelpers and credsStore name programs to run)."""
    try:
        document = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        document = None
    if not isinstance(document, dict) or not isinstance(document.get("auths"), dict):
        return "is no pull secret (JSON with auths)"
    if set(document) != {"auths"}:
        return f"is a pull secret with {', '.join(sorted(set(document) - {'auths'}))} (credential helpers are programs): only auths"
    return None


def data(value: str) -> str | None:
    """Any text: the scripts quote it and nothing runs it."""
    return None


def among(*allowed: str) -> Check:
    return lambda value: None if value in allowed else f"is none of {', '.join(allowed)}"


def pattern(shape: re.Pattern[str], what: str) -> Check:
    return lambda value: None if shape.fullmatch(value) else f"is not {what}"


def one_or(given: str | None, otherwise: Check) -> Check:
    """The stack file's value, else whatever `otherwise` takes."""
    return lambda value: None if given is not None and value == given else otherwise(value)


def stack_file(given: str | None) -> Check:
    """The stack file's value (of a key a running stack cannot change); any, as data, where it cannot be read."""
    return lambda value: None if given is None or value == given else f"is not the stack file's ({given})"


def program(given: str | None, names: str, what: str) -> Check:
    """A program the stack file names: its value, or (a key that may have changed since the command stored
    it) a path ending in the same tool's name."""
    shape = re.compile(r"([^\n]*/)?" + names)
    return one_or(given, lambda value: None if shape.fullmatch(value) else f"names no {what} (the stack file's: {given})")


def address(value: str) -> str | None:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return "is not an IP address"
    return None


def plain(value: Any) -> Any:
    """A value of the export with its secrets' plaintext; `...` where it stays encrypted."""
    if isinstance(value, dict):
        if SECRET_SIG in value:
            if "plaintext" not in value:
                return ...
            return plain(json.loads(value["plaintext"]))
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def bundle_problem(stdout: Any) -> str | None:
    """The installer's output: the kubeconfig in it becomes the drains', the pointers' and the driver's."""
    text = plain(stdout)
    if not isinstance(text, str) or not text or text.startswith("[sha256 "):  # none yet, or a test state's digest
        return None
    try:
        files = unbundle(text)
    except ValueError:
        return "is not the installer's bundle"
    kubeconfig = files.get("auth/kubeconfig")
    if kubeconfig is None:
        return None
    why = kubeconfig_problem(kubeconfig.decode(errors="replace"))
    return None if why is None else f"holds an auth/kubeconfig that {why}"
