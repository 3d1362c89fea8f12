"""The bootstrap helper's CA and server certificate (cluster.helper_tls), checked with OpenSSL's
own verifier; the real TLS serving is in tests/components/test_bootstrap_helper.py."""

from __future__ import annotations

import datetime
import ipaddress
import shutil
import subprocess
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_pem_private_key

from cluster.helper_tls import CA_LABEL, derived_p256_key, helper_tls
from cluster.identity import ClusterIdentity

IDENTITY = ClusterIdentity("ocp4-x7k2p", b"cluster secret one")
HELPER = ipaddress.IPv4Address("10.0.0.11")


def _verify(tmp_path, tls, address: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "ca.pem").write_text(tls.ca)
    (tmp_path / "helper.pem").write_text(tls.certificate)
    argv = ["openssl", "verify", "-x509_strict", "-purpose", "sslserver", "-verify_ip", address, "-CAfile", str(tmp_path / "ca.pem")]
    return subprocess.run([*argv, str(tmp_path / "helper.pem")], capture_output=True, text=True)


def test_the_helpers_certificate_is_the_cas_for_the_helpers_address_alone(tmp_path):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed (Debian package 'openssl')")
    tls = helper_tls(IDENTITY, HELPER, time.time())
    done = _verify(tmp_path, tls, str(HELPER))
    assert done.returncode == 0 and done.stdout.strip().endswith(": OK"), done.stdout + done.stderr
    other = _verify(tmp_path, tls, "10.0.0.12")
    assert other.returncode != 0 and "IP address mismatch" in other.stdout + other.stderr
    # The key it is given is the certificate's, P-256.
    key = load_pem_private_key(tls.key.encode(), None)
    certificate = x509.load_pem_x509_certificate(tls.certificate.encode())
    assert key.public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo) == certificate.public_key().public_bytes(
        Encoding.DER, PublicFormat.SubjectPublicKeyInfo
    )
    assert key.curve.name == "secp256r1"


def test_the_same_cluster_gets_the_same_bytes_and_another_cluster_another_ca():
    made = 1_764_300_000.25
    tls = helper_tls(IDENTITY, HELPER, made)
    # Signatures too: cryptography's ECDSA signatures are random unless deterministic (RFC 6979).
    assert helper_tls(ClusterIdentity(IDENTITY.infra_id, IDENTITY.secret), HELPER, made) == tls
    other = helper_tls(ClusterIdentity(IDENTITY.infra_id, b"cluster secret two"), HELPER, made)
    keys = [x509.load_pem_x509_certificate(item.ca.encode()).public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo) for item in (tls, other)]
    assert keys[0] != keys[1] and other.key != tls.key


def test_the_certificates_are_dated_from_when_the_installer_made_the_configs():
    made = datetime.datetime(2026, 11, 28, 5, 30, 7, tzinfo=datetime.timezone.utc)
    tls = helper_tls(IDENTITY, HELPER, made.timestamp() + 0.6)
    for pem in (tls.ca, tls.certificate):
        certificate = x509.load_pem_x509_certificate(pem.encode())
        assert certificate.not_valid_before_utc == made - datetime.timedelta(days=1)
        assert certificate.not_valid_after_utc == made + datetime.timedelta(days=7)
    undated = x509.load_pem_x509_certificate(helper_tls(IDENTITY, HELPER, None).certificate.encode())
    assert undated.not_valid_after_utc.year == 9999


def test_the_cas_private_key_is_not_handed_out():
    tls = helper_tls(IDENTITY, HELPER, 1_764_300_000)
    ca_key = derived_p256_key(IDENTITY, CA_LABEL)
    scalar = ca_key.private_numbers().private_value
    ca = x509.load_pem_x509_certificate(tls.ca.encode())
    assert ca.public_key().public_numbers() == ca_key.public_key().public_numbers()  # that key signed
    for text in (tls.ca, tls.certificate, tls.key):
        private = load_pem_private_key(text.encode(), None).private_numbers().private_value if "PRIVATE" in text else None
        assert private != scalar and f"{scalar:x}" not in text
