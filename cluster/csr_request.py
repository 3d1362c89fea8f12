"""One certificate signing request as the approver reads it: its PEM, its name, its key. Pure Python.

What a requester wrote is data: whatever fails to parse is a reason to leave the request pending
(`read_request` turns every parser failure into ValueError), text is shown with its control characters
escaped and names shell-quoted (`shown`, `quoted`), and only a name a kubelet gives its request may be
approved (`name_problem`). Each request shows its key's fingerprint (`fingerprint`), which the node's
files give too (ocp/approver.py says how).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from cluster.printable import shown

# The one request Kubernetes' ParseCSR and this approver both read. Go's pem.Decode takes a block
# whose `-----BEGIN ` starts the data or a line, ending in `-----` (spaces, tabs, a CR may follow
# on the line), then `Key: value` header lines, base64 (spaces, tabs, CR and LF ignored) and an
# END line of the same type after a newline; what follows it is ignored, and so is what precedes a
# BEGIN not at a line start. Asking for whitespace only around one such block, with no headers,
# leaves Go nothing else to find, whether it scans from the first BEGIN (older Go) or back from
# the first END (newer Go, 1.26 here): the block read here is the one Kubernetes signs.
_PEM = re.compile(
    rb"(?:[ \t\r\n]*\n)?-----BEGIN CERTIFICATE REQUEST-----[ \t]*\r?\n"
    rb"(?P<body>[A-Za-z0-9+/= \t\r\n]*)\n-----END CERTIFICATE REQUEST-----[ \t]*(?:\r?\n[ \t\r\n]*)?"
)
_BLOCK = re.compile(rb"-----BEGIN ([^\r\n]*?)-----")

# The names a kubelet's requests get. Its certificate manager (OpenShift's kubelets run with
# rotateCertificates: true, so their first client request too) asks with no name and generateName
# `csr-` (k8s.io/client-go util/certificate/csr/csr.go, RequestCertificateWithContext), to which the
# API server adds 5 characters of `bcdfghjklmnpqrstvwxz2456789` (k8s.io/apiserver
# pkg/storage/names/generate.go, SimpleNameGenerator; k8s.io/apimachinery pkg/util/rand/rand.go). A
# kubelet without rotation names its client request `node-csr-` and the digest of its key, subject and
# usages (kubernetes pkg/kubelet/certificate/bootstrap/bootstrap.go, digestedName). Anyone may name a
# request anything else a path segment holds (`csr-8b2br;curl ...|sh`, `--server=...`): not a kubelet.
GENERATED_NAME = re.compile(r"csr-[bcdfghjklmnpqrstvwxz2456789]{5}")
DIGESTED_NAME = re.compile(r"node-csr-[A-Za-z0-9_-]{43}")


def read_request(data: bytes) -> x509.CertificateSigningRequest:
    """The CSR in `data`, read as Kubernetes reads it, or ValueError saying why not: whatever the
    parser raises (a SAN holding an x400Address passes Go's parsing, not cryptography's)."""
    count = data.count(b"-----BEGIN ")
    if count != 1:
        raise ValueError(f"the request holds {count} PEM blocks, not one" if count else "the request holds no PEM block")
    kind = _BLOCK.search(data)
    if kind and kind[1] != b"CERTIFICATE REQUEST":
        raise ValueError(f"the request's PEM block is {shown(kind[1].decode(errors='replace'))!r}, not 'CERTIFICATE REQUEST'")
    found = _PEM.fullmatch(data)
    if not found:
        raise ValueError("the request is not one CERTIFICATE REQUEST PEM block, starting a line, with only whitespace around it and no headers")
    text = re.sub(rb"[ \t\r\n]", b"", found["body"])
    try:
        der = binascii.a2b_base64(text, strict_mode=True)
    except binascii.Error as error:
        raise ValueError(f"the request's PEM block is no base64 ({error})") from error
    if base64.b64encode(der) != text:  # Python takes padding Go refuses (`AAAA=`): only the one spelling
        raise ValueError("the request's PEM block is no base64 (not as an encoder writes it)")
    try:
        parsed = x509.load_der_x509_csr(der)
    except Exception as error:  # noqa: BLE001 - any parser failure is a verdict, never a traceback
        raise ValueError("the request's PEM block is no DER certificate signing request") from error
    # Go parses these up front (a bad key or extension fails ParseCertificateRequest); cryptography when asked.
    for part, read in (("key", lambda: parsed.public_key()), ("extensions", lambda: parsed.extensions), ("subject", lambda: parsed.subject.rfc4514_string())):
        try:
            read()
        except Exception as error:  # noqa: BLE001
            raise ValueError(f"the request's {part} cannot be read here ({type(error).__name__}: {shown(str(error))})") from error
    return parsed


def quoted(name: str) -> str:
    """A name as one shell word (pasted, it is that name and nothing more), fit for one line."""
    return shlex.quote(shown(name))


def fingerprint(parsed: x509.CertificateSigningRequest) -> str:
    """SHA-256 of the request's public key (its SubjectPublicKeyInfo, DER), in hex: what `openssl pkey
    -pubin -outform DER | openssl sha256` prints of the same key, from the request or the node's files."""
    key = parsed.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(key).hexdigest()


def digested_name(parsed: x509.CertificateSigningRequest, usages: tuple[str, ...]) -> str:
    """The name a kubelet without rotation gives this request: each part base64url (unpadded) and
    `|`, SHA-512/256 over them, `node-csr-` and the digest base64url (bootstrap.go, digestedName)."""
    key = parsed.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    common = parsed.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
    parts = [key, str(common[0].value).encode() if common else b""]
    parts += [str(o.value).encode() for o in parsed.subject.get_attributes_for_oid(x509.NameOID.ORGANIZATION_NAME)]
    parts += [usage.encode() for usage in usages]
    digest = hashlib.new("sha512_256", b"".join(base64.urlsafe_b64encode(part).rstrip(b"=") + b"|" for part in parts)).digest()
    return "node-csr-" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


@dataclass(frozen=True)
class Request:
    """One CertificateSigningRequest as the API returns it."""

    name: str
    signer: str
    username: str
    usages: tuple[str, ...]
    request: bytes  # the PEM CSR (spec.request, base64-decoded)
    decided: bool = False  # approved or denied already
    approved: bool = False
    created: datetime | None = None  # metadata.creationTimestamp, the API server's clock

    @classmethod
    def from_object(cls, item: Mapping) -> Request:
        spec, status, metadata = item.get("spec") or {}, item.get("status") or {}, item["metadata"]
        conditions = {c.get("type") for c in status.get("conditions") or ()}
        stamp = metadata.get("creationTimestamp")
        return cls(
            name=metadata["name"],
            signer=spec.get("signerName", ""),
            username=spec.get("username", ""),
            usages=tuple(spec.get("usages") or ()),
            request=base64.b64decode(spec.get("request", "")),
            decided=bool(conditions & {"Approved", "Denied"}),
            approved="Approved" in conditions and "Denied" not in conditions,
            created=parse_time(stamp) if stamp else None,
        )

    def name_problem(self) -> str:
        """Why this request's name is not one its kubelet gives it ('' if it is)."""
        if GENERATED_NAME.fullmatch(self.name):
            return ""
        if DIGESTED_NAME.fullmatch(self.name):
            try:
                if self.name == digested_name(read_request(self.request), self.usages):
                    return ""
            except Exception:  # noqa: BLE001 - unread, it is no kubelet's digest
                pass
            return f"its name {quoted(self.name)} is not the digest of its key, subject and usages, as a kubelet names its request"
        return f"its name {quoted(self.name)} is not one a kubelet gives its request (csr- and 5 random letters and digits, or node-csr- and a digest)"


def parse_time(text: str) -> datetime:
    """RFC 3339 (Kubernetes), or Go's time.String() (`2026-11-26 14:03:12.5 +0000 UTC`, the
    OpenStack provider's `created`)."""
    go = re.fullmatch(r"(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d+))? ([+-]\d\d)(\d\d)(?: \S+)?", text.strip())
    if go:
        day, clock, fraction, hours, minutes = go.groups()
        text = f"{day}T{clock}{'.' + (fraction + '000000')[:6] if fraction else ''}{hours}:{minutes}"
    moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} names no time zone")
    return moment
