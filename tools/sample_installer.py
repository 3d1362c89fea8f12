"""A deterministic FAKE `openshift-install create manifests | ignition-configs` (platform none or openstack).

Tests and the offline plan use it instead of the real installer.  The output has
the shape of real openshift-install 4.12 output (Ignition spec 3.2.0), but every
key, certificate, password and ID is pseudo-random data seeded from a sha256 of
the install-config.  Nothing in it is a secret:

* certificates are well-formed X.509 DER (so SANs and subjects can be read back)
  whose subjects carry an "OU=FAKE ..." marker; their signatures are random bytes;
* private keys are PKCS#1-shaped random integers preceded by a "FAKE" text line,
  which PEM parsers skip.

Usage:
    python -m tools.sample_installer create manifests --dir DIR          (then edit or delete manifests)
    python -m tools.sample_installer create ignition-configs --dir DIR
    python -m tools.sample_installer version
    python -m tools.sample_installer write-samples --out DIR --install-config FILE
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import ipaddress
import json
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, NoReturn, Sequence

import yaml

from cluster.installer import ASSET_FILES, RELEASE_COMPONENTS

IGNITION_VERSION = "3.2.0"
RELEASE_IMAGE = "quay.io/openshift-release-dev/ocp-release:4.12.0-x86_64"
INSTALLER_VERSION = "v4.12.0"
OUTPUT_FILES = ASSET_FILES
FAKE_MARKER = "FAKE tools/sample_installer.py"

_DATA_URL = "data:text/plain;charset=utf-8;base64,"
# Alphabets of the real installer (k8s utilrand for the infra ID, password.go for kubeadmin).
_INFRA_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_PASSWORD_ALPHABET = "abcdefghijkmnopqrstuvwxyzABCDEFGHIJKLMNPQRSTUVWXYZ23456789"
_BCRYPT_ALPHABET = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
# As the installer: manifests 0644, TLS material, kubeconfigs and the pull secret 0600.
_MODE_SCRIPT = 0o755
_MODE_FILE = 0o644
_MODE_SECRET = 0o600


# --------------------------------------------------------------------------- seeded randomness


class _Rand:
    """Named, independent byte streams from one seed, so adding a new draw never shifts others."""

    def __init__(self, seed: bytes) -> None:
        self._seed = seed

    def draw(self, label: str, size: int) -> bytes:
        return hashlib.shake_256(self._seed + b"\0" + label.encode()).digest(size)

    def text(self, label: str, alphabet: str, size: int) -> str:
        return "".join(alphabet[b % len(alphabet)] for b in self.draw(label, size))


# --------------------------------------------------------------------------- minimal DER / X.509


def _der(tag: int, body: bytes) -> bytes:
    size = len(body)
    if size < 0x80:
        return bytes((tag, size)) + body
    length = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes((tag, 0x80 | len(length))) + length + body


def _seq(*items: bytes) -> bytes:
    return _der(0x30, b"".join(items))


def _uint(raw: bytes) -> bytes:
    """Non-negative INTEGER from big-endian bytes."""
    raw = raw.lstrip(b"\0") or b"\0"
    return _der(0x02, b"\0" + raw if raw[0] & 0x80 else raw)


def _oid(dotted: str) -> bytes:
    first, second, *rest = (int(arc) for arc in dotted.split("."))
    body = bytearray([40 * first + second])
    for arc in rest:
        chunk = [arc & 0x7F]
        while arc := arc >> 7:
            chunk.append(0x80 | (arc & 0x7F))
        body += bytes(reversed(chunk))
    return _der(0x06, bytes(body))


def _bit_flags(flags: int) -> bytes:
    """BIT STRING for a one-byte flag set such as KeyUsage (bit 0 = 0x80), DER-minimal."""
    unused = (flags & -flags).bit_length() - 1
    return _der(0x03, bytes((unused, flags)))


_NULL = b"\x05\x00"
_TRUE = b"\x01\x01\xff"
_RSA_ALG = _seq(_oid("1.2.840.113549.1.1.1"), _NULL)
_SIG_ALG = _seq(_oid("1.2.840.113549.1.1.11"), _NULL)  # sha256WithRSAEncryption
_NAME_OIDS = {"O": _oid("2.5.4.10"), "OU": _oid("2.5.4.11"), "CN": _oid("2.5.4.3")}
_EXT_BASIC_CONSTRAINTS = _oid("2.5.29.19")
_EXT_KEY_USAGE = _oid("2.5.29.15")
_EXT_EXT_KEY_USAGE = _oid("2.5.29.37")
_EXT_SUBJECT_KEY_ID = _oid("2.5.29.14")
_EXT_AUTHORITY_KEY_ID = _oid("2.5.29.35")
_EXT_SAN = _oid("2.5.29.17")
_SERVER_AUTH = _oid("1.3.6.1.5.5.7.3.1")
_CLIENT_AUTH = _oid("1.3.6.1.5.5.7.3.2")
# A fixed validity window keeps the output byte-for-byte deterministic.
_VALIDITY = _seq(_der(0x17, b"240101000000Z"), _der(0x17, b"340101000000Z"))
_RSA_EXPONENT = b"\x01\x00\x01"


def _name(org: str | None, unit: str | None, common_name: str) -> bytes:
    rdns = [("O", org), ("OU", unit), ("OU", FAKE_MARKER), ("CN", common_name)]
    return _seq(
        *(
            _der(0x31, _seq(_NAME_OIDS[kind], _der(0x0C, value.encode())))
            for kind, value in rdns
            if value is not None
        )
    )


def _extension(oid: bytes, value: bytes, critical: bool = False) -> bytes:
    return _seq(oid, _TRUE if critical else b"", _der(0x04, value))


def _pem(label: str, der: bytes) -> str:
    body = base64.b64encode(der).decode()
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    return f"-----BEGIN {label}-----\n{lines}\n-----END {label}-----\n"


@dataclass(frozen=True)
class _KeyPair:
    key: str  # PEM private key (with a leading FAKE line)
    public_key_info: bytes  # DER SubjectPublicKeyInfo
    key_id: bytes

    @property
    def public_pem(self) -> str:
        return _pem("PUBLIC KEY", self.public_key_info)


@dataclass(frozen=True)
class _CertKey:
    cert: str  # PEM certificate
    key: str  # PEM private key
    subject: bytes
    key_id: bytes


def _key_pair(rand: _Rand, name: str) -> _KeyPair:
    """RSA-2048-shaped key: random modulus and private integers (not a usable key)."""
    modulus = bytearray(rand.draw(f"{name}/modulus", 256))
    modulus[0] |= 0x80
    modulus[-1] |= 1
    public = _seq(_uint(bytes(modulus)), _uint(_RSA_EXPONENT))
    private = _seq(
        _uint(b"\0"),
        _uint(bytes(modulus)),
        _uint(_RSA_EXPONENT),
        _uint(rand.draw(f"{name}/d", 256)),
        *(_uint(rand.draw(f"{name}/{part}", 128)) for part in ("p", "q", "dp", "dq", "qinv")),
    )
    return _KeyPair(
        key=f"{FAKE_MARKER}: random test key, not a secret\n" + _pem("RSA PRIVATE KEY", private),
        public_key_info=_seq(_RSA_ALG, _der(0x03, b"\0" + public)),
        key_id=hashlib.sha1(public).digest(),
    )


def _issue(
    rand: _Rand,
    name: str,
    common_name: str,
    *,
    org: str | None = None,
    unit: str | None = None,
    issuer: _CertKey | None = None,
    usages: Sequence[bytes] = (),
    dns: Sequence[str] = (),
    ips: Sequence[str] = (),
) -> _CertKey:
    """A certificate like the installer's tls assets; self-signed CA when issuer is None."""
    pair = _key_pair(rand, name)
    subject = _name(org, unit, common_name)
    is_ca = issuer is None
    extensions = [
        _extension(_EXT_KEY_USAGE, _bit_flags(0xA4 if is_ca else 0xA0), critical=True),
        _extension(_EXT_BASIC_CONSTRAINTS, _seq(_TRUE) if is_ca else _seq(), critical=True),
        _extension(_EXT_SUBJECT_KEY_ID, _der(0x04, pair.key_id)),
    ]
    if usages:
        extensions.append(_extension(_EXT_EXT_KEY_USAGE, _seq(*usages)))
    if issuer is not None:
        extensions.append(_extension(_EXT_AUTHORITY_KEY_ID, _seq(_der(0x80, issuer.key_id))))
    if dns or ips:
        names = [_der(0x82, host.encode()) for host in dns]
        names += [_der(0x87, ipaddress.ip_address(ip).packed) for ip in ips]
        extensions.append(_extension(_EXT_SAN, _seq(*names)))
    tbs = _seq(
        _der(0xA0, _uint(b"\x02")),  # v3
        _uint(rand.draw(f"{name}/serial", 16)),
        _SIG_ALG,
        subject if issuer is None else issuer.subject,
        _VALIDITY,
        subject,
        pair.public_key_info,
        _der(0xA3, _seq(*extensions)),
    )
    cert = _seq(tbs, _SIG_ALG, _der(0x03, b"\0" + rand.draw(f"{name}/signature", 256)))
    return _CertKey(_pem("CERTIFICATE", cert), pair.key, subject, pair.key_id)


