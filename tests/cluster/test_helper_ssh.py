"""The bootstrap helper's host key and the upload's ssh script, checked with OpenSSH's own tools."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_ssh_private_key

from cluster.helper_ssh import UPLOAD_SCRIPT, helper_host_key, upload_script
from cluster.identity import ClusterIdentity

IDENTITY = ClusterIdentity("ocp4-x7k2p", b"cluster secret one")


def test_the_key_is_a_valid_openssh_ed25519_key_whose_public_half_is_the_pin(tmp_path):
    key = helper_host_key(IDENTITY)
    parsed = load_ssh_private_key(key.private.encode(), None)
    assert parsed.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode() == key.public.rsplit(" ", 1)[0]
    assert key.public.startswith("ssh-ed25519 ") and key.public.endswith(" ocp4-x7k2p-bootstrap-helper")
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen is not installed (Debian package openssh-client)")
    path = tmp_path / "ssh_host_ed25519_key"
    path.write_text(key.private)
    path.chmod(0o600)
    derived = subprocess.run(["ssh-keygen", "-y", "-f", str(path)], capture_output=True, text=True, check=True).stdout
    assert derived.strip() == key.public


def test_the_same_cluster_gets_the_same_bytes_and_another_cluster_another_key():
    assert helper_host_key(IDENTITY) == helper_host_key(ClusterIdentity(IDENTITY.infra_id, IDENTITY.secret))
    other = helper_host_key(ClusterIdentity(IDENTITY.infra_id, b"cluster secret two"))
    assert other.public.split()[1] != helper_host_key(IDENTITY).public.split()[1]
    assert other.private != helper_host_key(IDENTITY).private


def test_the_upload_script_passes_shellcheck_as_sh(tmp_path):
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (Debian package 'shellcheck')")
    script = tmp_path / "upload.sh"
    script.write_text("#!/bin/sh\n" + UPLOAD_SCRIPT + "'true'\n")
    result = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_with_fips_the_key_is_a_valid_openssh_ecdsa_p256_key_whose_public_half_is_the_pin(tmp_path):
    key = helper_host_key(IDENTITY, fips=True)
    assert key.kind == "ecdsa" and key.algorithm == "ecdsa-sha2-nistp256"
    parsed = load_ssh_private_key(key.private.encode(), None)
    assert parsed.curve.name == "secp256r1"
    assert parsed.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH).decode() == key.public.rsplit(" ", 1)[0]
    assert helper_host_key(ClusterIdentity(IDENTITY.infra_id, IDENTITY.secret), fips=True) == key  # the same bytes every run
    assert helper_host_key(ClusterIdentity(IDENTITY.infra_id, b"cluster secret two"), fips=True).public != key.public
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen is not installed (Debian package openssh-client)")
    path = tmp_path / "ssh_host_ecdsa_key"
    path.write_text(key.private)
    path.chmod(0o600)
    derived = subprocess.run(["ssh-keygen", "-y", "-f", str(path)], capture_output=True, text=True, check=True).stdout
    assert derived.strip() == key.public


def test_the_upload_takes_host_keys_of_the_pins_type_alone():
    assert "-o HostKeyAlgorithms=ssh-ed25519 " in upload_script("true")
    fips = upload_script("true", helper_host_key(IDENTITY, fips=True).algorithm)
    assert "-o HostKeyAlgorithms=ecdsa-sha2-nistp256 " in fips and "ssh-ed25519" not in fips
