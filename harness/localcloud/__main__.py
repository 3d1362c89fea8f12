"""`python -m harness.localcloud up | down | status | env`: a real OpenStack on 127.0.0.1.

up      builds the services' virtualenv if needed, starts MariaDB, RabbitMQ, Keystone,
        Placement, Glance, Neutron (with trunks), Nova (fake driver), Cinder (bookkeeping
        driver), Octavia (no-op amphorae, real VIP ports), Manila (its DummyDriver) and Swift
        (one replica; S3 through s3api with EC2 credentials), and prepares the cloud the
        committed stacks expect (samples/cloud/dev.yaml). Running it
        again starts only what is not running; after a crash it cleans stale PID files.
tidy    removes from the tenant's project whatever `up` did not prepare there: what a test run
        killed or failed before its destroy left (servers, networks, images, volumes...), and
        empties its Pulumi state bucket (kept).
        --project lab2: the second tenant project instead, where `up` prepares only quotas.
down    stops exactly the processes `up` started (their PID files), keeping the data.
status  each process: running or not, PID, RSS; where the logs are.
env     the exports a shell needs: `eval "$(venv/bin/python -m harness.localcloud env)"`
        (`--project lab2`: as the second project's tenant), with its EC2 credential for the state
        bucket (AWS_ACCESS_KEY_ID...) and LOCALCLOUD_STATE_URL, the `pulumi login` URL.

--libvirt: the same four for the local libvirt instead (harness/localcloud/libvirt.py): libvirtd
        confined to a network namespace of its own, the pool `default`, a stand-in boot image, and
        the domain type this host runs; `env --libvirt` prints LIBVIRT_DEFAULT_URI, OCP_LIBVIRT_IMAGE
        and OCP_LIBVIRT_DOMAIN_TYPE for a stack's ocp:libvirt.uri, .image and .domainType.
"""

from __future__ import annotations

import argparse
import sys
import time

from harness.localcloud import libvirt
from harness.localcloud.cloud import down, environment, status, tidy, up
from harness.localcloud.layout import PROJECTS, TENANT_USER, Layout
from harness.localcloud.processes import Failed


def say(message: str) -> None:
    print(f"localcloud: {message}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.localcloud", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("up", "tidy", "down", "status", "env"))
    parser.add_argument("--libvirt", action="store_true", help="the local libvirt instead of the local OpenStack")
    parser.add_argument("--project", choices=PROJECTS, default=TENANT_USER, help="tidy and env: the tenant project (lab by default)")
    arguments = parser.parse_args(argv)
    command = arguments.command
    layout = Layout.default()
    began = time.monotonic()
    try:
        if arguments.libvirt:
            return _libvirt(command, layout, began)
        if command == "up":
            up(layout, say)
            say(f'up in {time.monotonic() - began:.0f} s; `eval "$(venv/bin/python -m harness.localcloud env)"` then `openstack server list`')
        elif command == "tidy":
            tidy(layout, say, arguments.project)
            say(f"tidied in {time.monotonic() - began:.0f} s")
        elif command == "down":
            stopped = down(layout, say)
            say(f"stopped {len(stopped)} processes in {time.monotonic() - began:.0f} s; data kept in {layout.data}")
        elif command == "status":
            print(status(layout))
        else:
            print(environment(layout, arguments.project))
    except Failed as error:
        say(f"failed: {error}")
        return 1
    return 0


def _libvirt(command: str, layout: Layout, began: float) -> int:
    if command == "up":
        local = libvirt.up(layout, say)
        say(
            f'libvirt up in {time.monotonic() - began:.0f} s; `eval "$(venv/bin/python -m harness.localcloud env --libvirt)"` then `virsh list --all` ({local.uri})'
        )
    elif command == "down":
        stopped = libvirt.down(layout, say)
        say(f"stopped {len(stopped)} in {time.monotonic() - began:.0f} s; definitions, pool and image kept in {libvirt.Libvirt(layout).root}")
    elif command == "status":
        print(libvirt.status(layout))
    else:
        print(libvirt.environment(layout))
    return 0


if __name__ == "__main__":
    sys.exit(main())
