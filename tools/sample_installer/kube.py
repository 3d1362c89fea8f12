"""Kubernetes and OpenShift config objects as the installer writes them."""

from __future__ import annotations

from typing import Any

from tools.sample_installer.render import _b64
from tools.sample_installer.x509 import _CertKey


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"creationTimestamp": None, "name": name}
    if namespace:
        meta["namespace"] = namespace
    return meta


def _config_map(name: str, namespace: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(name, namespace), "data": data}


def _secret(name: str, namespace: str, data: dict[str, str], kind: str = "Opaque") -> dict[str, Any]:
    encoded = {key: _b64(value) for key, value in data.items()}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": _meta(name, namespace), "data": encoded, "type": kind}


def _tls_secret(name: str, namespace: str, pair: _CertKey) -> dict[str, Any]:
    return _secret(name, namespace, {"tls.crt": pair.cert, "tls.key": pair.key}, "kubernetes.io/tls")


def _config_object(kind: str, spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "config.openshift.io/v1",
        "kind": kind,
        "metadata": _meta("cluster"),
        "spec": spec,
        "status": status or {},
    }
