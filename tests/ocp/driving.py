"""Running `python -m ocp` as a user would, against a played cluster (tests/ocp/played.py): in a
mount namespace of its own where the cluster's API name resolves to 127.0.0.1 (a hosts file bound
over /etc/hosts there only), with an `oc` that is the real kubectl. Test harness."""

from __future__ import annotations

import re
import subprocess
import threading
import time
from pathlib import Path

from tests.localcloud.engine import Stack
from tools import toolchain
from tools.real_installer import stand_in_oc

# `oc` for the driver: the real kubectl against the played cluster (`oc adm X` is `kubectl X`);
# only `oc adm release info` is the stand-in's (it needs a registry).
OC = """#!/bin/sh
case " $* " in *" release info "*) exec "{standin}" "$@";; esac
dropped=""
for word in "$@"; do
  shift
  if [ -z "$dropped" ] && [ "$word" = adm ]; then dropped=1; continue; fi
  set -- "$@" "$word"
done
exec "{kubectl}" "$@"
"""


# `python -m ocp` with the approver's settling period short, a parameter of its main (the played
# kubelets ask at once; no environment variable a user could set shortens it). The stack's project
# copy has no tests/: the program is given here.
OCP = ("venv/bin/python", "-c", "import sys, datetime, ocp.__main__ as m; sys.exit(m.main(sys.argv[1:], settle=datetime.timedelta(seconds=3)))")


def with_hosts(hosts: Path) -> list[str]:
    """The argv prefix that runs a command in a mount namespace of its own whose /etc/hosts is `hosts`."""
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"', str(hosts)]


class Driver:
    """`python -m ocp install` (or another command) run as a user would, in a mount namespace of
    its own where the cluster's API name resolves to the played cluster; lines kept as they come."""

    def __init__(self, stack: Stack, hosts: Path, *args: str, program: tuple[str, ...] = OCP):
        command = [*with_hosts(hosts), *program, *args, "--stack", stack.name]
        self.began = time.monotonic()
        self.lines: list[tuple[float, str]] = []
        self.process = subprocess.Popen(
            command, cwd=stack.project, env=stack.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append((time.monotonic() - self.began, line.rstrip("\n")))

    def text(self) -> str:
        return "\n".join(line for _, line in self.lines)

    def wait_for_line(self, pattern: str, timeout: float) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for at, line in self.lines:
                if re.search(pattern, line):
                    return at
            assert self.process.poll() is None or self._reader.is_alive(), f"the driver ended ({self.process.returncode}) before {pattern!r}:\n{self.text()[-6000:]}"
            time.sleep(0.2)
        raise AssertionError(f"no {pattern!r} within {timeout:.0f} s:\n{self.text()[-6000:]}")

    def wait(self, timeout: float) -> int:
        code = self.process.wait(timeout=timeout)
        self._reader.join(timeout=30)
        return code


def write_oc(work: Path) -> Path:
    (work / "standin").mkdir(exist_ok=True)
    oc = work / "oc"
    oc.write_text(OC.format(standin=stand_in_oc(work / "standin"), kubectl=toolchain.binary("kubectl")))
    oc.chmod(0o755)
    return oc


def hosts_file(path: Path, api_name: str, address: str = "127.0.0.1") -> Path:
    """/etc/hosts as it is, and the cluster's API name at `address` on loopback (where the played cluster listens)."""
    path.write_text(Path("/etc/hosts").read_text() + f"\n{address} {api_name}\n")
    return path