# --------------------------------------------------------------------------- install-config


@dataclass(frozen=True)
class _OpenStack:
    """platform.openstack of the install-config."""

    cloud: str
    api_vips: tuple[str, ...]
    ingress_vips: tuple[str, ...]
    external_network: str
    cluster_os_image: str
    load_balancer: str  # OpenShiftManagedDefault, or UserManaged


@dataclass(frozen=True)
class _Cluster:
    name: str
    base_domain: str
    infra_id: str
    cluster_id: str
    machine_networks: list[str]
    cluster_networks: list[dict[str, Any]]
    service_networks: list[str]
    network_type: str
    ssh_key: str
    pull_secret: str
    proxy: dict[str, str]
    trust_bundle: str
    control_plane_replicas: int
    compute_replicas: int
    install_config: dict[str, Any]
    openstack: _OpenStack | None = None  # None: platform none

    @property
    def domain(self) -> str:
        return f"{self.name}.{self.base_domain}"

    @property
    def api(self) -> str:
        return f"api.{self.domain}"

    @property
    def api_int(self) -> str:
        return f"api-int.{self.domain}"

    @property
    def api_vips(self) -> tuple[str, ...]:
        return self.openstack.api_vips if self.openstack else ()

    @property
    def mcs_host(self) -> str:
        """Where pointer configs fetch from: the first API VIP on OpenStack, whose MCS
        certificate carries it, unless the user runs the load balancer; api-int otherwise."""
        if self.openstack and self.openstack.load_balancer != "UserManaged":
            vip = ipaddress.ip_address(self.openstack.api_vips[0])
            return f"[{vip}]" if vip.version == 6 else str(vip)
        return self.api_int

    @property
    def has_proxy(self) -> bool:
        return bool(self.proxy.get("httpProxy") or self.proxy.get("httpsProxy"))


def _infra_id(name: str, rand: _Rand) -> str:
    """Like the installer: sanitized name cut to 21 chars, '-', 5 random chars."""
    base = "".join(c if c.isascii() and (c.isalnum() or c == "-") else "-" for c in name)
    while "--" in base:
        base = base.replace("--", "-")
    return f"{base[:21].rstrip('-')}-{rand.text('infra-id', _INFRA_ALPHABET, 5)}"


def _cidrs(values: list[str], field: str) -> list[str]:
    try:
        return [str(ipaddress.ip_network(value)) for value in values]
    except (TypeError, ValueError) as err:
        raise ValueError(f"install-config: invalid {field}: {err}") from err


def _parse(install_config_yaml: str, rand: _Rand) -> _Cluster:
    try:
        config = yaml.safe_load(install_config_yaml)
    except yaml.YAMLError as err:
        raise ValueError(f"install-config is not valid YAML: {err}") from err
    if not isinstance(config, dict):
        raise ValueError("install-config must be a YAML mapping")
    name = (config.get("metadata") or {}).get("name")
    base_domain = config.get("baseDomain")
    if not name or not base_domain:
        raise ValueError("install-config needs metadata.name and baseDomain")
    pull_secret = config.get("pullSecret") or '{"auths":{}}'
    try:
        json.loads(pull_secret)
    except (TypeError, ValueError) as err:
        raise ValueError(f"install-config: pullSecret is not JSON: {err}") from err
    networking = config.get("networking") or {}
    # Defaults below are the installer's own for unset fields.
    machine = [n["cidr"] for n in networking.get("machineNetwork") or [{"cidr": "10.0.0.0/16"}]]
    clusters = networking.get("clusterNetwork") or [{"cidr": "10.128.0.0/14", "hostPrefix": 23}]
    _cidrs([n["cidr"] for n in clusters], "networking.clusterNetwork")
    compute = config.get("compute") or [{"name": "worker", "replicas": 3}]
    platform = config.get("platform") or {"none": {}}
    openstack = platform.get("openstack") if isinstance(platform, dict) else None
    return _Cluster(
        name=str(name),
        base_domain=str(base_domain),
        infra_id=_infra_id(str(name), rand),
        cluster_id=str(uuid.UUID(bytes=rand.draw("cluster-id", 16), version=4)),
        machine_networks=_cidrs(machine, "networking.machineNetwork"),
        cluster_networks=clusters,
        service_networks=_cidrs(networking.get("serviceNetwork") or ["172.30.0.0/16"], "serviceNetwork"),
        network_type=networking.get("networkType") or "OVNKubernetes",
        ssh_key=str(config.get("sshKey") or "").strip(),
        pull_secret=pull_secret,
        proxy={k: str(v) for k, v in (config.get("proxy") or {}).items()},
        trust_bundle=str(config.get("additionalTrustBundle") or ""),
        control_plane_replicas=int((config.get("controlPlane") or {}).get("replicas", 3)),
        compute_replicas=sum(int(pool.get("replicas", 3)) for pool in compute),
        install_config=config,
        openstack=None if openstack is None else _openstack(openstack),
    )


