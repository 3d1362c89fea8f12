"""The shapes the state's check takes as data (cluster/state_values.py): a kubeconfig as the installer writes it
passes, one that runs a program (`exec`, `auth-provider`) or reads this machine's files does not; a pull secret of
`auths` alone passes, one with a credential helper (a program) does not; a secret of an export is read, an encrypted
one is said to be."""

from __future__ import annotations

import json

import pytest
import yaml

from cluster.installer import unbundle
from cluster.state_values import SECRET_SIG, kubeconfig_problem, plain, pull_secret_problem
from tests.cluster.test_state_scripts import EXEC_KUBECONFIG
from tests.conftest import PULL_SECRET


def test_the_installers_kubeconfig_passes(dev_run):
    stdout = next(r for r in dev_run.state() if r["urn"].endswith("::installer-run"))["outputs"]["stdout"]
    assert kubeconfig_problem(unbundle(stdout)["auth/kubeconfig"].decode()) is None


@pytest.mark.parametrize(
    "user",
    [
        {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/sh"}},
        {"auth-provider": {"name": "oidc"}},
        {"client-key": "/home/me/.ssh/id_ed25519"},
        {"tokenFile": "/etc/shadow"},
    ],
)
def test_a_kubeconfig_that_runs_a_program_or_reads_a_file_is_refused(user):
    document = yaml.safe_load(EXEC_KUBECONFIG)
    document["users"][0]["user"] = user
    assert kubeconfig_problem(yaml.safe_dump(document)) == (
        f"is a kubeconfig whose users have {next(iter(user))}: the installer's never does (exec and auth-provider run programs)"
    )
    assert kubeconfig_problem("- a list") == "is no kubeconfig" and kubeconfig_problem(": :") == "is no kubeconfig (not YAML)"


def test_a_pull_secret_of_auths_alone_passes_a_credential_helper_does_not():
    assert pull_secret_problem(PULL_SECRET) is None
    helper = json.dumps({"auths": {}, "credHelpers": {"quay.io": "owned"}})
    assert pull_secret_problem(helper) == "is a pull secret with credHelpers (credential helpers are programs): only auths"
    assert pull_secret_problem("not json") == "is no pull secret (JSON with auths)"


def test_a_secret_of_an_export_is_read_and_an_encrypted_one_is_marked():
    assert plain({"a": {SECRET_SIG: "1b47061264138c4ac30d75fd1eb44270", "plaintext": json.dumps({"B": "c"})}}) == {"a": {"B": "c"}}
    assert plain({SECRET_SIG: "1b47061264138c4ac30d75fd1eb44270", "ciphertext": "v1:x"}) is ...
