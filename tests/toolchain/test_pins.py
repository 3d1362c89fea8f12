"""toolchain/pins.toml, the one place naming every Go module and version: the modules built
from it, the SDKs the program runs and the pins must agree, or a test here says where."""

from __future__ import annotations

import importlib.metadata
import json
import re
from importlib.resources import files

import pytest

from tests.conftest import ROOT
from toolchain.build import NPM, load_npm_pins, load_pins, module_is_current, npm_manifest, pinned_requirement, upstream_replaces, wanted_go_mod

PINS = load_pins()
BUILT = [component for component in PINS if component.buildable]
PLUGINS = [component for component in PINS if component.plugin]


def requirement(name: str) -> str:
    text = (ROOT / "requirements.txt").read_text()
    return re.search(rf"^{re.escape(name)}==(\S+)", text, re.MULTILINE).group(1)


@pytest.mark.parametrize("component", BUILT, ids=lambda c: c.name)
def test_each_module_we_build_from_requires_exactly_the_pins(component):
    go_mod = (component.module_dir / "go.mod").read_text()
    assert pinned_requirement(go_mod, component.module) == component.version
    for path, version in component.require.items():
        assert pinned_requirement(go_mod, path) == component.fill(version)
    assert module_is_current(component), f"run `bash .ci/toolchain` to rewrite {component.module_dir} and commit it"
    assert f"{component.module} {component.version} h1:" in (component.module_dir / "go.sum").read_text()


@pytest.mark.parametrize("component", PLUGINS, ids=lambda c: c.name)
def test_each_plugin_is_pinned_at_the_version_its_sdk_asks_for(component):
    sdk = json.loads(files(f"pulumi_{component.plugin}").joinpath("pulumi-plugin.json").read_text())
    assert (sdk["name"], sdk["version"]) == (component.plugin, component.plugin_version)
    assert requirement(f"pulumi-{component.plugin}") == component.plugin_version


def test_the_cli_is_not_older_than_the_sdk():
    sdk = requirement("pulumi")
    assert importlib.metadata.version("pulumi") == sdk
    cli = next(c for c in PINS if c.name == "pulumi")
    assert tuple(map(int, cli.version.removeprefix("v").split("."))) >= tuple(map(int, sdk.split(".")))


def test_replaces_of_the_upstream_module_are_repeated_but_local_ones_are_not():
    upstream = """module x

replace github.com/pulumi/pulumi/sdk/v3 => ../sdk

replace github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e

replace (
\tgithub.com/a/b => github.com/c/b v1.0.0 // why
// commented => github.com/x v1
\tk8s.io/x v0.1.0 => ./local
)
"""
    assert upstream_replaces(upstream) == [
        "github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e",
        "github.com/a/b => github.com/c/b v1.0.0",
    ]
    installer = next(c for c in PINS if c.name == "openshift-install")
    go_mod = wanted_go_mod(installer, upstream)
    assert "replace (\n\tgithub.com/atotto/clipboard => " in go_mod and "../sdk" not in go_mod


def test_the_toolchain_stays_outside_git():
    assert "/.toolchain" in (ROOT / ".gitignore").read_text().splitlines()
    assert "bash .ci/toolchain" in (ROOT / ".ci" / "run").read_text()


def test_staging_modules_the_upstream_requires_are_required_and_replaced_at_the_staging_version():
    upstream = """module k8s.io/kubernetes

require (
\tk8s.io/api v0.0.0
\tk8s.io/client-go v0.0.0
\tgithub.com/x/y v1.0.0
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/client-go => ./staging/src/k8s.io/client-go
\tk8s.io/sample-cli-plugin => ./staging/src/k8s.io/sample-cli-plugin
)
"""
    kubernetes = next(c for c in PINS if c.name == "kubernetes")
    go_mod = wanted_go_mod(kubernetes, upstream)
    staging = kubernetes.staging
    assert f"\tk8s.io/api {staging}\n\tk8s.io/client-go {staging}\n)" in go_mod
    assert f"\tk8s.io/api => k8s.io/api {staging}\n\tk8s.io/client-go => k8s.io/client-go {staging}\n)" in go_mod
    assert "sample-cli-plugin" not in go_mod and "./staging" not in go_mod  # replaced, never required: the proxy refuses it


def test_the_kubernetes_pins_agree_with_its_version():
    kubernetes = next(c for c in PINS if c.name == "kubernetes")
    major, minor, patch = kubernetes.version.removeprefix("v").split(".")
    assert kubernetes.staging == f"v0.{minor}.{patch}"
    assert (kubernetes.extra["git_major"], kubernetes.extra["git_minor"]) == (major, minor)
    assert kubernetes.binary == kubernetes.package.rsplit("/", 1)[-1]  # one `go build -o bin/` names each after its package
    go_mod = (kubernetes.module_dir / "go.mod").read_text()
    staged = [line.split() for line in upstream_replaces(go_mod) if line.split()[0] == line.split()[2]]
    assert len(staged) > 20 and all(fields[-1] == kubernetes.staging for fields in staged)


def test_the_npm_lock_holds_each_pinned_package_at_its_version_and_every_package_with_its_integrity():
    packages = load_npm_pins()
    assert [package.name for package in packages] == ["gitlab-ci-local"]
    assert json.loads((NPM / "package.json").read_text()) == npm_manifest(packages)
    locked = json.loads((NPM / "package-lock.json").read_text())["packages"]
    for package in packages:
        assert locked[f"node_modules/{package.name}"]["version"] == package.version
    # `npm ci` installs exactly these and checks each against its integrity: none may lack one.
    unchecked = [name for name, entry in locked.items() if name and not (entry.get("version") and entry.get("integrity", "").startswith("sha512-"))]
    assert unchecked == []
