"""ocp:installer.cloudProviderConfig's checks (cluster/cloud_provider_config.py) held to the real parser: gcfg
v1.2.3 (gopkg.in/gcfg.v1, what cloud-provider-openstack reads its config with), from the Go module cache the
toolchain build filled, built here into a small reader whose config struct has the sections and keys, with
their types, of the cloud controller manager's and the Cinder CSI driver's (cloud-provider-openstack v1.32).
Every text the program takes, gcfg reads without an error or a dropped line, to the same values; every text
gcfg stops at or drops a line of, the program refuses. Where the program is stricter (it refuses what gcfg
would take), the case says why.

Before the cloud controller manager's gcfg, OpenShift's cloud controller manager operator reads the ConfigMap with
go-ini and writes it back (gopkg.in/ini.v1 `ini.Load` and `WriteTo`, CloudConfigTransformer in
openshift/cluster-cloud-controller-manager-operator pkg/cloud/openstack/openstack.go; v1.67.1 there, v1.67.0 here,
the installer's, from the same module cache: their parsers differ only in a continuation after a multi-line quoted
value, which the program refuses whole). That round trip, built the same way, changes nothing gcfg then reads of
what the program takes; what it would fail on or change, the program refuses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cluster.cloud_provider_config import BOOL, DURATION, INT, LIST, SECTIONS, UINT, parse

GOMODCACHE = Path(os.environ.get("GOMODCACHE") or Path.home() / "go" / "pkg" / "mod")
GCFG = GOMODCACHE / "cache" / "download" / "gopkg.in" / "gcfg.v1" / "@v" / "v1.2.3.zip"
GO_INI = GOMODCACHE / "cache" / "download" / "gopkg.in" / "ini.v1" / "@v" / "v1.67.0.zip"
GO_TYPES = {BOOL: "bool", INT: "int64", UINT: "uint", DURATION: "Duration", LIST: "[]string"}

pytestmark = pytest.mark.skipif(shutil.which("go") is None or not GCFG.exists(), reason="go or gcfg v1.2.3 in the module cache is missing (bash .ci/toolchain)")


def _struct(name: str, keys: dict[str, str]) -> str:
    fields = "\n".join(f'\tF{i} {GO_TYPES.get(kind, "string")} `gcfg:"{key}" json:"{key}"`' for i, (key, kind) in enumerate(sorted(keys.items())))
    return f"type {name} struct {{\n{fields}\n}}\n"


def _program() -> str:
    structs = "".join(_struct(section, keys) for section, keys in SECTIONS.items())
    sections = "\n".join(
        f"\t{section} map[string]*{section}" if section == "LoadBalancerClass" else f"\t{section} {section}" for section in SECTIONS
    )
    return f"""package main

import (
\t"encoding/json"
\t"fmt"
\t"io"
\t"os"
\t"time"

\t"gopkg.in/gcfg.v1"
)

// As cloud-provider-openstack's util.MyDuration: time.ParseDuration.
type Duration struct{{ time.Duration }}

func (d *Duration) UnmarshalText(text []byte) error {{
\tparsed, err := time.ParseDuration(string(text))
\td.Duration = parsed
\treturn err
}}

{structs}
type Config struct {{
{sections}
}}

func main() {{
\tsource, _ := io.ReadAll(os.Stdin)
\tvar cfg Config
\terr := gcfg.ReadStringInto(&cfg, string(source))
\tresult := map[string]interface{{}}{{"config": cfg}}
\tif err != nil {{
\t\tresult["error"] = err.Error()
\t\tresult["fatal"] = gcfg.FatalOnly(err) != nil
\t}}
\tout, _ := json.Marshal(result)
\tfmt.Println(string(out))
}}
"""


def _built(work: Path, requires: str, program: str) -> Path:
    """A small reader, built offline from the module cache."""
    (work / "go.mod").write_text(f"module reader\n\ngo 1.22\n\nrequire (\n{requires})\n")
    (work / "main.go").write_text(program)
    environment = {**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOSUMDB": "off", "GOMODCACHE": str(GOMODCACHE), "GOTOOLCHAIN": "local"}
    built = subprocess.run(["go", "build", "-o", "reader", "."], cwd=work, env=environment, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    return work / "reader"


@pytest.fixture(scope="module")
def gcfg_reader(tmp_path_factory) -> Path:
    return _built(tmp_path_factory.mktemp("gcfg"), "\tgopkg.in/gcfg.v1 v1.2.3\n\tgopkg.in/warnings.v0 v0.1.2\n", _program())


# The operator's round trip: ini.Load with its defaults, then WriteTo.
GO_INI_PROGRAM = """package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"gopkg.in/ini.v1"
)

