"""TLS for the bootstrap helper: a CA of its own, pinned in the bootstrap's shim, and the server
certificate for the helper's address that it signs. Pure Python.

Derived, not drawn, as the helper's SSH host key (cluster.helper_ssh): the same stack gives
byte-identical inputs on every run. Both keys are ECDSA P-256 (FIPS-approved, and Go's and
OpenSSL's verifiers take them) whose scalars come from `ClusterIdentity.derive` under labels of
their own; the certificates' dates come from when the installer made the configs, and their
signatures are RFC 6979's deterministic ECDSA (`ecdsa_deterministic`: cryptography's are
random otherwise). The CA's key signs inside this function and is
never returned: only its certificate (public) and the server's key and certificate leave it,
the key inside secret Outputs.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from cluster.identity import ClusterIdentity

CA_LABEL = "bootstrap-helper-tls-ca-p256"
SERVER_LABEL = "bootstrap-helper-tls-server-p256"
# The order of P-256's group (FIPS 186-5, D.1.2.3).
P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
# A bootstrap is refused 20 h after the configs were made (MAX_BOOTSTRAP_AGE_HOURS), and the
# installer's own bootstrap certificates end at 24 h: a week covers any fetch, and a day before
# covers a node's clock behind the deployer's.
VALID_BEFORE = datetime.timedelta(days=1)
VALID_AFTER = datetime.timedelta(days=7)
# Configs recorded without their making time: a fixed window (RFC 5280's "no expiry" end).
UNDATED = (datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc), datetime.datetime(9999, 12, 31, 23, 59, 59, tzinfo=datetime.timezone.utc))


@dataclass(frozen=True)
class HelperTls:
    ca: str  # PEM of the CA's certificate: the shim's only certificate authority
    certificate: str  # PEM of the helper's certificate (IP SAN: its address), signed by that CA
    key: str  # PEM (PKCS#8) of the helper's private key: a secret


def derived_p256_key(identity: ClusterIdentity, label: str) -> ec.EllipticCurvePrivateKey:
    """A P-256 key from 512 derived bits reduced into [1, n-1] (FIPS 186-5 A.2.1: 64 extra bits,
    no measurable bias)."""
    seed = bytes.fromhex(identity.derive(f"{label}-0", 64) + identity.derive(f"{label}-1", 64))
    return ec.derive_private_key(int.from_bytes(seed, "big") % (P256_ORDER - 1) + 1, ec.SECP256R1())


def _serial(identity: ClusterIdentity, label: str) -> int:
    # 120 bits, positive (RFC 5280 allows 20 octets; Go refuses a negative one).
    return int(identity.derive(f"{label}-serial", 30), 16) | 1


def _usage(**allowed: bool) -> x509.KeyUsage:
    names = ("digital_signature", "content_commitment", "key_encipherment", "data_encipherment", "key_agreement",
             "key_cert_sign", "crl_sign", "encipher_only", "decipher_only")
    return x509.KeyUsage(**{name: allowed.get(name, False) for name in names})


def _window(generated_at: float | None) -> tuple[datetime.datetime, datetime.datetime]:
    if generated_at is None:
        return UNDATED
    made = datetime.datetime.fromtimestamp(int(generated_at), datetime.timezone.utc)
    return made - VALID_BEFORE, made + VALID_AFTER


def helper_tls(identity: ClusterIdentity, address: ipaddress.IPv4Address, generated_at: float | None) -> HelperTls:
    """The helper's CA and server certificate; `generated_at`: when the installer made the configs."""
    ca_key, key = derived_p256_key(identity, CA_LABEL), derived_p256_key(identity, SERVER_LABEL)
    not_before, not_after = _window(generated_at)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{identity.infra_id}-bootstrap-helper-ca")])
    ca_identifier = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(_serial(identity, CA_LABEL))
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(key_cert_sign=True, crl_sign=True), critical=True)
        .add_extension(ca_identifier, critical=False)
        .sign(ca_key, hashes.SHA256(), ecdsa_deterministic=True)
    )
    server = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{identity.infra_id}-bootstrap-helper")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(_serial(identity, SERVER_LABEL))
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(digital_signature=True), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(address)]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_identifier), critical=False)
        .sign(ca_key, hashes.SHA256(), ecdsa_deterministic=True)
    )
    return HelperTls(
        ca=ca.public_bytes(Encoding.PEM).decode(),
        certificate=server.public_bytes(Encoding.PEM).decode(),
        key=key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode(),
    )
