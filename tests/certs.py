"""Certificates for tests: real X.509 (self-signed EC CAs made once with openssl; the keys were
thrown away), since the program, like the installer, refuses PEM blocks that are not certificates."""

TEST_CA = """\
-----BEGIN CERTIFICATE-----
MIIBjDCCATGgAwIBAgIUP+x98AnkShlq+t82AJz5zjW2BxIwCgYIKoZIzj0EAwIw
GzEZMBcGA1UEAwwQb2NwLXRlc3RzLWNhLW9uZTAeFw0yNjExMjMwMDIzMzZaFw0z
NjExMjAwMDIzMzZaMBsxGTAXBgNVBAMMEG9jcC10ZXN0cy1jYS1vbmUwWTATBgcq
hkjOPQIBBggqhkjOPQMBBwNCAASv5GPuBMZBN7yGbeRxuwWZn9StVjXCNaGjVzCN
/sWby8I9JnTr+kYweCUsMc4DJBbPasqVZvKia3814fLk7rY2o1MwUTAdBgNVHQ4E
FgQU0MJYwjosCQF4XOi1EseS6uDj9M0wHwYDVR0jBBgwFoAU0MJYwjosCQF4XOi1
EseS6uDj9M0wDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNJADBGAiEAuMRg
UQCH9KZIjhdzNScQmVlq89nM38NT2UT64RRSP5wCIQD9TtDspDWy435SXQt6Vew8
M9X5jsJ6LMxayes3cJHVjg==
-----END CERTIFICATE-----
"""

OTHER_CA = """\
-----BEGIN CERTIFICATE-----
MIIBizCCATGgAwIBAgIUbf3UXjxS5Y480hkkgM1G41u0/LswCgYIKoZIzj0EAwIw
GzEZMBcGA1UEAwwQb2NwLXRlc3RzLWNhLXR3bzAeFw0yNjExMjMwMDIzMzZaFw0z
NjExMjAwMDIzMzZaMBsxGTAXBgNVBAMMEG9jcC10ZXN0cy1jYS10d28wWTATBgcq
hkjOPQIBBggqhkjOPQMBBwNCAAQq5JRNtS9Q8d3F7bYuQhMCUeHmjBYyep7O/bAx
hASvnG/Qca8UNtyScESq3flswb0oL+PINzICa9A0TymQ7Veto1MwUTAdBgNVHQ4E
FgQUImrZZw5bJ8GTg/kZM/obhdjXLtYwHwYDVR0jBBgwFoAUImrZZw5bJ8GTg/kZ
M/obhdjXLtYwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiACnlCl
nDpYT/naj2BlRXQqqhmXHuEMkIHvsiFkxXLtXgIhAJM+ifoNWvUqD9YVeR1zLHTp
c2VMwYwxLlXklAPwe1x1
-----END CERTIFICATE-----
"""

THIRD_CA = """\
-----BEGIN CERTIFICATE-----
MIIBkDCCATWgAwIBAgIUZaK8PSbgrLGHN5fIi6uRH/B5isQwCgYIKoZIzj0EAwIw
HTEbMBkGA1UEAwwSb2NwLXRlc3RzLWNhLXRocmVlMB4XDTI2MTEyMzAwMjMzNloX
DTM2MTEyMDAwMjMzNlowHTEbMBkGA1UEAwwSb2NwLXRlc3RzLWNhLXRocmVlMFkw
EwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEZ3FTviqifhJp4UdtdbB6KkqQJI/3H65E
EcIZU977TXMSn/cIHc2ZWKzD4aEk5c2mFWjxnCz+LOVMt7XFLYk2i6NTMFEwHQYD
VR0OBBYEFFfcdsFMT0SINmmEiq8tmiH6GWdLMB8GA1UdIwQYMBaAFFfcdsFMT0SI
NmmEiq8tmiH6GWdLMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSQAwRgIh
AK3pfWmLwa8Ge9SUsgVjJq5SFZPSI6We8308kHF/WNrjAiEAiS5OV6s8ksdSqP6Y
X7KdaRfxos4hDTzXzfq+EIJpLcQ=
-----END CERTIFICATE-----
"""


def der(tag: int, content: bytes) -> bytes:
    """One DER element (definite length), for what no library here writes."""
    if len(content) < 0x80:
        return bytes([tag, len(content)]) + content
    length = len(content).to_bytes((len(content).bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(length)]) + length + content


# GeneralNames entries RFC 5280 allows and Go's crypto/x509 skips (it reads e-mail, DNS, URI and IP
# names only), but cryptography refuses to read (UnsupportedGeneralNameType), built by hand: an
# x400Address ([3] ORAddress, its built-in standard attributes empty) and an ediPartyName ([5], a
# partyName [1] of one UTF8String).
X400_ADDRESS = der(0xA3, der(0x30, b""))
EDI_PARTY_NAME = der(0xA5, der(0xA1, der(0x0C, b"x")))


def request_with_names(common: str, names: bytes, organization: str = "system:nodes") -> bytes:
    """A CSR (PEM) for CN=common, O=organization whose subjectAltName is the GeneralNames DER elements
    `names`, as they are: signed with a new P-256 key, so the API server's signature check passes."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtensionOID, NameOID

    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common), x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization)])
    san = x509.UnrecognizedExtension(ExtensionOID.SUBJECT_ALTERNATIVE_NAME, der(0x30, names))
    builder = x509.CertificateSigningRequestBuilder().subject_name(subject).add_extension(san, critical=False)
    return builder.sign(ec.generate_private_key(ec.SECP256R1()), hashes.SHA256()).public_bytes(serialization.Encoding.PEM)