def _openstack(section: Any) -> _OpenStack:
    """platform.openstack, with the installer's defaults; the deprecated singular keys refused."""
    if not isinstance(section, dict):
        raise ValueError("install-config: platform.openstack must be a mapping")
    for singular, plural in (("apiVIP", "apiVIPs"), ("ingressVIP", "ingressVIPs"), ("machinesSubnet", "controlPlanePort")):
        if singular in section:
            raise ValueError(f"install-config: platform.openstack.{singular} is deprecated: use {plural}")
    vips: dict[str, tuple[str, ...]] = {}
    for key in ("apiVIPs", "ingressVIPs"):
        values = section.get(key)
        if not values or not isinstance(values, list):
            raise ValueError(f"install-config: platform.openstack.{key} is required (a list of addresses)")
        try:
            vips[key] = tuple(str(ipaddress.ip_address(v)) for v in values)
        except ValueError as err:
            raise ValueError(f"install-config: platform.openstack.{key}: {err}") from err
    if set(vips["apiVIPs"]) & set(vips["ingressVIPs"]):
        raise ValueError("install-config: platform.openstack.apiVIPs and ingressVIPs must differ")
    load_balancer = str((section.get("loadBalancer") or {}).get("type") or "OpenShiftManagedDefault")
    return _OpenStack(
        # Without a name the installer takes $OS_CLOUD, then "openstack"; a fake reads no environment.
        cloud=str(section.get("cloud") or "openstack"),
        api_vips=vips["apiVIPs"],
        ingress_vips=vips["ingressVIPs"],
        external_network=str(section.get("externalNetwork") or ""),
        cluster_os_image=str(section.get("clusterOSImage") or ""),
        load_balancer=load_balancer,
    )


# --------------------------------------------------------------------------- PKI


@dataclass(frozen=True)
class _PKI:
    certs: dict[str, _CertKey]  # /opt/openshift/tls/<name>.{crt,key}
    bundles: dict[str, str]  # /opt/openshift/tls/<name>.crt
    service_account: _KeyPair


def _pki(cluster: _Cluster, rand: _Rand) -> _PKI:
    signer_names = (
        "root-ca",
        "admin-kubeconfig-signer",
        "aggregator-signer",
        "etcd-signer",
        "etcd-metric-signer",
        "kube-apiserver-lb-signer",
        "kube-apiserver-localhost-signer",
        "kube-apiserver-service-network-signer",
        "kube-apiserver-to-kubelet-signer",
        "kube-control-plane-signer",
        "kubelet-bootstrap-kubeconfig-signer",
        "kubelet-signer",
    )
    signers = {name: _issue(rand, name, name, unit="openshift") for name in signer_names}
    service_ip = str(ipaddress.ip_network(cluster.service_networks[0])[1])
    service_names = [
        f"{prefix}{suffix}"
        for prefix in ("kubernetes", "openshift")
        for suffix in ("", ".default", ".default.svc", ".default.svc.cluster.local")
    ]
    server, client = [_SERVER_AUTH], [_CLIENT_AUTH]
    leaves = {
        "admin-kubeconfig-client": dict(
            cn="system:admin", org="system:masters", signer="admin-kubeconfig-signer", usages=client
        ),
        "aggregator-client": dict(
            cn="system:kube-apiserver-proxy", org="kube-master", signer="aggregator-signer", usages=client
        ),
        "etcd-client": dict(cn="etcd", org="etcd", signer="etcd-signer", usages=client),
        "etcd-metric-client": dict(cn="etcd-metric", org="etcd-metric", signer="etcd-metric-signer", usages=client),
        "journal-gatewayd": dict(cn="journal-gatewayd", org="OpenShift Bootstrap", signer="root-ca", usages=server),
        "kube-apiserver-lb-server": dict(
            cn="system:kube-apiserver", org="kube-master", signer="kube-apiserver-lb-signer",
            usages=server, dns=[cluster.api],
        ),
        "kube-apiserver-internal-lb-server": dict(
            cn="system:kube-apiserver", org="kube-master", signer="kube-apiserver-lb-signer",
            usages=server, dns=[cluster.api_int],
        ),
        "kube-apiserver-localhost-server": dict(
            cn="system:kube-apiserver", org="kube-master", signer="kube-apiserver-localhost-signer",
            usages=server, dns=["localhost"], ips=["127.0.0.1", "::1"],
        ),
        "kube-apiserver-service-network-server": dict(
            cn="system:kube-apiserver", org="kube-master", signer="kube-apiserver-service-network-signer",
            usages=server, dns=service_names, ips=[service_ip],
        ),
        "kube-apiserver-to-kubelet-client": dict(
            cn="system:kube-apiserver", org="kube-master", signer="kube-apiserver-to-kubelet-signer", usages=client
        ),
        "kube-control-plane-kube-controller-manager-client": dict(
            cn="system:admin", org="system:masters", signer="kube-control-plane-signer", usages=client
        ),
        "kube-control-plane-kube-scheduler-client": dict(
            cn="system:admin", org="system:masters", signer="kube-control-plane-signer", usages=client
        ),
        "kubelet-client": dict(
            cn="system:serviceaccount:openshift-machine-config-operator:node-bootstrapper",
            org="system:serviceaccounts:openshift-machine-config-operator",
            signer="kubelet-bootstrap-kubeconfig-signer", usages=client,
        ),
        # Platform none: only api-int. OpenStack: the API VIPs too (as IP and, like the
        # installer, as DNS names), so pointer configs can fetch from the VIP by address.
        "machine-config-server": dict(
            cn="system:machine-config-server", org=None, signer="root-ca", usages=server,
            dns=[cluster.api_int, *cluster.api_vips], ips=list(cluster.api_vips),
        ),
    }
    certs = dict(signers)
    for name, spec in leaves.items():
        certs[name] = _issue(
            rand, name, spec["cn"], org=spec["org"], issuer=signers[spec["signer"]],
            usages=spec["usages"], dns=spec.get("dns", ()), ips=spec.get("ips", ()),
        )

    def bundle(*names: str) -> str:
        return "".join(signers[name].cert for name in names)

    server_bundle = bundle(
        "kube-apiserver-lb-signer", "kube-apiserver-localhost-signer", "kube-apiserver-service-network-signer"
    )
    bundles = {
        "admin-kubeconfig-ca-bundle": bundle("admin-kubeconfig-signer"),
        "aggregator-ca-bundle": bundle("aggregator-signer"),
        "etcd-ca-bundle": bundle("etcd-signer"),
        "etcd-metric-ca-bundle": bundle("etcd-metric-signer"),
        "kube-apiserver-complete-server-ca-bundle": server_bundle,
        "kube-apiserver-complete-client-ca-bundle": bundle(
            "admin-kubeconfig-signer", "kubelet-signer", "kube-control-plane-signer",
            "kube-apiserver-to-kubelet-signer", "kubelet-bootstrap-kubeconfig-signer",
        ),
        "kube-apiserver-lb-ca-bundle": bundle("kube-apiserver-lb-signer"),
        "kube-apiserver-localhost-ca-bundle": bundle("kube-apiserver-localhost-signer"),
        "kube-apiserver-service-network-ca-bundle": bundle("kube-apiserver-service-network-signer"),
        "kube-apiserver-to-kubelet-ca-bundle": bundle("kube-apiserver-to-kubelet-signer"),
        "kube-control-plane-ca-bundle": bundle("kube-control-plane-signer", "kube-apiserver-lb-signer"),
        "kubelet-bootstrap-kubeconfig-ca-bundle": bundle("kubelet-bootstrap-kubeconfig-signer"),
        "kubelet-client-ca-bundle": bundle("kubelet-signer"),
        "kubelet-serving-ca-bundle": bundle("kubelet-signer"),
    }
    return _PKI(certs, bundles, _key_pair(rand, "service-account"))


