"""up, down, status and env of the local cloud (the command line is harness/localcloud/__main__.py)."""

from __future__ import annotations

import json
import shlex
import tempfile
import time
from pathlib import Path

import yaml

from harness.localcloud import configuration, venv
from harness.localcloud.layout import ADMIN_CLOUD, CLOUD, PORTS, REGION, STATE_BUCKET, TENANT_USER, Layout, url
from harness.localcloud.processes import Failed, log_tail, port_taken, recorded, rss_mib, running, stop
from harness.localcloud.services import DEBIAN_PACKAGES, ORDER, PROCESSES, Cloud, missing_programs, process_names
from tools.mock_cloud import DEFAULT as DESCRIPTION


def up(layout: Layout, say) -> None:
    missing = missing_programs()
    if missing:
        raise Failed(f"missing {', '.join(missing)}: apt-get install {' '.join(DEBIAN_PACKAGES)} (.ci/run does, without starting their daemons)")
    layout.home.mkdir(parents=True, exist_ok=True)
    venv.ensure(layout, say)
    _clear_stale(layout, say)
    configuration.render(layout)
    cloud = Cloud(layout, say)
    for service in ORDER:
        if all(running(layout, name) for name in PROCESSES[service]):
            say(f"{service} already running")
            continue
        began = time.monotonic()
        getattr(cloud, service)()
        say(f"{service} up ({time.monotonic() - began:.1f} s); log {layout.logs}/{service}*.log")
    began = time.monotonic()
    cloud.discover_hosts()
    say(f"compute hosts mapped ({time.monotonic() - began:.1f} s)")
    began = time.monotonic()
    _against_the_description(cloud, "prepare", say)
    say(f"prepared as {DESCRIPTION.relative_to(DESCRIPTION.parents[2])} describes ({time.monotonic() - began:.1f} s)")
    began = time.monotonic()
    for project, credential in json.loads(cloud.operator("state-store")).items():
        path = layout.ec2_credential(project)
        written = path.with_name(f".{path.name}.new")
        written.write_text(json.dumps(credential) + "\n")
        written.chmod(0o600)
        written.replace(path)
    say(f"Pulumi state: bucket {STATE_BUCKET} and an EC2 credential per project, at {state_url()} ({time.monotonic() - began:.1f} s)")
    dead = [name for name in process_names() if not running(layout, name)]
    if dead:
        raise Failed(f"{', '.join(dead)} exited after starting; see {', '.join(str(layout.log(name)) for name in dead)}:\n{log_tail(layout, dead[0])}")


def tidy(layout: Layout, say, project: str = TENANT_USER) -> None:
    """The project (lab by default) back to what `up` prepared: what a killed or failed test run left goes."""
    _against_the_description(Cloud(layout, say), "tidy", say, project)


def _against_the_description(cloud: Cloud, command: str, say, *arguments: str) -> None:
    """The operator's `prepare` or `tidy`, given the mock cloud's description as JSON; its lines said as ours."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as description:
        json.dump(yaml.safe_load(DESCRIPTION.read_text()), description)
        description.flush()
        for line in cloud.operator(command, description.name, *arguments).splitlines():
            say(line.removeprefix("localcloud: "))


def _clear_stale(layout: Layout, say) -> None:
    """PID files of processes that died (a crash, a reboot) go; a port held by something else stops `up`."""
    for name in process_names():
        if recorded(layout, name) and not running(layout, name):
            stop(layout, [name], grace=5)  # its session's survivors, if any
            say(f"{name}: was not running (stale PID file cleared)")
    ours = {name for name in process_names() if running(layout, name)}
    for name, port in PORTS.items():
        owner = "rabbitmq" if name == "rabbitmq-dist" else name
        if owner not in ours and port_taken(port):
            raise Failed(f"127.0.0.1:{port} ({name}) is taken by a process this local cloud did not start")


def down(layout: Layout, say) -> list[str]:
    return stop(layout, process_names())


def status(layout: Layout) -> str:
    lines = [f"local cloud home {layout.home}; logs {layout.logs}"]
    total = 0
    for name in process_names():
        pid = running(layout, name)
        rss = rss_mib(layout, name) if pid else 0
        total += rss
        lines.append(f"  {name:26} {'running' if pid else 'stopped':8} {pid or '':>8} {f'{rss} MiB' if pid else ''}")
    lines.append(f"  total RSS {total} MiB")
    return "\n".join(lines)


def _cli_dir(layout: Layout):
    """A directory holding only the services' `openstack` CLI, not their python."""
    directory = layout.home / "bin"
    directory.mkdir(exist_ok=True)
    link = directory / "openstack"
    if not link.is_symlink():
        link.symlink_to(layout.bin("openstack"))
    return directory


def answering(layout: Layout | None = None) -> Path | None:
    """The clouds.yaml of the local cloud when it is up (its Keystone, started by `up`, answers), else None."""
    layout = layout or Layout.default()
    if not layout.clouds_yaml.exists() or not running(layout, "keystone") or not running(layout, "nova"):
        return None
    return layout.clouds_yaml if port_taken(PORTS["keystone"]) else None


def state_url(prefix: str = "") -> str:
    """The DIY backend URL of the tenants' state bucket in Swift's s3api (`pulumi login` takes it). Swift sends no
    checksums: without response_checksum_validation=when_required the SDK warns on every read."""
    return (
        f"s3://{STATE_BUCKET}{'/' + prefix if prefix else ''}?endpoint={url('swift')}&region={REGION}"
        "&use_path_style=true&response_checksum_validation=when_required"
    )


def environment(layout: Layout, project: str = TENANT_USER) -> str:
    if not layout.clouds_yaml_of(project).exists():
        raise Failed("no clouds.yaml yet: run `python -m harness.localcloud up` first")
    exports = {
        "OS_CLIENT_CONFIG_FILE": str(layout.clouds_yaml_of(project)),
        "OS_CLOUD": CLOUD,
        "PATH": f"{_cli_dir(layout)}:$PATH",
    }
    if layout.ec2_credential(project).exists():  # the project's S3 credential for its state bucket (not a login)
        credential = json.loads(layout.ec2_credential(project).read_text())
        exports |= {
            "AWS_ACCESS_KEY_ID": credential["access"],
            "AWS_SECRET_ACCESS_KEY": credential["secret"],
            "AWS_EC2_METADATA_DISABLED": "true",
            "LOCALCLOUD_STATE_URL": state_url(),
        }
    lines = [f"export {key}={shlex.quote(value) if key != 'PATH' else value}" for key, value in exports.items()]
    return "\n".join([*lines, f"# the operator (admin) is OS_CLOUD={ADMIN_CLOUD}; Pulumi state here: pulumi login \"$LOCALCLOUD_STATE_URL\""])
