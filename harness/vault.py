"""A real Vault in dev mode on loopback, for tests of stacks whose secrets are under its transit engine
(`pulumi stack init --secrets-provider hashivault://KEY`): `vault server -dev` from the real toolchain
(`bash .ci/toolchain`, the `vault` component of toolchain/pins.toml). Test harness, not product.

    with vault.running(tmp_path) as server:
        env = {**os.environ, **server.env()}          # VAULT_ADDR and the team's VAULT_TOKEN
        server.secrets_provider                       # "hashivault://<key>"
        server.token(ttl="2s")                        # another team token, one that soon expires
        server.audit()                                # the audit log's entries, parsed

As a team's Vault is set up (docs/teams.md, "Secrets under Vault"): the transit engine at `transit/`,
one key, a policy allowing only `update` on `transit/encrypt/<key>` and `transit/decrypt/<key>` (no
key made on first use, no read of the key), a team token with that policy alone, and a file audit
device. Listens on 127.0.0.1 only, on a free port, with a root token of its own; everything lives in
the directory given (vault.log, audit.log). Leaving the block stops exactly the process it started,
by its PID, and waits for it. A session-scoped pytest fixture:

    @pytest.fixture(scope="session")
    def vault_server(tmp_path_factory):
        if vault.missing():
            pytest.skip(vault.missing())
        with vault.running(tmp_path_factory.mktemp("vault")) as server:
            yield server
"""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import child
from tools import toolchain

LOOPBACK = "127.0.0.1"
KEY = "ocp-stacks"
POLICY = "ocp-team"


class VaultError(Exception):
    pass


def missing() -> str | None:
    """Why the harness cannot run here (for pytest.skip), or None."""
    return None if toolchain.binary("vault") else toolchain.missing("vault")


def policy_hcl(key: str, mount: str = "transit") -> str:
    """The team's policy: encrypt and decrypt with one key, nothing else. `update` only: transit makes a
    missing key on an encrypt that may `create`, and a `read` of the key would show its metadata."""
    return (
        f'path "{mount}/encrypt/{key}" {{\n  capabilities = ["update"]\n}}\n\n'
        f'path "{mount}/decrypt/{key}" {{\n  capabilities = ["update"]\n}}\n'
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def _free_pair() -> int:
    """A free port whose next one is free too: the dev server's cluster listener takes port + 1."""
    while True:
        port = _free_port()
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind((LOOPBACK, port + 1))
            except OSError:
                continue
        return port


@dataclass
class Vault:
    directory: Path
    key: str = KEY
    addr: str = ""
    root_token: str = field(default_factory=lambda: f"root-{secrets.token_hex(12)}")
    team_token: str = ""
    process: subprocess.Popen | None = None

    @property
    def audit_log(self) -> Path:
        return self.directory / "audit.log"

    @property
    def secrets_provider(self) -> str:
        return f"hashivault://{self.key}"

    def env(self, token: str | None = None) -> dict[str, str]:
        """What a team member's shell holds: the address and a token (the team's unless given)."""
        return {"VAULT_ADDR": self.addr, "VAULT_TOKEN": token or self.team_token}

    def call(self, method: str, path: str, body: dict[str, Any] | None = None, token: str | None = None) -> tuple[int, dict[str, Any]]:
        """One request to Vault's HTTP API (`path` after /v1/) with a token (root's unless given):
        the status and the decoded answer ({} when empty)."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.addr}/v1/{path}", data=data, method=method, headers={"X-Vault-Token": token or self.root_token})
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                status, text = answer.status, answer.read()
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read()
        return status, json.loads(text) if text.strip() else {}

    def _must(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        status, answer = self.call(method, path, body)
        if status >= 300:
            raise VaultError(f"{method} /v1/{path}: {status} {answer}")
        return answer

    def token(self, ttl: str = "1h", policies: tuple[str, ...] = (POLICY,)) -> str:
        """A new token with only these policies (not Vault's `default`), living `ttl`."""
        answer = self._must("POST", "auth/token/create", {"policies": list(policies), "no_default_policy": True, "ttl": ttl, "renewable": False})
        return answer["auth"]["client_token"]

    def audit(self) -> list[dict[str, Any]]:
        """The audit device's entries, one per request and one per response (values hashed, paths in clear)."""
        if not self.audit_log.is_file():
            return []
        return [json.loads(line) for line in self.audit_log.read_text().splitlines() if line.strip()]

    def log(self, lines: int = 30) -> str:
        path = self.directory / "vault.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.is_file() else ""

    # ---- the process

    def start(self, timeout: float = 60, tries: int = 3) -> None:
        """`tries`: ports to try, when another process took the one chosen (or the next) meanwhile."""
        for attempt in range(tries):
            try:
                return self._start(timeout)
            except VaultError as error:
                if "address already in use" not in str(error) or attempt == tries - 1:
                    raise

    def _start(self, timeout: float) -> None:
        binary = toolchain.binary("vault")
        if binary is None:
            raise VaultError(toolchain.missing("vault"))
        port = _free_pair()
        self.addr = f"http://{LOOPBACK}:{port}"
        args = [
            str(binary), "server", "-dev", f"-dev-listen-address={LOOPBACK}:{port}", f"-dev-root-token-id={self.root_token}",
            "-dev-no-store-token", "-log-level=warn",
        ]
        # HOME: the directory, so that nothing of it lands in the user's (~/.vault-token and the like).
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.directory), "VAULT_DISABLE_MLOCK": "true"}
        with open(self.directory / "vault.log", "ab") as log:
            self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=self.directory, env=env)
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise VaultError(f"vault exited ({self.process.returncode}) before it answered:\n{self.log()}")
            with contextlib.suppress(OSError, ValueError):
                if self.call("GET", "sys/health")[0] == 200:  # initialized, unsealed, active
                    return
            if time.monotonic() > deadline:
                raise VaultError(f"vault: no answer on {self.addr} within {timeout:.0f} s:\n{self.log()}")
            time.sleep(0.2)

    def prepare(self) -> None:
        """Transit, its one key, the team's policy and token, and the file audit device."""
        self._must("POST", "sys/mounts/transit", {"type": "transit"})
        self._must("POST", f"transit/keys/{self.key}", {"type": "aes256-gcm96"})
        self._must("PUT", f"sys/policies/acl/{POLICY}", {"policy": policy_hcl(self.key)})
        self.team_token = self.token(ttl="24h")
        self._must("PUT", "sys/audit/file", {"type": "file", "options": {"file_path": str(self.audit_log)}})

    def stop(self, grace: float = 15) -> None:
        """SIGTERM to exactly the process started here, SIGKILL after `grace` seconds; waited for."""
        process, self.process = self.process, None
        if process is not None:
            child.stop(process, grace)


@contextlib.contextmanager
def running(directory: Path, key: str = KEY) -> Iterator[Vault]:
    """A dev-mode Vault in `directory`, prepared as a team's (above); stopped on leaving, whatever happens."""
    directory.mkdir(parents=True, exist_ok=True)
    server = Vault(directory, key=key)
    try:
        server.start()
        server.prepare()
        yield server
    finally:
        server.stop()