# --------------------------------------------------------------------------- rendering helpers


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Safe dumper (libyaml when available: it is ~20x faster) with block scalars like Go's yaml."""


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
    return _yaml(
        {
            "apiVersion": "v1",
            "clusters": [
                {"cluster": {"certificate-authority-data": _b64(ca), "server": server}, "name": cluster.name}
            ],
            "contexts": [{"context": {"cluster": cluster.name, "user": user}, "name": user}],
            "current-context": user,
            "kind": "Config",
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


def _kubeadmin_password(rand: _Rand) -> str:
    raw = rand.text("kubeadmin-password", _PASSWORD_ALPHABET, 20)
    return "-".join(raw[i : i + 5] for i in range(0, 20, 5))


# --------------------------------------------------------------------------- manifests


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


def _topology(replicas: int) -> str:
    return "SingleReplica" if replicas == 1 else "HighlyAvailable"


def _no_proxy(cluster: _Cluster) -> str:
    """status.noProxy as the installer computes it."""
    entries = {".cluster.local", ".svc", "127.0.0.1", "localhost", cluster.api_int}
    entries.update(cluster.machine_networks, cluster.service_networks)
    entries.update(n["cidr"] for n in cluster.cluster_networks)
    entries.update(e.strip() for e in cluster.proxy.get("noProxy", "").split(",") if e.strip())
    return ",".join(sorted(entries))


def _proxy_manifest(cluster: _Cluster) -> dict[str, Any]:
    """The installer always writes the Proxy; it is empty when install-config has none."""
    spec: dict[str, Any] = {
        key: cluster.proxy[key] for key in ("httpProxy", "httpsProxy", "noProxy") if cluster.proxy.get(key)
    }
    # The bundle becomes the cluster's trusted CA with a proxy, or when the policy says Always.
    trusted = cluster.trust_bundle and (cluster.has_proxy or cluster.install_config.get("additionalTrustBundlePolicy") == "Always")
    spec["trustedCA"] = {"name": "user-ca-bundle" if trusted else ""}
    status = {key: value for key, value in spec.items() if key in ("httpProxy", "httpsProxy")}
    if cluster.has_proxy:
        status["noProxy"] = _no_proxy(cluster)
    return _config_object("Proxy", spec, status)


def _infrastructure(cluster: _Cluster) -> dict[str, Any]:
    spec: dict[str, Any] = {"cloudConfig": {"name": ""}, "platformSpec": {"type": "None"}}
    platform: dict[str, Any] = {"type": "None"}
    if cluster.openstack:
        api, ingress = list(cluster.openstack.api_vips), list(cluster.openstack.ingress_vips)
        spec = {
            "cloudConfig": {"key": "config", "name": "cloud-provider-config"},
            "platformSpec": {
                "type": "OpenStack",
                "openstack": {"apiServerInternalIPs": api, "ingressIPs": ingress, "machineNetworks": cluster.machine_networks},
            },
        }
        platform = {
            "type": "OpenStack",
            "openstack": {
                "apiServerInternalIP": api[0],
                "apiServerInternalIPs": api,
                "ingressIP": ingress[0],
                "ingressIPs": ingress,
                "loadBalancer": {"type": cluster.openstack.load_balancer},
                "machineNetworks": cluster.machine_networks,
            },
        }
    status = {
        "apiServerInternalURI": f"https://{cluster.api_int}:6443",
        "apiServerURL": f"https://{cluster.api}:6443",
        "controlPlaneTopology": _topology(cluster.control_plane_replicas),
        "cpuPartitioning": "None",
        "etcdDiscoveryDomain": "",
        "infrastructureName": cluster.infra_id,
        "infrastructureTopology": _topology(cluster.compute_replicas or cluster.control_plane_replicas),
        "platform": platform["type"],
        "platformStatus": platform,
    }
    return _config_object("Infrastructure", spec, status)


def _core_user(cluster: _Cluster) -> dict[str, Any]:
    user: dict[str, Any] = {"name": "core"}
    if cluster.ssh_key:
        user["sshAuthorizedKeys"] = [cluster.ssh_key]
    return user


def _machine_config_ssh(cluster: _Cluster, role: str) -> dict[str, Any]:
    return {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfig",
        "metadata": {
            "creationTimestamp": None,
            "labels": {"machineconfiguration.openshift.io/role": role},
            "name": f"99-{role}-ssh",
        },
        "spec": {
            "baseOSExtensionsContainerImage": "",
            "config": {"ignition": {"version": IGNITION_VERSION}, "passwd": {"users": [_core_user(cluster)]}},
            "extensions": None,
            "fips": False,
            "kernelArguments": None,
            "kernelType": "",
            "osImageURL": "",
        },
    }


def _manifests(cluster: _Cluster, pki: _PKI, password_hash: str) -> dict[str, dict[str, Any]]:
    """/opt/openshift/{manifests,openshift}/* of the bootstrap node."""
    certs, bundles = pki.certs, pki.bundles
    root_ca = certs["root-ca"].cert
    public_config = {k: v for k, v in cluster.install_config.items() if k != "pullSecret"}
    public_config.setdefault("publish", "External")
    cluster_networks = [{"cidr": n["cidr"], "hostPrefix": n.get("hostPrefix", 23)} for n in cluster.cluster_networks]
    namespace = {"apiVersion": "v1", "kind": "Namespace"}
    etcd_ns = "openshift-etcd"
    m: dict[str, dict[str, Any]] = {
        "manifests/04-openshift-machine-config-operator.yaml": {
            **namespace,
            "metadata": {
                "name": "openshift-machine-config-operator",
                "annotations": {"include.release.openshift.io/self-managed-high-availability": "true"},
                "labels": {"name": "openshift-machine-config-operator", "openshift.io/run-level": ""},
            },
        },
        "manifests/cluster-config.yaml": _config_map(
            "cluster-config-v1", "kube-system", {"install-config": _yaml(public_config)}
        ),
        "manifests/cluster-dns-02-config.yml": _config_object(
            "DNS", {"baseDomain": cluster.domain, "platform": {"aws": None, "type": ""}}
        ),
        "manifests/cluster-infrastructure-02-config.yml": _infrastructure(cluster),
        "manifests/cluster-ingress-02-config.yml": _config_object(
            "Ingress", {"domain": f"apps.{cluster.domain}", "loadBalancer": {"platform": {"type": ""}}}, {}
        ),
        "manifests/cluster-network-02-config.yml": _config_object(
            "Network",
            {
                "clusterNetwork": cluster_networks,
                "externalIP": {"policy": {}},
                "networkType": cluster.network_type,
                "serviceNetwork": cluster.service_networks,
            },
        ),
        "manifests/cluster-proxy-01-config.yaml": _proxy_manifest(cluster),
        "manifests/cluster-scheduler-02-config.yml": _config_object(
            "Scheduler",
            {"mastersSchedulable": cluster.compute_replicas == 0, "policy": {"name": ""}},
        ),
        "manifests/cvo-overrides.yaml": {
            "apiVersion": "config.openshift.io/v1",
            "kind": "ClusterVersion",
            "metadata": {"name": "version", "namespace": "openshift-cluster-version"},
            "spec": {"channel": "stable-4.12", "clusterID": cluster.cluster_id},
        },
        "manifests/kube-cloud-config.yaml": _secret("kube-cloud-cfg", "kube-system", {"config": ""}),
        "manifests/kube-system-configmap-root-ca.yaml": _config_map("root-ca", "kube-system", {"ca.crt": root_ca}),
        "manifests/machine-config-server-tls-secret.yaml": _tls_secret(
            "machine-config-server-tls", "openshift-machine-config-operator", certs["machine-config-server"]
        ),
        "manifests/openshift-config-secret-pull-secret.yaml": _secret(
            "pull-secret", "openshift-config", {".dockerconfigjson": cluster.pull_secret},
            "kubernetes.io/dockerconfigjson",
        ),
        "manifests/openshift-kubevirt-infra-namespace.yaml": {
            **namespace,
            "metadata": {"name": "openshift-kubevirt-infra"},
        },
        "manifests/admin-kubeconfig-client-ca.yaml": _config_map(
            "admin-kubeconfig-client-ca", "openshift-config", {"ca-bundle.crt": bundles["admin-kubeconfig-ca-bundle"]}
        ),
        "manifests/configmap-csr-controller-ca.yaml": _config_map(
            "csr-controller-ca", "openshift-config-managed", {"ca-bundle.crt": bundles["kubelet-client-ca-bundle"]}
        ),
        "manifests/configmap-initial-etcd-serving-ca.yaml": _config_map(
            "initial-etcd-ca", "openshift-config", {"ca-bundle.crt": bundles["etcd-ca-bundle"]}
        ),
        "manifests/configmap-kubelet-bootstrap-kubeconfig-ca.yaml": _config_map(
            "kubelet-bootstrap-kubeconfig", "openshift-config-managed",
            {"ca-bundle.crt": bundles["kubelet-bootstrap-kubeconfig-ca-bundle"]},
        ),
        "manifests/configmap-sa-token-signing-certs.yaml": _config_map(
            "sa-token-signing-certs", "openshift-config-managed",
            {"service-account-001.pub": pki.service_account.public_pem},
        ),
        "manifests/csr-bootstrap-role-binding.yaml": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "system-bootstrap-node-bootstrapper"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:node-bootstrapper",
            },
            "subjects": [
                {"kind": "User", "name": "system:serviceaccount:openshift-machine-config-operator:node-bootstrapper"}
            ],
        },
        "manifests/etcd-ca-bundle-configmap.yaml": _config_map(
            "etcd-ca-bundle", "openshift-config", {"ca-bundle.crt": bundles["etcd-ca-bundle"]}
        ),
        "manifests/etcd-client-secret.yaml": _tls_secret("etcd-client", "openshift-config", certs["etcd-client"]),
        "manifests/etcd-metric-client-secret.yaml": _tls_secret(
            "etcd-metric-client", "openshift-config", certs["etcd-metric-client"]
        ),
        "manifests/etcd-metric-serving-ca-configmap.yaml": _config_map(
            "etcd-metric-serving-ca", "openshift-config", {"ca-bundle.crt": bundles["etcd-metric-ca-bundle"]}
        ),
        "manifests/etcd-metric-signer-secret.yaml": _tls_secret(
            "etcd-metric-signer", "openshift-config", certs["etcd-metric-signer"]
        ),
        "manifests/etcd-namespace.yaml": {
            **namespace,
            "metadata": {
                "name": etcd_ns,
                "annotations": {"openshift.io/node-selector": ""},
                "labels": {"openshift.io/run-level": "0"},
            },
        },
        "manifests/etcd-service.yaml": {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "etcd", "namespace": etcd_ns, "labels": {"k8s-app": "etcd"}},
            "spec": {
                "clusterIP": "None",
                "ports": [
                    {"name": "etcd", "port": 2379, "protocol": "TCP"},
                    {"name": "etcd-metrics", "port": 9979, "protocol": "TCP"},
                ],
                "selector": {"k8s-app": "etcd"},
            },
        },
        "manifests/etcd-serving-ca-configmap.yaml": _config_map(
            "etcd-serving-ca", "openshift-config", {"ca-bundle.crt": bundles["etcd-ca-bundle"]}
        ),
        "manifests/etcd-signer-secret.yaml": _tls_secret("etcd-signer", "openshift-config", certs["etcd-signer"]),
        "manifests/kube-apiserver-serving-ca-configmap.yaml": _config_map(
            "initial-kube-apiserver-server-ca", "openshift-config",
            {"ca-bundle.crt": bundles["kube-apiserver-complete-server-ca-bundle"]},
        ),
        "manifests/openshift-install-manifests.yaml": _config_map(
            "openshift-install-manifests", "openshift-config",
            {"invoker": "openshift-installer", "version": INSTALLER_VERSION},
        ),
        "openshift/99_kubeadmin-password-secret.yaml": _secret(
            "kubeadmin", "kube-system", {"kubeadmin": password_hash}
        ),
        "openshift/99_openshift-machineconfig_99-master-ssh.yaml": _machine_config_ssh(cluster, "master"),
        "openshift/99_openshift-machineconfig_99-worker-ssh.yaml": _machine_config_ssh(cluster, "worker"),
        "openshift/openshift-install.yaml": _config_map(
            "openshift-install", "openshift-config", {"invoker": "openshift-installer", "version": INSTALLER_VERSION}
        ),
    }
    for role in ("master", "worker"):
        user_data = _pointer_ignition(cluster, role, root_ca).decode()
        m[f"openshift/99_openshift-cluster-api_{role}-user-data-secret.yaml"] = _secret(
            f"{role}-user-data", "openshift-machine-api", {"disableTemplating": "true\n", "userData": user_data}
        )
    if cluster.trust_bundle:
        m["manifests/user-ca-bundle-config.yaml"] = _config_map(
            "user-ca-bundle", "openshift-config", {"ca-bundle.crt": cluster.trust_bundle}
        )
    if cluster.openstack:
        m.update(_openstack_manifests(cluster))
    return m


