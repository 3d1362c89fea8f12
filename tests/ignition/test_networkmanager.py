"""NetworkManager's own reading of a standalone node's /etc/NetworkManager/conf.d, as the offline plan
writes each node's files (issue 50, item 1): with an IPv6 machine network every node, the bootstrap
included, makes its IPv6 addresses from its MAC (ipv6.addr-gen-mode=0, EUI-64), as Neutron's
anti-spoofing wants; an IPv4 stack's nodes get nothing new.

What RHCOS's NetworkManager does with the file is read by Debian's (`network-manager`, 1.42 here; RHCOS
4.19 runs 1.52): `NetworkManager --print-config` merges the configuration and exits, no daemon. It
reads only what these flags name, and writes only --intern-config (it rewrites that file even when it
prints: unset, the system's /var/lib/NetworkManager/NetworkManager-intern.conf), all seen under strace:
--config (the main file), --config-dir (conf.d), --system-config-dir (/usr/lib/NetworkManager/conf.d),
--intern-config. /run/NetworkManager/conf.d has no flag (compiled in): the header line names every
file read by directory (lib, run, etc), and the test holds it to this node's files alone.

The file mirrors the MCO's for platform: openstack (machine-config-operator
templates/common/openstack/files/ipv6-config.yaml, the same on release-4.19 to release-4.22: path
/etc/NetworkManager/conf.d/02-ipv6.conf, `[connection]` `ipv6.addr-gen-mode=0`) and the installer's
OpenStack bootstrap file (openshift/installer v1.4.19-ec5,
data/data/bootstrap/openstack/files/etc/NetworkManager/conf.d/02-ipv6.conf, the same two lines). A
master or worker also gets, from the machine config server, the MCO's own conf.d files for every
platform (templates/common/_base/files, release-4.19 to release-4.22): 01-ipv6.conf (`[connection]`
ipv6.dhcp-duid=ll, ipv6.dhcp-iaid=mac), 20-keyfiles.conf ([main], [keyfile]) and sdn.conf ([device]);
none of them, nor any other MCO template, sets ipv6.addr-gen-mode (git grep on those branches). The
one in the same section is added here to show NetworkManager's merge keeps both files' keys.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

NM_CONF_D = "files/etc/NetworkManager/conf.d"
# The MCO's _base 01-ipv6.conf (see above), which the machine config server gives masters and workers.
MCO_BASE_IPV6 = "[connection]\nipv6.dhcp-duid=ll\nipv6.dhcp-iaid=mac\n"


def need_networkmanager() -> str:
    binary = shutil.which("NetworkManager") or next(
        (str(path) for path in (Path("/usr/sbin/NetworkManager"), Path("/sbin/NetworkManager")) if path.is_file()), None
    )
    if binary is None:
        pytest.skip("not installed: NetworkManager (Debian's network-manager, in .ci/run's packages)")
    return binary


def print_config(binary: str, conf_d: Path, scratch: Path) -> tuple[str, dict[str, dict[str, str]]]:
    """NetworkManager's merged configuration over `conf_d` alone: (its header line, {section: {key: value}})."""
    scratch.mkdir(parents=True)
    (scratch / "NetworkManager.conf").write_text("")  # RHCOS's is comments only
    (scratch / "lib").mkdir()
    result = subprocess.run(
        [
            binary, "--print-config",
            f"--config={scratch / 'NetworkManager.conf'}", f"--config-dir={conf_d}",
            f"--system-config-dir={scratch / 'lib'}", f"--intern-config={scratch / 'intern.conf'}",
        ],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    header, _, body = result.stdout.partition("\n")
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in body.splitlines():
        if re.fullmatch(r"\[.+\]", line):
            current = sections.setdefault(line[1:-1], {})
        elif line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            current[key] = value
    return header, sections


def _plan(tmp_path: Path, families: str) -> Path:
    """The offline plan of the committed standalone stack, dual-stack (IPv4 first, as standalone takes it:
    a network given with a subnet of each family) or as committed (IPv4)."""
    committed = yaml.safe_load((ROOT / "Pulumi.standalone.yaml").read_text())
    config = committed["config"]
    if families == "dual":
        config["ocp:machineNetwork"] = ["10.0.0.0/16", "fd00:10::/64"]
        config["ocp:clusterNetwork"] = [{"cidr": "10.128.0.0/14", "hostPrefix": 23}, {"cidr": "fd01::/48", "hostPrefix": 64}]
        config["ocp:serviceNetwork"] = ["172.30.0.0/16", "fd02::/112"]
        config["ocp:openstack"]["existingNetwork"] = {"networkId": "nodes", "subnetId": ["nodes-v4", "nodes-v6"], "router": True}
    config["ocp:installer"]["dir"] = str(tmp_path / "assets")
    stack = tmp_path / "Pulumi.eui64.yaml"
    stack.write_text(yaml.safe_dump(committed))
    out = tmp_path / "plan"
    result = subprocess.run(
        [sys.executable, "-m", "tools.plan", "--config-file", str(stack), "--out", str(out)], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return out


def test_every_standalone_node_of_a_dual_stack_plan_makes_its_ipv6_addresses_from_its_mac(tmp_path):
    binary = need_networkmanager()
    out = _plan(tmp_path, "dual")
    nodes = sorted(path for path in (out / "nodes").iterdir() if path.is_dir())
    roles = {re.sub(r"-\d+$", "", node.name).rsplit("-", 1)[-1] for node in nodes}
    assert roles == {"bootstrap", "master", "worker"}, [node.name for node in nodes]
    for node in nodes:
        conf_d = node / NM_CONF_D
        assert (conf_d / "02-ipv6.conf").read_text() == "[connection]\nipv6.addr-gen-mode=0\n", node.name
        header, sections = print_config(binary, conf_d, tmp_path / "nm" / node.name)
        # Only this node's files were read: no lib: or run: part, every file of its conf.d under etc:.
        files = ", ".join(sorted(path.name for path in conf_d.iterdir()))
        assert header == f"# NetworkManager configuration: {tmp_path / 'nm' / node.name / 'NetworkManager.conf'} (etc: {files})", header
        assert sections["connection"] == {"ipv6.addr-gen-mode": "0"}, (node.name, sections)
        if node.name.endswith("-bootstrap"):
            continue  # no machine config server serves the bootstrap: what the plan shows is all it has
        # A master or worker, with the MCO's own 01-ipv6.conf beside ours: NetworkManager keeps both files' keys.
        merged = tmp_path / "merged" / node.name
        shutil.copytree(conf_d, merged)
        (merged / "01-ipv6.conf").write_text(MCO_BASE_IPV6)
        _, sections = print_config(binary, merged, tmp_path / "nm-merged" / node.name)
        assert sections["connection"] == {"ipv6.dhcp-duid": "ll", "ipv6.dhcp-iaid": "mac", "ipv6.addr-gen-mode": "0"}, sections


def test_an_ipv4_standalone_stacks_nodes_get_no_ipv6_setting(tmp_path):
    """What NetworkManager reads of an IPv4 stack's node: no [connection] section, as before (its nodes'
    files stay byte for byte what they were: tests/states, the four committed stacks' plans)."""
    binary = need_networkmanager()
    out = _plan(tmp_path, "ipv4")
    for node in sorted(path for path in (out / "nodes").iterdir() if path.is_dir()):
        conf_d = node / NM_CONF_D
        assert not (conf_d / "02-ipv6.conf").exists(), node.name
        _, sections = print_config(binary, conf_d, tmp_path / "nm" / node.name)
        assert "connection" not in sections and sections["main"]["rc-manager"] == "unmanaged", (node.name, sections)
