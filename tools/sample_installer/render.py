"""Serialising like the installer (Go's YAML and JSON), kubeconfigs and pointer configs."""

from __future__ import annotations

import base64
import json
from typing import Any

import yaml

from tools.sample_installer.install_config import _Cluster
from tools.sample_installer.release import IGNITION_VERSION
from tools.sample_installer.x509 import _CertKey

_DATA_URL = "data:text/plain;charset=utf-8;base64,"


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Safe dumper (libyaml when available: it is ~20x faster) with block scalars like Go's yaml."""

    def ignore_aliases(self, data: Any) -> bool:
        return True  # Go's yaml repeats a shared value; it never writes &anchors


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _represent_str)


def _yaml(doc: Any) -> str:
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=1 << 16)


def _b64(data: str | bytes) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def _json(doc: Any) -> bytes:
    """Compact JSON escaped like Go's encoding/json (the installer's writer)."""
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    # <, > and & only occur inside JSON strings, so a blanket replace is safe.
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e").encode()


def _fill(template: str, **values: str) -> str:
    """Substitute @KEY@ placeholders (shell and unit text is full of ${} and {})."""
    for key, value in values.items():
        template = template.replace(f"@{key}@", value)
    return template


def _kubeconfig(cluster: _Cluster, server: str, ca: str, user: str, client: _CertKey) -> str:
    # No apiVersion or kind: the installer's kubeconfigs have neither.
    return _yaml(
        {
            "clusters": [
                {"cluster": {"certificate-authority-data": _b64(ca), "server": server}, "name": cluster.name}
            ],
            "contexts": [{"context": {"cluster": cluster.name, "user": user}, "name": user}],
            "current-context": user,
            "preferences": {},
            "users": [
                {
                    "name": user,
                    "user": {"client-certificate-data": _b64(client.cert), "client-key-data": _b64(client.key)},
                }
            ],
        }
    )


def _pointer_ignition(cluster: _Cluster, role: str, root_ca: str) -> bytes:
    return _json(
        {
            "ignition": {
                "config": {"merge": [{"source": f"https://{cluster.mcs_host}:22623/config/{role}"}]},
                "security": {"tls": {"certificateAuthorities": [{"source": _DATA_URL + _b64(root_ca)}]}},
                "version": IGNITION_VERSION,
            }
        }
    )
