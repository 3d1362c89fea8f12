"""A stack whose secrets are under Vault's transit engine (issue 44, item 2), with the real Pulumi CLI,
language host and file backend, the real Vault (harness/vault.py: dev mode on loopback, set up as
docs/teams.md has a team's), and the real install driver: `pulumi stack init --secrets-provider
hashivault://KEY` under the team's token, secrets set and read back, the stack file's data key Vault's
ciphertext and no secret in clear in the stack file or the state, `python -m ocp up` as with a
passphrase, Vault's audit log naming the key's encrypt and decrypt; a wrong, an expired and a missing
token, and an address that does not answer, stop `install`, `up` and `destroy` before anything with
one line naming VAULT_TOKEN or VAULT_ADDR; the team's token can make no other key and read none; the
offline plan reads such a stack file with no Vault at all.

The program is a small stand-in (a project copy whose __main__.py registers `ocp:parts` components and
exports the pull secret as a secret output): the key is the engine's business, whatever the program makes."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from harness import vault
from tests.conftest import ROOT
from tests.e2e.stand_in import copy_project, needs
from tools import toolchain

PROGRAM = '''
import pulumi

class Part(pulumi.ComponentResource):
    def __init__(self, name):
        super().__init__("ocp:test:Part", name, {})
        self.register_outputs({})

config = pulumi.Config("ocp")
for index in range(int(config.get("parts") or 1)):
    Part(f"part-{index}")
pulumi.export("pullSecret", config.require_secret("pullSecret"))
'''
PLAIN = "pull-secret-in-clear-7f3a9c"
KEY = vault.KEY


def _needs() -> str | None:
    return needs("vault")


needs_parts = pytest.mark.skipif(_needs() is not None, reason=str(_needs()))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if _needs():
        pytest.skip(_needs())
    with vault.running(tmp_path_factory.mktemp("vault")) as running:
        yield running


class Project:
    def __init__(self, copy: Path, state: Path, env: dict[str, str]):
        self.copy, self.state, self.env = copy, state, env

    def pulumi(self, *args: str, token: str | None = None, **env: str) -> subprocess.CompletedProcess:
        environment = {**self.env, **({"VAULT_TOKEN": token} if token else {}), **env}
        return subprocess.run(["pulumi", *args, "--non-interactive"], cwd=self.copy, env=environment, capture_output=True, text=True, timeout=300)

    def ocp(self, *args: str, drop: tuple[str, ...] = (), **env: str) -> subprocess.CompletedProcess:
        """`python -m ocp ARGS` in the project copy, as a user runs it there (`drop`: variables unset)."""
        environment = {key: value for key, value in {**self.env, **env}.items() if key not in drop}
        return subprocess.run([str(ROOT / "venv" / "bin" / "python"), "-m", "ocp", *args], cwd=self.copy, env=environment, capture_output=True, text=True, timeout=300)

    def state_file(self, stack: str) -> Path:
        return self.state / ".pulumi" / "stacks" / "ocp" / f"{stack}.json"

    def resources(self, stack: str) -> list[str]:
        deployment = json.loads(self.state_file(stack).read_text())["checkpoint"]["latest"]
        return sorted(resource["urn"].rsplit("::", 1)[1] for resource in deployment["resources"])


@pytest.fixture(scope="module")
def project(server, tmp_path_factory):
    """The project copy with the stand-in program, on a file backend of its own, with a team member's
    environment: VAULT_ADDR and the team's token, and no passphrase."""
    work = tmp_path_factory.mktemp("vault-stacks")
    copy = copy_project(work, PROGRAM)
    (work / "state").mkdir()
    env = {**toolchain.pulumi_env(work / "home", work / "state", ROOT / "venv"), **server.env()}
    for name in ("PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE", "VAULT_SERVER_URL", "VAULT_SERVER_TOKEN"):
        env.pop(name, None)
    return Project(copy, work / "state", env)


def decrypts(server: vault.Vault, token_policy: str = vault.POLICY) -> list[tuple[str, str, str]]:
    """(type, operation, path) of the audit log's entries on the stack's key, under the team's policy."""
    return [
        (entry["type"], entry["request"]["operation"], entry["request"]["path"])
        for entry in server.audit()
        if entry["request"]["path"].startswith("transit/") and (entry.get("auth") or {}).get("token_policies") == [token_policy]
    ]


