"""Seeded randomness and just enough DER to issue X.509 certificates with readable SANs."""

from __future__ import annotations

import base64
import hashlib
import ipaddress
from dataclasses import dataclass
from typing import Sequence

from tools.sample_installer.release import FAKE_MARKER


class _Rand:
    """Named, independent byte streams from one seed, so adding a new draw never shifts others."""

    def __init__(self, seed: bytes) -> None:
        self._seed = seed

    def draw(self, label: str, size: int) -> bytes:
        return hashlib.shake_256(self._seed + b"\0" + label.encode()).digest(size)

    def text(self, label: str, alphabet: str, size: int) -> str:
        return "".join(alphabet[b % len(alphabet)] for b in self.draw(label, size))


# Minimal DER, enough for the installer's certificates.


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
# The same window as RFC 3339, for the annotations the installer puts on certificate secrets.
NOT_BEFORE, NOT_AFTER = "2024-01-01T00:00:00Z", "2034-01-01T00:00:00Z"
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
