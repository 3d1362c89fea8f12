"""Where the local cloud keeps everything: one home outside the clone.

~/.cache/ocp-localcloud by default (OCP_LOCALCLOUD_HOME moves it): the services' virtualenv,
the databases and images (data/), the rendered configuration (etc/), one log per process
(logs/), PID files (run/) and the clouds.yaml a shell or test uses. Deleting the home resets
the cloud; `down` keeps it, so the next `up` starts in seconds.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

HOST = "127.0.0.1"
REGION = "RegionOne"
# The clouds.yaml entries: the tenant the stacks name (Pulumi.dev.yaml `openstack:cloud`), and the operator.
CLOUD = "openstack"
ADMIN_CLOUD = "localcloud-admin"
TENANT_USER = "lab"
# Project lab is the one the mock cloud describes (samples/cloud/dev.yaml). A second tenant project,
# with a user of its own and lab's quotas but nothing else in it, lets stacks run beside lab's
# without changing what is counted there: the tests' second cloud group runs in it.
SIDE_PROJECT = "lab2"
PROJECTS = (TENANT_USER, SIDE_PROJECT)

PORTS = {
    "mariadb": 13306,
    "epmd": 14369,
    "rabbitmq": 5672,
    "rabbitmq-dist": 25672,
    "keystone": 5000,
    "placement": 8778,
    "glance": 9292,
    "neutron": 9696,
    "nova": 8774,
    "cinder": 8776,
    "octavia": 9876,
    "manila": 8786,
    # Swift: the proxy (Swift's API and S3 through s3api), then its account, container and object servers.
    "swift": 8080,
    "swift-account": 6202,
    "swift-container": 6201,
    "swift-object": 6200,
}
# The bucket (a Swift container) each tenant project keeps its Pulumi state in, and its EC2 credential's file.
STATE_BUCKET = "pulumi-state"


def url(service: str, path: str = "") -> str:
    return f"http://{HOST}:{PORTS[service]}{path}"


@dataclass(frozen=True)
class Layout:
    home: Path

    @classmethod
    def default(cls) -> Layout:
        return cls(Path(os.environ.get("OCP_LOCALCLOUD_HOME") or Path.home() / ".cache" / "ocp-localcloud"))

    @property
    def venv(self) -> Path:
        return self.home / "venv"

    @property
    def data(self) -> Path:
        return self.home / "data"

    @property
    def etc(self) -> Path:
        return self.home / "etc"

    @property
    def logs(self) -> Path:
        return self.home / "logs"

    @property
    def run(self) -> Path:
        return self.home / "run"

    @property
    def clouds_yaml(self) -> Path:
        return self.clouds_yaml_of(TENANT_USER)

    def clouds_yaml_of(self, project: str) -> Path:
        """The clouds.yaml whose entry `openstack` is this project's user (lab's is the main one)."""
        return self.home / ("clouds.yaml" if project == TENANT_USER else f"clouds-{project}.yaml")

    def ec2_credential(self, project: str) -> Path:
        """The project user's EC2 credential for Swift's s3api (JSON: access, secret), written by `up`."""
        return self.home / f"ec2-{project}.json"

    @property
    def mariadb_socket(self) -> Path:
        return self.run / "mariadb.sock"

    def bin(self, name: str) -> Path:
        return self.venv / "bin" / name

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"

    def password(self) -> str:
        """One password for the database, the service users and the tenant, made once (loopback only)."""
        path = self.home / "password"
        if not path.exists():
            self.home.mkdir(parents=True, exist_ok=True)
            path.write_text(secrets.token_hex(16))
            path.chmod(0o600)
        return path.read_text().strip()

    def done(self, step: str) -> Path:
        """The marker of a one-time set-up step that completed (an `up` after a crash redoes the rest)."""
        return self.data / "done" / step