@needs_parts
def test_a_stack_under_vault_keeps_only_vault_ciphertext_and_runs_the_driver_as_with_a_passphrase(server, project):
    began = time.monotonic()
    made = project.pulumi("stack", "init", "v", "--secrets-provider", server.secrets_provider)
    assert made.returncode == 0, made.stderr
    assert project.pulumi("config", "set", "--secret", "--stack", "v", "ocp:pullSecret", PLAIN).returncode == 0
    got = project.pulumi("config", "get", "--stack", "v", "ocp:pullSecret")
    assert (got.returncode, got.stdout.strip()) == (0, PLAIN), got.stderr

    stack_file = (project.copy / "Pulumi.v.yaml").read_text()
    fields = yaml.safe_load(stack_file)
    assert fields["secretsprovider"] == f"hashivault://{KEY}"
    # The stack's data key, wrapped by Vault: only transit/decrypt/KEY unwraps it.
    assert base64.b64decode(fields["encryptedkey"]).startswith(b"vault:v1:")
    assert "encryptionsalt" not in fields and PLAIN not in stack_file
    assert list(fields["config"]["ocp:pullSecret"]) == ["secure"]

    done = project.ocp("up", "--stack", "v")
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert done.stdout.splitlines()[-1].startswith("up: 2 changed in "), done.stdout
    state = project.state_file("v").read_text()
    assert PLAIN not in state
    providers = json.loads(state)["checkpoint"]["latest"]["secrets_providers"]
    assert providers["type"] == "cloud" and providers["state"]["url"] == f"hashivault://{KEY}"
    shown = project.pulumi("stack", "output", "--show-secrets", "--json", "--stack", "v")
    assert json.loads(shown.stdout) == {"pullSecret": PLAIN}, shown.stderr

    # The audit log: the key wrapped once (stack init), then unwrapped by each command that decrypted.
    used = decrypts(server)
    assert used[:2] == [("request", "update", f"transit/encrypt/{KEY}"), ("response", "update", f"transit/encrypt/{KEY}")]
    assert ("request", "update", f"transit/decrypt/{KEY}") in used
    assert {path for _, _, path in used} == {f"transit/encrypt/{KEY}", f"transit/decrypt/{KEY}"}
    assert all(not entry.get("error") for entry in server.audit() if entry["request"]["path"].startswith("transit/"))
    print(f"stack init, config, up and output under Vault: {time.monotonic() - began:.1f} s")


def refused(addr: str) -> str:
    return (
        f"stopped: Vault at {addr} refused the token in VAULT_TOKEN (403 permission denied on transit/decrypt/{KEY}: a wrong, "
        f"expired or revoked token, or one whose policy does not allow update on transit/encrypt/{KEY} and transit/decrypt/{KEY}): "
        "set VAULT_TOKEN to a valid token for that key (docs/teams.md, Secrets under Vault), then run again; nothing was changed"
    )