def _openstack_manifests(cluster: _Cluster) -> dict[str, dict[str, Any]]:
    """What `create manifests` adds for platform openstack: the cloud provider's config, the
    cloud credentials (a FAKE clouds.yaml) and the Machine API objects a UPI install deletes."""
    assert cluster.openstack is not None
    infra, replicas = cluster.infra_id, cluster.control_plane_replicas
    m: dict[str, dict[str, Any]] = {
        "manifests/cloud-provider-config.yaml": _config_map(
            "cloud-provider-config", "openshift-config", {"config": _cloud_provider_config(cluster.openstack)}
        ),
        "openshift/99_cloud-creds-secret.yaml": _secret(
            "openstack-credentials", "kube-system",
            {"clouds.yaml": _fake_clouds_yaml(cluster.openstack.cloud), "clouds.conf": _FAKE_CLOUDS_CONF},
        ),
        "openshift/99_role-cloud-creds-secret-reader.yaml": {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "openstack-creds-secret-reader", "namespace": "kube-system"},
            "rules": [
                {"apiGroups": [""], "resourceNames": ["openstack-credentials"], "resources": ["secrets"], "verbs": ["get"]}
            ],
        },
        "openshift/99_openshift-cluster-api_worker-machineset-0.yaml": _machine_set(cluster, f"{infra}-worker-0"),
        "openshift/99_openshift-machine-api_master-control-plane-machine-set.yaml": {
            "apiVersion": "machine.openshift.io/v1",
            "kind": "ControlPlaneMachineSet",
            "metadata": {**_meta("cluster", _MACHINE_API), "labels": {_CLUSTER_LABEL: infra}},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": _machine_labels(infra, "master")},
                "state": "Active",
                "strategy": {"type": "RollingUpdate"},
                "template": {
                    "machineType": "machines_v1beta1_machine_openshift_io",
                    "machines_v1beta1_machine_openshift_io": {
                        "metadata": {"labels": _machine_labels(infra, "master")},
                        "spec": _machine_spec(cluster, "master"),
                    },
                },
            },
            "status": {},
        },
    }
    for index in range(replicas):
        m[f"openshift/99_openshift-cluster-api_master-machines-{index}.yaml"] = {
            "apiVersion": "machine.openshift.io/v1beta1",
            "kind": "Machine",
            "metadata": {**_meta(f"{infra}-master-{index}", _MACHINE_API), "labels": _machine_labels(infra, "master")},
            "spec": _machine_spec(cluster, "master"),
            "status": {},
        }
    return m


