"""SSH to the bootstrap helper: the host key it is given at boot, and the upload that talks to
that key and no other. Pure Python.

The key is derived, not drawn: the same stack gives byte-identical inputs on every run (the
helper's user_data, which a running helper never re-reads, and the pin). Its ed25519 seed is
HMAC-SHA256 keyed with the cluster's secret, under a label of its own
(`ClusterIdentity.derive`), so it is as secret as that root and is known only inside secret
Outputs. Another cluster, or the same one installed again, has another key. With `ocp:fips` it
is ECDSA P-256 instead (`ecdsa-sha2-nistp256`): OpenSSH in FIPS mode, where `pulumi up` must run
for a FIPS cluster, refuses ed25519.

The upload is a local `ssh` (OpenSSH), so the user's own key stays where it is: the SSH agent,
or a key file that ssh reads at run time (`-i`); the state holds its path only.
"""

from __future__ import annotations

import base64
import shlex
import struct
from dataclasses import dataclass
from urllib.parse import urlsplit

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from cluster.helper_tls import derived_p256_key
from cluster.identity import ClusterIdentity

KEY_LABEL = "bootstrap-helper-ssh-host-key-ed25519"
KEY_TYPE = b"ssh-ed25519"
ECDSA_KEY_LABEL = "bootstrap-helper-ssh-host-key-ecdsa-p256"
ECDSA_KEY_TYPE = b"ecdsa-sha2-nistp256"
# The name the pin is filed under in the upload's known_hosts: the address may change (a new
# floating IP), the key may not.
HOST_KEY_ALIAS = "bootstrap-helper"
# The helper boots and runs cloud-init before sshd answers.
CONNECT_FOR_SECONDS = 600
HOST_KEY_REFUSED = "bootstrap helper upload: refused: {host} did not present the helper's host key (pinned in the upload); nothing was sent"