func main() {
	source, _ := io.ReadAll(os.Stdin)
	result := map[string]string{}
	cfg, err := ini.Load(source)
	if err != nil {
		result["error"] = err.Error()
	} else {
		var written bytes.Buffer
		if _, err := cfg.WriteTo(&written); err != nil {
			result["error"] = err.Error()
		}
		result["written"] = written.String()
	}
	out, _ := json.Marshal(result)
	fmt.Println(string(out))
}
"""


@pytest.fixture(scope="module")
def operator_round_trip(tmp_path_factory) -> Path:
    if not GO_INI.exists():
        pytest.skip("gopkg.in/ini.v1 v1.67.0 is not in the module cache (bash .ci/toolchain: the installer's build fetches it)")
    return _built(tmp_path_factory.mktemp("goini"), "\tgopkg.in/ini.v1 v1.67.0\n", GO_INI_PROGRAM)


def read(reader: Path, text: str) -> dict:
    done = subprocess.run([str(reader)], input=text, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


TAKEN = [
    "[BlockStorage]\nignore-volume-az = yes\n",
    "[BlockStorage]\nignore-volume-az = On ; Cinder's zones are not Nova's\nnode-volume-attach-limit = 0x20\n",
    "# ours\n[LoadBalancer]\nlb-provider = ovn\nlb-method = SOURCE_IP_PORT\ncreate-monitor = true\nmonitor-delay = 1m30s\nmonitor-max-retries = 3\nmax-shared-lb = -1\n",
    '[LoadBalancer]\nfloating-network-id = "6a4e1c2e-0000-4000-8000-000000000001"\n  internal-lb=false\n',
    '[LoadBalancerClass "fast"]\nfloating-network-id = abc\nsubnet-id = def\n',
    "[Networking]\npublic-network-name = public\nipv6-support-disabled = 1\n",
    "[Metadata]\nsearch-order = configDrive,metadataService\nrequest-timeout = 0\n[Route]\nrouter-id = r1\n",
]
# gcfg stops at these (fatal) or drops a line of them without a word (extra data).
REFUSED_BY_BOTH = [
    "[Loadbalancer2]\nlb-provider = ovn\n",
    "[LoadBalancer]\nlb-provdier = ovn\n",
    "[BlockStorage]\nignore-volume-az = maybe\n",
    "[BlockStorage]\nignore-volume-az\nnode-volume-attach-limit = two\n",
    "[LoadBalancer]\nmonitor-delay = 5\n",
    "[LoadBalancer]\nmonitor-max-retries = -1\n",
    '[LoadBalancer]\nlb-method = a"b\n',
    "lb-provider = ovn\n",
    "[LoadBalancer\nlb-provider = ovn\n",
    "[LoadBalancer]\nwhat is this\n",
    "[LoadBalancer]\nlb-provider\n",
    "[BlockStorage]\nignore-volume-az = \n",
]
# gcfg takes these; the program refuses them, and why.
STRICTER = {
    "[Global]\nauth-url = https://keystone.example:5000/v3\n": "the installer's section: OpenShift rewrites it",
    "[LoadBalancer]\nlb-provider = ovn\nlb-provider = amphora\n": "gcfg keeps the last silently",
    '[LoadBalancer]\nlb-provider = "ov\\"n"\n': "go-ini, which OpenShift's operator reads it with first, takes backslashes otherwise",
    '[BlockStorage "x"]\nignore-volume-az = yes\n': "gcfg reads it into the section named so, which nothing reads",
    "[loadbalancer]\nlb-provider = ovn\n": "go-ini, which OpenShift's operator reads it with first, matches section names by case",
    # go-ini's parser (gopkg.in/ini.v1 v1.67.1 parser.go) reads these otherwise, or not at all (cluster/cloud_provider_config.py).
    "[LoadBalancer]\ncreate-monitor\n": "go-ini refuses a key without `=`, and with it the whole config",
    "[Networking]\npublic-network-name = public\npublic-network-name = provider\n": "go-ini keeps the last of a key set twice",
    "[LoadBalancer]\nlb-provider = `ovn`\n": "go-ini reads a backtick as a raw string's quote, over lines",
    "[LoadBalancer]\nlb-provider = 'ovn'\n": "go-ini strips single quotes, gcfg keeps them",
    '[LoadBalancer]\nfloating-subnet-tags = "a;b"\n': "go-ini ends a value at ; even inside double quotes",
    '[LoadBalancerClass "fast\tlane"]\nsubnet-id = s1\n': "the run script's merge splits a setting at its first tab",
}


@pytest.mark.parametrize("text", TAKEN)
def test_what_the_program_takes_gcfg_reads_whole_and_alike(gcfg_reader, text):
    settings, problems = parse(text)
    assert problems == []
    found = read(gcfg_reader, text)
    assert "error" not in found, found
    for header, key, line in settings:
        section = header.strip("[]").split()[0]
        read_section = found["config"][section]
        if section == "LoadBalancerClass":
            read_section = read_section[header.split('"')[1]]
        value = read_section[key]
        written = line.partition("=")[2].strip().strip('"')
        kind = SECTIONS[section][key]
        if kind == BOOL:
            assert value is (written.lower() in ("", "true", "yes", "on", "1")), (line, value)
        elif kind in (INT, UINT):
            assert value == int(written, 0), (line, value)
        elif kind == LIST:
            assert written in value, (line, value)
        elif kind != DURATION:
            assert value == written, (line, value)


@pytest.mark.parametrize("text", REFUSED_BY_BOTH)
def test_what_gcfg_stops_at_or_drops_the_program_refuses(gcfg_reader, text):
    assert "error" in read(gcfg_reader, text)
    assert parse(text)[1] != []


@pytest.mark.parametrize("text", list(STRICTER), ids=list(STRICTER.values()))
def test_where_the_program_is_stricter_than_gcfg(gcfg_reader, text):
    assert "error" not in read(gcfg_reader, text) or not read(gcfg_reader, text)["fatal"]
    assert parse(text)[1] != []


def through_the_operator(round_trip: Path, gcfg_reader: Path, text: str) -> dict:
    """What gcfg reads of `text` once the operator's go-ini read it and wrote it back: its error, or gcfg's answer."""
    done = subprocess.run([str(round_trip)], input=text, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    passed = json.loads(done.stdout)
    return {"go-ini error": passed["error"]} if "error" in passed else read(gcfg_reader, passed["written"])


@pytest.mark.parametrize("text", TAKEN)
def test_what_the_program_takes_reaches_the_controller_unchanged_through_the_operator(operator_round_trip, gcfg_reader, text):
    assert parse(text)[1] == []
    assert through_the_operator(operator_round_trip, gcfg_reader, text) == read(gcfg_reader, text)


# gcfg alone reads each of these without an error (STRICTER); once go-ini has read and written it, gcfg reads
# something else, or go-ini fails and the operator passes on nothing.
OPERATOR_MISREADS = [
    "[LoadBalancer]\ncreate-monitor\n",  # a key without `=`: go-ini fails the whole config
    "[Networking]\npublic-network-name = public\npublic-network-name = provider\n",  # go-ini keeps the last
    "[LoadBalancer]\nlb-provider = `ovn`\n",  # a raw string to go-ini: ovn, not `ovn`
    "[LoadBalancer]\nlb-provider = 'ovn'\n",  # go-ini strips the quotes
    '[LoadBalancer]\nfloating-subnet-tags = "a;b"\n',  # go-ini cuts at ;, writing back `"a`
]


@pytest.mark.parametrize("text", OPERATOR_MISREADS)
def test_what_the_operator_would_pass_on_otherwise_the_program_refuses(operator_round_trip, gcfg_reader, text):
    alone = read(gcfg_reader, text)
    assert "error" not in alone or not alone["fatal"], alone
    assert through_the_operator(operator_round_trip, gcfg_reader, text) != alone
    assert parse(text)[1] != []
