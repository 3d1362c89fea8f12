"""The cluster's PKI: signers, leaf certificates and CA bundles, as the installer's tls assets."""

from __future__ import annotations

import base64
import ipaddress
from dataclasses import dataclass

from tools.sample_installer.install_config import _Cluster
from tools.sample_installer.x509 import _CLIENT_AUTH, _SERVER_AUTH, _CertKey, _issue, _KeyPair, _key_pair, _Rand


@dataclass(frozen=True)
class _PKI:
    certs: dict[str, _CertKey]  # /opt/openshift/tls/<name>.{crt,key}
    bundles: dict[str, str]  # /opt/openshift/tls/<name>.crt
    service_account: _KeyPair
    bootstrap_ssh_key: str  # authorized_keys line of the key the installer makes to reach the bootstrap


def _ssh_rsa_public_key(rand: _Rand, name: str) -> str:
    """An RSA-2048-shaped OpenSSH public key line (random modulus): SSH wire format, no comment."""

    def string(data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + data

    modulus = bytearray(rand.draw(f"{name}/modulus", 256))
    modulus[0] |= 0x80
    modulus[-1] |= 1
    blob = string(b"ssh-rsa") + string(b"\x01\x00\x01") + string(b"\0" + bytes(modulus))  # mpints, sign byte
    return "ssh-rsa " + base64.b64encode(blob).decode() + "\n"


def _pki(cluster: _Cluster, rand: _Rand) -> _PKI:
    signer_names = (
        "root-ca",
        "admin-kubeconfig-signer",
        "aggregator-signer",
        "kube-apiserver-lb-signer",
        "kube-apiserver-localhost-signer",
        "kube-apiserver-service-network-signer",
        "kube-apiserver-to-kubelet-signer",
        "kube-control-plane-signer",
        "kubelet-bootstrap-kubeconfig-signer",
        "kubelet-signer",
    )
    signers = {name: _issue(rand, name, name, unit="openshift") for name in signer_names}
    # Signs the API server's front-proxy client; the installer names it differently from the rest.
    signers["aggregator-ca"] = _issue(rand, "aggregator-ca", "aggregator", unit="bootkube")
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
        "apiserver-proxy": dict(
            cn="system:kube-apiserver-proxy", org="kube-master", signer="aggregator-ca", usages=client
        ),
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
    return _PKI(certs, bundles, _key_pair(rand, "service-account"), _ssh_rsa_public_key(rand, "bootstrap-ssh"))