@dataclass(frozen=True)
class HostKey:
    private: str  # an OpenSSH private key file: cloud-init's ssh_keys.<kind>_private
    public: str  # `<type> <base64> <comment>`: cloud-init's <kind>_public, and the pin
    kind: str = "ed25519"  # cloud-init's name of its type (ssh_keys), ed25519 or ecdsa

    @property
    def algorithm(self) -> str:
        """Its type as OpenSSH names it (HostKeyAlgorithms)."""
        return self.public.split(" ", 1)[0]


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _mpint(value: int) -> bytes:
    return _string(value.to_bytes(value.bit_length() // 8 + 1, "big"))  # a leading 0 when the top bit is set


def helper_host_key(identity: ClusterIdentity, fips: bool = False) -> HostKey:
    if fips:
        return _ecdsa_host_key(identity)
    seed = bytes.fromhex(identity.derive(KEY_LABEL, 64))
    public = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    blob = _string(KEY_TYPE) + _string(public)
    return _host_key(identity, KEY_LABEL, "ed25519", blob, _string(seed + public))


def _ecdsa_host_key(identity: ClusterIdentity) -> HostKey:
    key = derived_p256_key(identity, ECDSA_KEY_LABEL)
    point = key.public_key().public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
    blob = _string(ECDSA_KEY_TYPE) + _string(b"nistp256") + _string(point)
    return _host_key(identity, ECDSA_KEY_LABEL, "ecdsa", blob, _mpint(key.private_numbers().private_value))


def _host_key(identity: ClusterIdentity, label: str, kind: str, blob: bytes, private_part: bytes) -> HostKey:
    """An OpenSSH key file of `blob` (the public key) and its private fields (PROTOCOL.key)."""
    comment = f"{identity.infra_id}-bootstrap-helper".encode()
    # The OpenSSH key format, unencrypted. Its check word is random in ssh-keygen's
    # files; here it comes from the key, so the file is the same on every run.
    check = bytes.fromhex(identity.derive(label + "-check", 8))
    section = check + check + blob + private_part + _string(comment)
    section += bytes(range(1, 1 + (-len(section)) % 8))
    body = b"openssh-key-v1\0" + _string(b"none") + _string(b"none") + _string(b"") + struct.pack(">I", 1)
    body += _string(blob) + _string(section)
    text = base64.b64encode(body).decode()
    lines = [text[i : i + 70] for i in range(0, len(text), 70)]
    private = "\n".join(["-----BEGIN OPENSSH PRIVATE KEY-----", *lines, "-----END OPENSSH PRIVATE KEY-----", ""])
    algorithm = blob[4 : 4 + struct.unpack(">I", blob[:4])[0]].decode()
    return HostKey(private=private, public=f"{algorithm} {base64.b64encode(blob).decode()} {comment.decode()}", kind=kind)


# Where the helper serves the bootstrap's config from.
SERVE_DIRECTORY = "/srv/ignition"
SERVED_FILE = f"{SERVE_DIRECTORY}/bootstrap.ign"
# The one URL path the server answers; written by the upload, so user_data holds no secret.
PATH_FILE = f"{SERVE_DIRECTORY}/url-path"


def upload_command(url: str) -> str:
    """What the upload runs on the helper: copy stdin into place, then name the path it is served
    at. Each file is written under a temporary name and renamed: the bootstrap never fetches half a file."""
    steps = [f"sudo install -d -m 0755 {SERVE_DIRECTORY}"]
    for source, target in (("", SERVED_FILE), (f"printf '%s\\n' {shlex.quote(urlsplit(url).path)} | ", PATH_FILE)):
        part = f"{target}.part"
        steps += [f"{source}sudo tee {part} >/dev/null", f"sudo chmod 0644 {part}", f"sudo mv {part} {target}"]
    return "set -eu; " + " && ".join(steps)


# Run by /bin/sh where `pulumi up` runs, fed the file on stdin, with HELPER_HOST, HELPER_USER,
# HELPER_HOST_KEY (the pin) and, optionally, HELPER_KEY_FILE in its environment. The command
# line's options win over the user's ssh_config, whose other settings (ProxyJump) still apply;
# every source of trusted host keys but the pin is shut (KnownHostsCommand: OpenSSH 8.5+, older
# clients ignore the name). A connection that fails is tried again until the helper is up; a
# host key that is not the pinned one ends it at once, before anything is sent.
UPLOAD_SCRIPT = f"""set -eu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%s %s\\n' {HOST_KEY_ALIAS} "$HELPER_HOST_KEY" > "$work/known_hosts"
set -- -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$work/known_hosts" \\
  -o GlobalKnownHostsFile=/dev/null -o HostKeyAlias={HOST_KEY_ALIAS} -o HostKeyAlgorithms=ssh-ed25519 \\
  -o IgnoreUnknown=KnownHostsCommand -o KnownHostsCommand=none -o VerifyHostKeyDNS=no \\
  -o CheckHostIP=no -o UpdateHostKeys=no -o LogLevel=ERROR -o ConnectTimeout=15 -l "$HELPER_USER"
key=${{HELPER_KEY_FILE:-}}
case $key in \\~/*) key="$HOME/${{key#\\~/}}" ;; esac
if [ -n "$key" ]; then set -- "$@" -i "$key" -o IdentitiesOnly=yes; fi
deadline=$(( $(date +%s) + {CONNECT_FOR_SECONDS} ))
until ssh -n "$@" "$HELPER_HOST" true 2>"$work/error"; do
  if grep -q 'Host key verification failed' "$work/error"; then
    cat "$work/error" >&2
    echo "{HOST_KEY_REFUSED.format(host='$HELPER_HOST')}" >&2
    exit 1
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then cat "$work/error" >&2; exit 1; fi
  sleep 10
done
ssh "$@" "$HELPER_HOST" """


def upload_script(remote_command: str, algorithm: str = KEY_TYPE.decode()) -> str:
    """The local command that runs `remote_command` on the helper, its stdin the file; it takes
    host keys of the pin's `algorithm` only (ed25519's script is the one earlier stacks have)."""
    script = UPLOAD_SCRIPT.replace("HostKeyAlgorithms=ssh-ed25519", f"HostKeyAlgorithms={algorithm}")
    return script + shlex.quote(remote_command) + "\n"


def upload_environment(host: str, user: str, public_host_key: str, key_file: str | None) -> dict[str, str]:
    """What UPLOAD_SCRIPT reads; nothing secret (the key file by its path, as written)."""
    environment = {"HELPER_HOST": host, "HELPER_USER": user, "HELPER_HOST_KEY": public_host_key}
    return environment | ({"HELPER_KEY_FILE": key_file} if key_file else {})
