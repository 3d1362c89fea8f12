"""Kubernetes and OpenShift config objects as the installer writes them."""

from __future__ import annotations

from typing import Any

from tools.sample_installer.render import _b64
from tools.sample_installer.x509 import _CertKey


def _meta(name: str, namespace: str | None = None, timestamp: bool = True) -> dict[str, Any]:
    """metadata; objects the installer marshals from Go structs carry creationTimestamp: null,
    those it renders from templates do not (timestamp=False)."""
    meta: dict[str, Any] = {"creationTimestamp": None, "name": name} if timestamp else {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return meta


def _config_map(name: str, namespace: str, data: dict[str, str], timestamp: bool = True) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(name, namespace, timestamp), "data": data}


def _secret(
    name: str, namespace: str, data: dict[str, str], kind: str | None = "Opaque", timestamp: bool = True
) -> dict[str, Any]:
    """A Secret; kind None leaves `type` out, as some of the installer's templates do."""
    encoded = {key: _b64(value) for key, value in data.items()}
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": _meta(name, namespace, timestamp), "data": encoded}
    if kind is not None:
        secret["type"] = kind
    return secret


def _tls_secret(name: str, namespace: str, pair: _CertKey, timestamp: bool = True) -> dict[str, Any]:
    return _secret(name, namespace, {"tls.crt": pair.cert, "tls.key": pair.key}, "kubernetes.io/tls", timestamp)


def _config_object(kind: str, spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "config.openshift.io/v1",
        "kind": kind,
        "metadata": _meta("cluster"),
        "spec": spec,
        "status": status or {},
    }