_MACHINE_API = "openshift-machine-api"
_CLUSTER_LABEL = "machine.openshift.io/cluster-api-cluster"
# The installer writes the cloud provider's config under the secret's name, and the
# Machine API's copy of the credentials always names its cloud "openstack".
_CREDENTIALS_CLOUD = "openstack"
_FAKE_CLOUDS_CONF = (
    f"# {FAKE_MARKER}: not a credential\n[Global]\nauth-url = \"https://keystone.fake.invalid:5000/v3\"\n"
    'username = "fake"\npassword = "FAKE-not-a-password"\ntenant-name = "fake"\ndomain-name = "Default"\n'
)


def _fake_clouds_yaml(cloud: str) -> str:
    """Stands in for the user's clouds.yaml entry `cloud`, which a fake never reads; the
    installer stores that entry under the name "openstack"."""
    entry = {
        "auth": {
            "auth_url": "https://keystone.fake.invalid:5000/v3",  # .invalid never resolves
            "password": "FAKE-not-a-password",
            "project_name": "fake",
            "user_domain_name": "Default",
            "username": "fake",
        },
    }
    header = f"# {FAKE_MARKER}: stands in for the clouds.yaml entry {json.dumps(cloud)}; not a credential\n"
    return header + _yaml({"clouds": {_CREDENTIALS_CLOUD: entry}})


def _fake_uuid(kind: str, name: str) -> str:
    """A stable fake OpenStack ID for a name the real installer would look up in the cloud."""
    return str(uuid.UUID(bytes=hashlib.sha256(f"{FAKE_MARKER} {kind} {name}".encode()).digest()[:16], version=4))


def _cloud_provider_config(openstack: _OpenStack) -> str:
    config = "[Global]\nsecret-name = openstack-credentials\nsecret-namespace = kube-system\n"
    if openstack.external_network:  # LoadBalancer Services' floating IPs come from it
        config += f"\n[LoadBalancer]\nfloating-network-id = {_fake_uuid('network', openstack.external_network)}\n"
    return config


def _machine_labels(infra: str, role: str) -> dict[str, str]:
    return {
        _CLUSTER_LABEL: infra,
        "machine.openshift.io/cluster-api-machine-role": role,
        "machine.openshift.io/cluster-api-machine-type": role,
    }


def _machine_spec(cluster: _Cluster, role: str) -> dict[str, Any]:
    """A Machine's spec: the OpenStack provider spec, named and tagged as the installer does."""
    assert cluster.openstack is not None
    infra, config = cluster.infra_id, cluster.install_config
    pool = (config.get("controlPlane") or {}) if role == "master" else ((config.get("compute") or [{}])[0] or {})
    default_pool = cluster.install_config["platform"]["openstack"].get("defaultMachinePlatform") or {}
    flavor = ((pool.get("platform") or {}).get("openstack") or {}).get("type") or default_pool.get("type") or ""
    image = cluster.openstack.cluster_os_image
    if not image or "://" in image:  # a URL: the installer uploads it to Glance under this name
        image = f"{infra}-rhcos"
    tag = f"openshiftClusterID={infra}"
    provider = {
        "apiVersion": "machine.openshift.io/v1alpha1",
        "cloudName": _CREDENTIALS_CLOUD,
        "cloudsSecret": {"name": "openstack-cloud-credentials", "namespace": _MACHINE_API},
        "flavor": flavor,
        "image": image,
        "kind": "OpenstackProviderSpec",
        "metadata": {"creationTimestamp": None},
        "networks": [{"filter": {}, "subnets": [{"filter": {"name": f"{infra}-nodes", "tags": tag}}]}],
        "securityGroups": [{"filter": {}, "name": f"{infra}-{role}"}],
        "serverGroupName": f"{infra}-{role}",
        "serverMetadata": {"Name": f"{infra}-{role}", "openshiftClusterID": infra},
        "tags": [tag],
        "trunk": True,
        "userDataSecret": {"name": f"{role}-user-data"},
    }
    return {"lifecycleHooks": {}, "metadata": {}, "providerSpec": {"value": provider}}


def _machine_set(cluster: _Cluster, name: str) -> dict[str, Any]:
    infra = cluster.infra_id
    labels = _machine_labels(infra, "worker")
    return {
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "MachineSet",
        "metadata": {**_meta(name, _MACHINE_API), "labels": labels},
        "spec": {
            "replicas": cluster.compute_replicas,
            "selector": {"matchLabels": {_CLUSTER_LABEL: infra, "machine.openshift.io/cluster-api-machineset": name}},
            "template": {
                "metadata": {"labels": {**labels, "machine.openshift.io/cluster-api-machineset": name}},
                "spec": _machine_spec(cluster, "worker"),
            },
        },
        "status": {"replicas": 0},
    }


# --------------------------------------------------------------------------- bootstrap node text

# The bootstrap's scripts and units: stand-ins written for this fake, not the installer's.
# They sit at the installer's paths, under its unit names, so configs have the real shape;
# they do nothing.
_MOTD = "This is a bootstrap node (FAKE, generated by tools/sample_installer.py).\n"
_REGISTRIES_CONF = 'unqualified-search-registries = ["registry.example.com"]\n'
_SCRIPT_PURPOSES = {
    "approve-csr.sh": "approving kubelet CSRs while the control plane forms",
    "bootkube.sh": "rendering and starting the bootstrap control plane",
    "bootstrap-service-record.sh": "recording the progress of each bootstrap stage",
    "crio-configure.sh": "pointing CRI-O at the release's pause image",
    "installer-gather.sh": "collecting logs when the bootstrap fails",
    "kubelet.sh": "starting the kubelet on the bootstrap node",
    "release-image-download.sh": "pulling the release image",
    "release-image.sh": "naming the release image",
    "report-progress.sh": "reporting bootstrap progress to the cluster",
}


def _stand_in_script(name: str) -> str:
    return (
        "#!/usr/bin/env bash\n"
        f"# {FAKE_MARKER}: stands in for {name} ({_SCRIPT_PURPOSES[name]}); does nothing.\n"
        "set -euo pipefail\n"
        f'echo "{name}: fake, release @RELEASE_IMAGE@, installer @INSTALLER_VERSION@"\n'
    )


def _stand_in_unit(description: str, exec_start: str, oneshot: bool = True, wanted_by: str = "multi-user.target") -> str:
    service = "Type=oneshot\nRemainAfterExit=yes\n" if oneshot else "Restart=on-failure\nRestartSec=5\n"
    return (
        f"[Unit]\nDescription={description} ({FAKE_MARKER})\nWants=network-online.target\n"
        f"After=network-online.target\n\n[Service]\n{service}ExecStart={exec_start}\n\n"
        f"[Install]\nWantedBy={wanted_by}\n"
    )


