"""The local cloud's processes, in the order they start, and each one's one-time set-up.

MariaDB and RabbitMQ (Debian's binaries, our own data directories, loopback ports), then
Keystone, Placement, Glance, Neutron, Nova, Cinder, Octavia, Manila and Swift from the services' virtualenv: the APIs
under gunicorn (these releases ship them as WSGI applications only), the rest as their own
commands. A set-up step that completed leaves a marker in data/done, so an `up` after a crash
redoes only what did not finish; the schema syncs are idempotent and run on every `up`.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
from pathlib import Path
from collections.abc import Callable

from harness.localcloud import configuration
from harness.localcloud.configuration import COMPUTE_HOSTS, DATABASES, PASSWORD_HASH_ROUNDS, SWIFT_SERVERS, swift_dir
from harness.localcloud.layout import HOST, PORTS, Layout, url
from harness.localcloud.processes import Failed, Process, start, wait_ready

RABBITMQ_SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"  # not /usr/sbin's wrapper, which switches user
DEBIAN_PACKAGES = ("mariadb-server", "rabbitmq-server", "qemu-utils")

Say = Callable[[str], None]


def missing_programs() -> list[str]:
    programs = {"mariadbd": "/usr/sbin/mariadbd", "mariadb-install-db": None, "epmd": None, "rabbitmq-server": RABBITMQ_SERVER, "qemu-img": None}
    return [name for name, path in programs.items() if not (shutil.which(path or name) or shutil.which(name, path="/usr/sbin"))]


def run(layout: Layout, step: str, argv: list[str], env: dict[str, str] | None = None) -> str:
    """Runs a set-up command with its output in logs/setup.log; fails naming the step and the log."""
    layout.logs.mkdir(parents=True, exist_ok=True)
    argv = [str(arg) for arg in argv]
    result = subprocess.run(argv, env={**os.environ, **(env or {})}, capture_output=True, text=True)
    with open(layout.log("setup"), "a") as log:
        log.write(f"==== {step}: {' '.join(argv)}\n{result.stdout}{result.stderr}")
    if result.returncode != 0:
        raise Failed(f"{step} failed ({result.returncode}); see {layout.log('setup')}:\n{result.stderr.strip()[-2000:]}")
    return result.stdout


def once(layout: Layout, step: str, action: Callable[[], object]) -> None:
    marker = layout.done(step)
    if not marker.exists():
        action()
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()


# How long an API keeps an idle client connection open. Gunicorn's default, 2 s, is exactly the
# interval at which openstacksdk's waits poll: the server closed the connection just as the client
# sent its next request on it, and the client got RemoteDisconnected or a reset (13 and 35 of 360
# polls in two runs of a probe at 2 s over all six APIs; none at 1 s; at 3 s every poll found the
# connection closed and made a new one). Clients keep idle connections with no limit of their own
# (requests; the bare http.Transport gophercloud's Terraform auth builds), so the server's must
# exceed any poll interval and idle gap, as behind a load balancer: 900 s, what these services'
# own eventlet servers allowed (oslo.service's client_socket_timeout).
KEEPALIVE = 900
# On TERM a worker waits this long for open connections, idle kept-alive ones included, before
# it exits: short, so that `down` (KILL after 15 s) is not held up by them.
GRACEFUL_TIMEOUT = 5


def _gunicorn(layout: Layout, name: str, env: dict[str, str], path: str = "") -> Process:
    return Process(
        name,
        [
            str(layout.bin("gunicorn")),
            f"--bind={HOST}:{PORTS[name]}",
            "--workers=1",
            "--worker-class=gthread",
            "--threads=8",  # a parallel client (Pulumi's 10 concurrent requests) does not queue behind one
            f"--keep-alive={KEEPALIVE}",
            # The arbiter kills a worker whose main loop is silent this long; gthread's loop beats every
            # second while requests run in its threads, so a long request is not killed by it.
            "--timeout=300",
            f"--graceful-timeout={GRACEFUL_TIMEOUT}",
            "--no-control-socket",  # one per user by default: the services would share it
            f"localcloud_drivers.wsgi:{name}",
        ],
        env,
        http=url(name, path),
    )


def _mysql(layout: Layout, sql: str) -> None:
    run(layout, "mariadb: databases", ["mariadb", "--no-defaults", f"--socket={layout.mariadb_socket}", "-uroot", "-e", sql])


class Cloud:
    def __init__(self, layout: Layout, say: Say):
        self.layout = layout
        self.say = say
        self.etc = layout.etc

    def _start(self, process: Process, timeout: float = 180) -> None:
        start(self.layout, process)
        wait_ready(self.layout, process, timeout)

    def _manage(self, step: str, *argv: str, env: dict[str, str] | None = None) -> str:
        return run(self.layout, step, [str(self.layout.bin(argv[0])), *argv[1:]], env)

    # Each step: set-up, then its processes, then waits until they answer.
    def mariadb(self) -> None:
        data = self.layout.data / "mysql"
        if not (data / "mysql").is_dir():
            shutil.rmtree(data, ignore_errors=True)  # a crash in the middle of install-db
            data.mkdir(parents=True)
            run(self.layout, "mariadb-install-db", ["mariadb-install-db", "--no-defaults", "--user=root", f"--datadir={data}", "--skip-test-db"])
        self._start(
            Process(
                "mariadb",
                [
                    "/usr/sbin/mariadbd",
                    "--no-defaults",  # not the system-wide my.cnf
                    "--user=root",
                    f"--datadir={data}",
                    f"--bind-address={HOST}",
                    f"--port={PORTS['mariadb']}",
                    f"--socket={self.layout.mariadb_socket}",
                    f"--pid-file={self.layout.run / 'mariadbd.pid'}",
                    "--skip-name-resolve",
                    "--max-connections=1000",
                    "--innodb-buffer-pool-size=64M",
                ],
                port=PORTS["mariadb"],
            )
        )
        password = self.layout.password()
        statements = [f"CREATE DATABASE IF NOT EXISTS {name} CHARACTER SET utf8mb4;" for name in DATABASES]
        # A TCP user: root@localhost authenticates by socket only.
        statements += [
            f"CREATE USER IF NOT EXISTS 'openstack'@'{HOST}' IDENTIFIED BY '{password}';",
            f"GRANT ALL PRIVILEGES ON *.* TO 'openstack'@'{HOST}';",
        ]
        _mysql(self.layout, " ".join(statements))

    def rabbitmq(self) -> None:
        etc, data = self.etc / "rabbitmq", self.layout.data / "rabbitmq"
        etc.mkdir(parents=True, exist_ok=True)
        data.mkdir(parents=True, exist_ok=True)
        (etc / "rabbitmq.conf").write_text(f"listeners.tcp.default = {HOST}:{PORTS['rabbitmq']}\nloopback_users.guest = true\n")
        (etc / "enabled_plugins").write_text("[].\n")
        (etc / "rabbitmq-env.conf").write_text("# empty: the environment comes from harness/localcloud\n")
        erlang = {"ERL_EPMD_ADDRESS": HOST, "ERL_EPMD_PORT": str(PORTS["epmd"]), "HOME": str(data)}
        # Our own epmd, started first, so `down` stops it (Erlang would leave a daemon epmd behind).
        self._start(Process("epmd", ["epmd", "-address", HOST, "-port", str(PORTS["epmd"])], erlang, port=PORTS["epmd"]))
        self._start(
            Process(
                "rabbitmq",
                [RABBITMQ_SERVER],
                {
                    **erlang,
                    "RABBITMQ_NODENAME": "rabbit@localhost",
                    "RABBITMQ_CONFIG_FILE": str(etc / "rabbitmq.conf"),
                    "RABBITMQ_ADVANCED_CONFIG_FILE": str(etc / "advanced.config"),
                    "RABBITMQ_CONF_ENV_FILE": str(etc / "rabbitmq-env.conf"),
                    "RABBITMQ_ENABLED_PLUGINS_FILE": str(etc / "enabled_plugins"),
                    "RABBITMQ_MNESIA_BASE": str(data / "mnesia"),
                    "RABBITMQ_LOG_BASE": str(self.layout.logs),
                    "RABBITMQ_LOGS": "-",
                    "RABBITMQ_PID_FILE": str(self.layout.run / "rabbitmq-beam.pid"),
                    "RABBITMQ_DIST_PORT": str(PORTS["rabbitmq-dist"]),
                    "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
                },
                port=PORTS["rabbitmq"],
            ),
            timeout=240,
        )

    def keystone(self) -> None:
        conf = str(self.etc / "keystone" / "keystone.conf")
        self._manage("keystone db_sync", "keystone-manage", "--config-file", conf, "db_sync")
        for what in ("fernet_setup", "credential_setup"):
            (self.layout.data / "keystone").mkdir(parents=True, exist_ok=True)
            once(
                self.layout,
                f"keystone-{what}",
                lambda what=what: self._manage(
                    f"keystone {what}", "keystone-manage", "--config-file", conf, what, "--keystone-user", "root", "--keystone-group", "root"
                ),
            )
        once(
            self.layout,
            "keystone-bootstrap",
            lambda: self._manage(
                "keystone bootstrap",
                "keystone-manage",
                "--config-file",
                conf,
                "bootstrap",
                "--bootstrap-admin-url",
                url("keystone", "/v3"),
                "--bootstrap-internal-url",
                url("keystone", "/v3"),
                "--bootstrap-public-url",
                url("keystone", "/v3"),
                "--bootstrap-region-id",
                "RegionOne",
                env={"OS_BOOTSTRAP_PASSWORD": self.layout.password()},
            ),
        )
        self._start(_gunicorn(self.layout, "keystone", {"OS_KEYSTONE_CONFIG_DIR": str(self.etc / "keystone")}, "/v3"))
        # Again whenever the hash cost changes: the operator sets the users' passwords anew, so a home made
        # before stores them at the new cost.
        once(self.layout, f"identity-bcrypt-{PASSWORD_HASH_ROUNDS}", lambda: self.operator("identity", "--rehash"))

    def placement(self) -> None:
        conf = str(self.etc / "placement" / "placement.conf")
        self._manage("placement db sync", "placement-manage", "--config-file", conf, "db", "sync")
        self._start(_gunicorn(self.layout, "placement", {"OS_PLACEMENT_CONFIG_DIR": str(self.etc / "placement")}))

    def glance(self) -> None:
        conf = str(self.etc / "glance" / "glance-api.conf")
        self._manage("glance db_sync", "glance-manage", "--config-file", conf, "db_sync")
        self._start(_gunicorn(self.layout, "glance", {"OS_GLANCE_CONFIG_DIR": str(self.etc / "glance")}))

    def neutron(self) -> None:
        conf = str(self.etc / "neutron" / "neutron.conf")
        self._manage("neutron-db-manage", "neutron-db-manage", "--config-file", conf, "upgrade", "heads")
        # neutron-db-manage exits 0 having made no tables when a plugin's import fails (pyroute2 missing).
        tables = run(
            self.layout,
            "neutron schema",
            [
                "mariadb",
                "--no-defaults",
                f"--socket={self.layout.mariadb_socket}",
                "-uroot",
                "-N",
                "-e",
                "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='neutron'",
            ],
        )
        if int(tables.strip()) < 100:
            raise Failed(f"neutron-db-manage made only {tables.strip()} tables; see {self.layout.log('setup')}")
        self._start(_gunicorn(self.layout, "neutron", {"OS_NEUTRON_CONFIG_DIR": str(self.etc / "neutron"), "OS_NEUTRON_CONFIG_FILES": "neutron.conf"}))

    def nova(self) -> None:
        conf = str(self.etc / "nova" / "nova.conf")
        manage = ("nova-manage", "--config-file", conf)
        self._manage("nova api_db sync", *manage, "api_db", "sync")
        once(
            self.layout,
            "nova-cell0",
            lambda: self._manage("nova cell0", *manage, "cell_v2", "map_cell0", "--database_connection", configuration.database(self.layout, "nova_cell0")),
        )
        once(self.layout, "nova-cell1", lambda: self._manage("nova cell1", *manage, "cell_v2", "create_cell", "--name", "cell1", "--verbose"))
        self._manage("nova db sync", *manage, "db", "sync")
        self._start(_gunicorn(self.layout, "nova", {"OS_NOVA_CONFIG_DIR": str(self.etc / "nova")}))
        for binary in ("nova-conductor", "nova-scheduler"):
            start(self.layout, Process(binary, [str(self.layout.bin(binary)), "--config-file", conf]))
        for host in COMPUTE_HOSTS.values():
            start(
                self.layout,
                Process(host, [str(self.layout.bin("nova-compute")), "--config-file", conf, "--config-file", str(self.etc / "nova" / f"{host}.conf")]),
            )

    def discover_hosts(self) -> None:
        conf = str(self.etc / "nova" / "nova.conf")
        deadline = time.monotonic() + 180
        while True:
            self._manage("nova discover_hosts", "nova-manage", "--config-file", conf, "cell_v2", "discover_hosts")
            hosts = self._manage("nova list_hosts", "nova-manage", "--config-file", conf, "cell_v2", "list_hosts")
            if all(host in hosts for host in COMPUTE_HOSTS.values()):
                return
            if time.monotonic() > deadline:
                raise Failed(f"compute hosts not mapped after 180 s: {hosts}; see {self.layout.logs}/localcloud-compute*.log")
            time.sleep(3)

    def cinder(self) -> None:
        conf = str(self.etc / "cinder" / "cinder.conf")
        self._manage("cinder db sync", "cinder-manage", "--config-file", conf, "db", "sync")
        self._start(_gunicorn(self.layout, "cinder", {"LOCALCLOUD_ARGS": f"--config-file {conf}"}))
        for binary in ("cinder-scheduler", "cinder-volume"):
            start(self.layout, Process(binary, [str(self.layout.bin(binary)), "--config-file", conf]))

    def octavia(self) -> None:
        # Its own database and identity here, not in the MariaDB and Keystone steps: a home made
        # before Octavia was added (those steps skipped, already running) gets them too.
        _mysql(self.layout, "CREATE DATABASE IF NOT EXISTS octavia CHARACTER SET utf8mb4;")
        self.operator("identity")
        once(self.layout, "octavia-ca", self._octavia_ca)
        etc = self.etc / "octavia"
        conf = str(etc / "octavia.conf")
        self._manage("octavia-db-manage", "octavia-db-manage", "--config-file", conf, "upgrade", "head")
        api = f"--config-file {conf} --config-file {etc / 'octavia-api.conf'}"
        self._start(_gunicorn(self.layout, "octavia", {"LOCALCLOUD_ARGS": api}))
        start(self.layout, Process("octavia-worker", [str(self.layout.bin("octavia-worker")), "--config-file", conf]))

    def manila(self) -> None:
        _mysql(self.layout, "CREATE DATABASE IF NOT EXISTS manila CHARACTER SET utf8mb4;")
        self.operator("identity")
        conf = str(self.etc / "manila" / "manila.conf")
        self._manage("manila db sync", "manila-manage", "--config-file", conf, "db", "sync")
        self._start(_gunicorn(self.layout, "manila", {"LOCALCLOUD_ARGS": f"--config-file {conf}"}))
        for binary in ("manila-scheduler", "manila-share"):
            start(self.layout, Process(binary, [str(self.layout.bin(binary)), "--config-file", conf]))

    def swift(self) -> None:
        """One replica on a plain directory: rings built once in the data, then the storage servers and the proxy."""
        # Its service user, catalog entry and the tenants' swiftoperator, in a home made before Swift (a full `up` has
        # them from Octavia's and Manila's identity step already).
        once(self.layout, "swift-identity", lambda: self.operator("identity"))
        directory = swift_dir(self.layout)
        device = directory / "devices" / "d1"
        device.mkdir(parents=True, exist_ok=True)
        try:  # Swift keeps each object's metadata in user xattrs
            os.setxattr(device, "user.localcloud", b"1")
            os.removexattr(device, "user.localcloud")
        except OSError as error:
            raise Failed(f"Swift needs user xattrs on {device}'s filesystem: {error}") from error
        once(self.layout, "swift-rings", lambda: self._swift_rings(directory))
        etc = self.etc / "swift"
        processes = [
            Process(f"swift-{server}", [str(self.layout.bin(f"swift-{server}-server")), str(etc / f"{server}-server.conf"), "--verbose"], port=PORTS[f"swift-{server}"])
            for server in SWIFT_SERVERS
        ]
        processes.append(Process("swift", [str(self.layout.bin("swift-proxy-server")), str(etc / "proxy-server.conf"), "--verbose"], http=url("swift", "/healthcheck")))
        for process in processes:  # all at once: the proxy needs the others only to serve, not to start
            start(self.layout, process)
        for process in processes:
            wait_ready(self.layout, process, 60)

    def _swift_rings(self, directory: Path) -> None:
        # The hash path prefix and suffix place every object: made once, kept with the data.
        (directory / "swift.conf").write_text(
            f"[swift-hash]\nswift_hash_path_prefix = {secrets.token_hex(8)}\nswift_hash_path_suffix = {secrets.token_hex(8)}\n\n"
            "[storage-policy:0]\nname = Policy-0\ndefault = yes\n"
        )
        for server in SWIFT_SERVERS:
            builder = str(directory / f"{server}.builder")
            # 2^8 partitions, one replica, parts movable after 1 h: one device holds everything.
            self._manage(f"swift {server} ring", "swift-ring-builder", builder, "create", "8", "1", "1")
            self._manage(f"swift {server} ring", "swift-ring-builder", builder, "add", f"r1z1-{HOST}:{PORTS[f'swift-{server}']}/d1", "100")
            self._manage(f"swift {server} ring", "swift-ring-builder", builder, "rebalance")

    def _octavia_ca(self) -> None:
        """The CA the flows sign each (no-op) amphora's certificate with."""
        directory = self.layout.data / "octavia" / "ca"
        directory.mkdir(parents=True, exist_ok=True)
        self._manage("octavia CA", "python", "-c", _OCTAVIA_CA, str(directory))

    def operator(self, *argv: str) -> str:
        script = Path(__file__).resolve().parent / "operator.py"
        return run(
            self.layout,
            f"operator {argv[0]}",
            [str(self.layout.bin("python")), script, *argv],
            {"OS_CLIENT_CONFIG_FILE": str(self.layout.clouds_yaml), "LOCALCLOUD_PASSWORD": self.layout.password()},
        )


_OCTAVIA_CA = """
import datetime, sys
from pathlib import Path
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localcloud octavia CA")])
now = datetime.datetime.now(datetime.timezone.utc)
cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
    .serial_number(x509.random_serial_number()).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=3650))
    .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(key, hashes.SHA256()))
out = Path(sys.argv[1])
(out / "ca.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()))
(out / "ca.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
"""

# Start order, with the processes each step starts; `down` stops all at once (what a service is
# waiting for may already be gone).
PROCESSES = {
    "mariadb": ("mariadb",),
    "rabbitmq": ("epmd", "rabbitmq"),
    "keystone": ("keystone",),
    "placement": ("placement",),
    "glance": ("glance",),
    "neutron": ("neutron",),
    "nova": ("nova", "nova-conductor", "nova-scheduler", *COMPUTE_HOSTS.values()),
    "cinder": ("cinder", "cinder-scheduler", "cinder-volume"),
    "octavia": ("octavia", "octavia-worker"),
    "manila": ("manila", "manila-scheduler", "manila-share"),
    "swift": ("swift-account", "swift-container", "swift-object", "swift"),
}
ORDER = tuple(PROCESSES)


def process_names() -> list[str]:
    return [name for names in PROCESSES.values() for name in names]