@needs_parts
def test_a_wrong_or_expired_token_stops_install_up_and_destroy_before_anything_naming_vault_token(server, project):
    if not project.state_file("v").exists():
        pytest.skip("needs the stack the first test makes")
    # An up would now make a part more: the refused runs must not.
    assert project.pulumi("config", "set", "--stack", "v", "ocp:parts", "2").returncode == 0
    expiring = server.token(ttl="8s")
    issued = time.monotonic()
    assert project.pulumi("config", "get", "--stack", "v", "ocp:pullSecret", token=expiring).stdout.strip() == PLAIN  # valid, at first
    state = project.state_file("v").read_bytes()
    time.sleep(max(0.0, 9 - (time.monotonic() - issued)))
    for token in ("hvs.not-a-token-of-this-vault", expiring, server.token(policies=("default",))):
        for command in ("install", "up", "destroy"):
            done = project.ocp(command, "--stack", "v", *(["--yes"] if command == "destroy" else []), VAULT_TOKEN=token)
            assert (done.returncode, done.stderr.splitlines()) == (1, [refused(server.addr)]), (command, done.stdout, done.stderr)
            assert "preview:" not in done.stdout and "[0/" not in done.stdout
    # What a user runs after an interrupted up reads the state as exported, ciphertext and all: no key needed.
    done = subprocess.run(
        [str(ROOT / "venv" / "bin" / "python"), "-m", "tools.recover", "--stack", "v", "--cwd", str(project.copy)],
        cwd=ROOT, env={**project.env, "VAULT_TOKEN": expiring}, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0 and "has no interrupted create" in done.stdout, (done.stdout, done.stderr)
    assert project.state_file("v").read_bytes() == state
    assert not list((project.state / ".pulumi" / "locks").rglob("*.json"))
    # The refused attempts are in the audit log too, each a denied decrypt of the stack's key.
    denied = [entry for entry in server.audit() if entry["request"]["path"] == f"transit/decrypt/{KEY}" and "permission denied" in (entry.get("error") or "")]
    assert len(denied) >= 9
    # The team's token still runs it: the part the refused runs did not make.
    done = project.ocp("up", "--stack", "v")
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert project.resources("v") == ["ocp-v", "part-0", "part-1"]


@needs_parts
def test_an_address_that_does_not_answer_or_none_names_vault_addr_and_no_token_names_vault_token(server, project):
    if not project.state_file("v").exists():
        pytest.skip("needs the stack the first test makes")
    state = project.state_file("v").read_bytes()
    closed = vault._free_port()
    done = project.ocp("up", "--stack", "v", VAULT_ADDR=f"http://127.0.0.1:{closed}")
    assert (done.returncode, done.stderr.splitlines()) == (1, [
        f"stopped: Vault at VAULT_ADDR (http://127.0.0.1:{closed}) does not answer (connection refused), and the stack's secrets are "
        f"under its key {KEY}: set VAULT_ADDR to your Vault's address, then run again; nothing was changed"
    ]), done.stderr
    done = project.ocp("install", "--stack", "v", drop=("VAULT_ADDR",))
    assert (done.returncode, done.stderr.splitlines()) == (1, [
        "stopped: VAULT_ADDR is not set, and the stack's secrets are under Vault (its stack file's secretsprovider: hashivault://...): "
        "set VAULT_ADDR to your Vault's address and VAULT_TOKEN to your token (docs/teams.md, Secrets under Vault), then run again; "
        "nothing was changed"
    ]), done.stderr
    done = project.ocp("destroy", "--stack", "v", "--yes", drop=("VAULT_TOKEN",), HOME=str(project.state))
    assert (done.returncode, done.stderr.splitlines()) == (1, [
        f"stopped: VAULT_TOKEN is not set, and Vault at {server.addr} refuses transit/decrypt/{KEY} without a token (403): "
        "set VAULT_TOKEN to your token for the stack's key (docs/teams.md, Secrets under Vault), then run again; nothing was changed"
    ]), done.stderr
    assert project.state_file("v").read_bytes() == state


@needs_parts
def test_the_teams_token_can_make_no_other_key_and_read_none(server, project):
    other = "another-key"
    status, answer = server.call("POST", f"transit/encrypt/{other}", {"plaintext": base64.b64encode(b"x").decode()}, token=server.team_token)
    assert status == 403 and answer["errors"] == ["1 error occurred:\n\t* permission denied\n\n"]
    assert server.call("GET", f"transit/keys/{KEY}", token=server.team_token)[0] == 403
    assert server.call("LIST", "transit/keys", token=server.team_token)[0] == 403
    # As a user meets it: a stack on another key is refused, and Vault made no key for it.
    made = project.pulumi("stack", "init", "w", "--secrets-provider", f"hashivault://{other}")
    assert made.returncode != 0 and f"transit/encrypt/{other}" in made.stderr and "Code: 403" in made.stderr, made.stderr
    assert server.call("LIST", "transit/keys")[1]["data"]["keys"] == [KEY]


@needs_parts
def test_the_offline_plan_reads_a_stack_file_under_vault_with_no_vault_at_all(server, project, tmp_path):
    """The plan never decrypts (a sample pull secret stands in), so the key service is not asked."""
    made = project.pulumi("stack", "init", "p", "--secrets-provider", server.secrets_provider)
    assert made.returncode == 0, made.stderr
    header = (project.copy / "Pulumi.p.yaml").read_text()
    dev = (ROOT / "Pulumi.dev.yaml").read_text()
    (project.copy / "Pulumi.p.yaml").write_text(header + dev[dev.index("config:") :])
    assert project.pulumi("config", "set", "--secret", "--stack", "p", "ocp:pullSecret", PLAIN).returncode == 0
    stack_file = project.copy / "Pulumi.p.yaml"
    assert "secure: v1:" in stack_file.read_text() and PLAIN not in stack_file.read_text()
    environment = {key: value for key, value in project.env.items() if not key.startswith("VAULT_")}
    done = subprocess.run(
        [str(ROOT / "venv" / "bin" / "python"), "-m", "tools.plan", "--config-file", str(stack_file), "--out", str(tmp_path / "plan")],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "pull secret: a fake sample (the stack's own is encrypted or unset)" in done.stdout
    assert PLAIN not in "".join(path.read_text(errors="replace") for path in (tmp_path / "plan").rglob("*") if path.is_file())


def test_the_policy_docs_teams_gives_is_the_one_the_tests_run():
    """docs/teams.md's policy for a team's token, word for word the one harness/vault.py gives the tests' token."""
    text = (ROOT / "docs" / "teams.md").read_text()
    blocks = re.findall(r"```hcl\n(.*?)```", text, re.S)
    assert blocks == [vault.policy_hcl("ocp-stacks")], blocks