_UNIT_APPROVE_CSR = _stand_in_unit("Approve kubelet CSRs", "/usr/local/bin/approve-csr.sh", oneshot=False)
_UNIT_BOOTKUBE = _stand_in_unit("Bootstrap the control plane", "/usr/local/bin/bootkube.sh")
_UNIT_CHOWN_GATEWAYD_KEY = _stand_in_unit(
    "Give the journal gateway its key",
    "/usr/bin/chown systemd-journal-gateway /opt/openshift/tls/journal-gatewayd.key",
    wanted_by="sockets.target",
)
_UNIT_CRIO_CONFIGURE = _stand_in_unit("Configure CRI-O", "/usr/local/bin/crio-configure.sh")
_UNIT_KUBELET = _stand_in_unit("Kubelet", "/usr/local/bin/kubelet.sh", oneshot=False)
_UNIT_PROGRESS = _stand_in_unit("Report bootstrap progress", "/usr/local/bin/report-progress.sh")
_UNIT_RELEASE_IMAGE = _stand_in_unit("Download the release image", "/usr/local/bin/release-image-download.sh")
_UNIT_GATEWAYD_SOCKET = f"[Unit]\nDescription=Journal gateway socket ({FAKE_MARKER})\n\n[Socket]\nListenStream=19531\n\n[Install]\nWantedBy=sockets.target\n"
_DROPIN_GATEWAYD_CERTS = (
    "[Service]\nExecStart=\nExecStart=/usr/lib/systemd/systemd-journal-gatewayd "
    "--key=/opt/openshift/tls/journal-gatewayd.key --cert=/opt/openshift/tls/journal-gatewayd.crt\n"
)


def _units() -> list[dict[str, Any]]:
    """systemd units, enabled exactly where the installer enables them; keys in Go struct order."""
    return [
        {"contents": _UNIT_APPROVE_CSR, "enabled": True, "name": "approve-csr.service"},
        {"contents": _UNIT_BOOTKUBE, "name": "bootkube.service"},
        {"contents": _UNIT_CHOWN_GATEWAYD_KEY, "enabled": True, "name": "chown-gatewayd-key.service"},
        {"contents": _UNIT_CRIO_CONFIGURE, "name": "crio-configure.service"},
        {"contents": _UNIT_KUBELET, "enabled": True, "name": "kubelet.service"},
        {"contents": _UNIT_PROGRESS, "enabled": True, "name": "progress.service"},
        {"contents": _UNIT_RELEASE_IMAGE, "name": "release-image.service"},
        {
            "dropins": [{"contents": _DROPIN_GATEWAYD_CERTS, "name": "certs.conf"}],
            "name": "systemd-journal-gatewayd.service",
        },
        {"contents": _UNIT_GATEWAYD_SOCKET, "enabled": True, "name": "systemd-journal-gatewayd.socket"},
    ]


def _ign_file(path: str, data: str | bytes, mode: int) -> dict[str, Any]:
    """A storage.files entry shaped like the installer's (Go struct field order, uncompressed data URL)."""
    return {
        "overwrite": True,
        "path": path,
        "user": {"name": "root"},
        "contents": {"source": _DATA_URL + _b64(data), "verification": {}},
        "mode": mode,
    }


def _bootstrap_files(cluster: _Cluster, pki: _PKI, kubeconfigs: dict[str, str], manifest_files: Mapping[str, bytes]) -> list[dict[str, Any]]:
    values = {"RELEASE_IMAGE": RELEASE_IMAGE, "INSTALLER_VERSION": INSTALLER_VERSION}
    files = [
        _ign_file(f"/usr/local/bin/{name}", _fill(_stand_in_script(name), **values), _MODE_SCRIPT)
        for name in _SCRIPT_PURPOSES
    ]
    files += [
        _ign_file("/etc/motd", _MOTD, _MODE_FILE),
        _ign_file("/etc/containers/registries.conf", _REGISTRIES_CONF, _MODE_FILE),
        _ign_file("/root/.docker/config.json", cluster.pull_secret, _MODE_SECRET),
        _ign_file("/etc/kubernetes/kubeconfig", kubeconfigs["kubelet"], _MODE_SECRET),
        _ign_file("/opt/openshift/auth/kubeconfig", kubeconfigs["admin-internal"], _MODE_SECRET),
        _ign_file("/opt/openshift/auth/kubeconfig-kubelet", kubeconfigs["kubelet"], _MODE_SECRET),
        _ign_file("/opt/openshift/auth/kubeconfig-loopback", kubeconfigs["loopback"], _MODE_SECRET),
    ]
    if cluster.trust_bundle:
        files.append(_ign_file("/etc/pki/ca-trust/source/anchors/ca.crt", cluster.trust_bundle, _MODE_FILE))
    if cluster.has_proxy:
        env = {"HTTP_PROXY": cluster.proxy.get("httpProxy"), "HTTPS_PROXY": cluster.proxy.get("httpsProxy")}
        lines = ["[Manager]"] + [f'DefaultEnvironment="{var}={url}"' for var, url in env.items() if url]
        lines.append(f'DefaultEnvironment="NO_PROXY={_no_proxy(cluster)}"')
        files.append(_ign_file("/etc/systemd/system.conf.d/10-default-env.conf", "\n".join(lines) + "\n", _MODE_FILE))
    for name, pair in pki.certs.items():
        files.append(_ign_file(f"/opt/openshift/tls/{name}.crt", pair.cert, _MODE_SECRET))
        files.append(_ign_file(f"/opt/openshift/tls/{name}.key", pair.key, _MODE_SECRET))
    for name, bundle in pki.bundles.items():
        files.append(_ign_file(f"/opt/openshift/tls/{name}.crt", bundle, _MODE_SECRET))
    files.append(_ign_file("/opt/openshift/tls/service-account.key", pki.service_account.key, _MODE_SECRET))
    files.append(_ign_file("/opt/openshift/tls/service-account.pub", pki.service_account.public_pem, _MODE_SECRET))
    for path, data in manifest_files.items():
        files.append(_ign_file(f"/opt/openshift/{path}", data, _MODE_FILE))
    return files


# --------------------------------------------------------------------------- public API


@dataclass(frozen=True)
class _Install:
    """Everything one install-config determines: the same for `create manifests` and
    `create ignition-configs`, so the two steps agree as the real installer's do."""

    cluster: _Cluster
    pki: _PKI
    rand: _Rand
    password: str
    password_hash: str


def _install(install_config_yaml: str) -> _Install:
    rand = _Rand(hashlib.sha256(install_config_yaml.encode()).digest())
    try:
        cluster = _parse(install_config_yaml, rand)
    except (KeyError, TypeError, AttributeError) as err:  # e.g. a network entry without "cidr"
        raise ValueError(f"install-config has an unexpected shape: {err!r}") from err
    password = _kubeadmin_password(rand)
    # Stands in for the bcrypt hash the installer stores; only its shape matters here.
    password_hash = "$2a$10$" + rand.text("kubeadmin-hash", _BCRYPT_ALPHABET, 53)
    return _Install(cluster, _pki(cluster, rand), rand, password, password_hash)


def manifests(install_config_yaml: str) -> dict[str, bytes]:
    """What `create manifests --dir D` writes into D/manifests and D/openshift, by relative path.
    Raises ValueError like generate()."""
    install = _install(install_config_yaml)
    return {path: _yaml(doc).encode() for path, doc in _manifests(install.cluster, install.pki, install.password_hash).items()}


def generate(install_config_yaml: str) -> dict[str, bytes]:
    """Return {relative path: content} exactly like `openshift-install create ignition-configs --dir D` leaves in D.

    Keys are OUTPUT_FILES.  Deterministic: everything is seeded from a sha256 of the install-config.
    Raises ValueError for an install-config that is not a YAML mapping, lacks metadata.name or
    baseDomain, is otherwise malformed, has invalid network CIDRs or a pullSecret that is not JSON.
    """
    return ignition_configs(install_config_yaml, manifests(install_config_yaml))


def ignition_configs(install_config_yaml: str, manifest_files: Mapping[str, bytes]) -> dict[str, bytes]:
    """What `create ignition-configs` writes given the manifests in its directory (as `create
    manifests` wrote them, minus what the caller deleted, plus what it edited)."""
    install = _install(install_config_yaml)
    cluster, pki = install.cluster, install.pki
    certs, bundles = pki.certs, pki.bundles
    server_ca = bundles["kube-apiserver-complete-server-ca-bundle"]
    admin, kubelet = certs["admin-kubeconfig-client"], certs["kubelet-client"]
    api, api_int = f"https://{cluster.api}:6443", f"https://{cluster.api_int}:6443"
    localhost_ca = bundles["kube-apiserver-localhost-ca-bundle"]
    kubeconfigs = {
        "admin": _kubeconfig(cluster, api, server_ca, "admin", admin),
        "admin-internal": _kubeconfig(cluster, api_int, server_ca, "admin", admin),
        "kubelet": _kubeconfig(cluster, api_int, server_ca, "kubelet", kubelet),
        "loopback": _kubeconfig(cluster, "https://localhost:6443", localhost_ca, "loopback", admin),
    }
    password = install.password
    bootstrap = {
        # Empty objects mirror Go's encoding of the installer's non-pointer structs.
        "ignition": {
            "config": {"replace": {"verification": {}}},
            "proxy": {},
            "security": {"tls": {}},
            "timeouts": {},
            "version": IGNITION_VERSION,
        },
        "passwd": {"users": [_core_user(cluster)]},
        "storage": {"files": _bootstrap_files(cluster, pki, kubeconfigs, manifest_files)},
        "systemd": {"units": _units()},
    }
    metadata: dict[str, Any] = {"clusterName": cluster.name, "clusterID": cluster.cluster_id, "infraID": cluster.infra_id}
    if cluster.openstack:
        metadata["openstack"] = {"cloud": cluster.openstack.cloud, "identifier": {"openshiftClusterID": cluster.infra_id}}
    root_ca = certs["root-ca"].cert
    return {
        "bootstrap.ign": _json(bootstrap),
        "master.ign": _pointer_ignition(cluster, "master", root_ca),
        "worker.ign": _pointer_ignition(cluster, "worker", root_ca),
        "metadata.json": _json(metadata),
        "auth/kubeconfig": kubeconfigs["admin"].encode(),
        "auth/kubeadmin-password": password.encode(),
    }


def release_images() -> dict[str, Any]:
    """What `openshift-install version` and `oc adm release info --image-for` would give for
    this fake release: digest-pinned pullspecs, fake digests (sha256 of the name)."""

    def digest(name: str) -> str:
        return "sha256:" + hashlib.sha256(f"{FAKE_MARKER} {name}".encode()).hexdigest()

    return {
        "release": f"quay.io/openshift-release-dev/ocp-release@{digest(RELEASE_IMAGE)}",
        "images": {name: f"quay.io/openshift-release-dev/ocp-v4.0-art-dev@{digest(name)}" for name in RELEASE_COMPONENTS},
    }


def write_files(files: dict[str, bytes], directory: Path) -> None:
    for relative, content in files.items():
        target = directory / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


# --------------------------------------------------------------------------- CLI


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """Report usage errors to main() instead of exiting, so main() returns its status."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{self.format_usage()}{self.prog}: error: {message}")


def _parser() -> _Parser:
    parser = _Parser(prog="python -m tools.sample_installer", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    create = commands.add_parser("create", help="like openshift-install create (ignition-configs only)")
    create.add_argument("asset", choices=["manifests", "ignition-configs"])
    create.add_argument("--dir", type=Path, default=Path("."), help="assets directory holding install-config.yaml")
    # Accepted so callers can pass the real installer's flag; logging is not simulated.
    create.add_argument("--log-level", choices=["debug", "info", "warn", "error"], default="info")
    commands.add_parser("version", help="like openshift-install version: the release image it installs")
    samples = commands.add_parser("write-samples", help="write the set into --out, keeping the install-config")
    samples.add_argument("--out", type=Path, required=True)
    samples.add_argument("--install-config", type=Path, required=True)
    return parser


STATE_FILE = ".openshift_install_state.json"


def _install_config_in(directory: Path) -> str:
    """The install-config of a --dir: the file, or (after `create manifests` consumed it) the state."""
    source = directory / "install-config.yaml"
    if source.is_file():
        return source.read_text()
    state = directory / STATE_FILE
    if state.is_file():
        text = json.loads(state.read_text()).get("install-config")
        if text:
            return text
    raise _UsageError(f"cannot read install-config: no {source}")


# What the installer loads from manifests/ and openshift/; other files there it ignores.
_MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def _manifest_paths(directory: Path) -> list[Path]:
    return sorted(
        path
        for sub in ("manifests", "openshift")
        if (directory / sub).is_dir()
        for path in (directory / sub).iterdir()
        if path.is_file() and path.suffix in _MANIFEST_SUFFIXES
    )


def _manifests_in(directory: Path, text: str) -> dict[str, bytes] | None:
    """The manifests `create manifests` left in --dir, as the caller left them; None if there are none."""
    found = {path.relative_to(directory).as_posix(): path.read_bytes() for path in _manifest_paths(directory)}
    if not found:
        return None
    # Generated order first, so untouched manifests give generate()'s very bytes.
    order = [name for name in manifests(text) if name in found]
    return {name: found[name] for name in order + sorted(set(found) - set(order))}


def _consume(directory: Path, paths: list[Path]) -> None:
    """Like the installer, remove what a step read from disk (it lives on in the state file)."""
    for path in paths:
        path.unlink()
    for sub in ("manifests", "openshift"):
        if (directory / sub).is_dir() and not any((directory / sub).iterdir()):
            (directory / sub).rmdir()


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        if args.command == "version":
            print(f"openshift-install {INSTALLER_VERSION} ({FAKE_MARKER})\nrelease image {release_images()['release']}")
            return 0
        consumed: list[Path] = []
        if args.command == "create":
            text = _install_config_in(args.dir)
            source = args.dir / "install-config.yaml"
        else:
            source = args.install_config
            try:
                text = source.read_text()
            except OSError as err:
                raise _UsageError(f"cannot read install-config: {err}") from err
        try:
            if args.command == "create" and args.asset == "manifests":
                files = manifests(text)
            elif args.command == "create":
                existing = _manifests_in(args.dir, text)
                files = generate(text) if existing is None else ignition_configs(text, existing)
                consumed = _manifest_paths(args.dir)
            else:
                files = generate(text)
        except ValueError as err:
            raise _UsageError(f"invalid install-config {source}: {err}") from err
    except _UsageError as err:
        print(err, file=sys.stderr)
        return 2
    if args.command == "create":
        write_files(files, args.dir)
        (args.dir / STATE_FILE).write_text(json.dumps({"install-config": text}))
        source.unlink(missing_ok=True)  # the real installer consumes install-config.yaml too
        _consume(args.dir, consumed)
    else:
        write_files(files, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
