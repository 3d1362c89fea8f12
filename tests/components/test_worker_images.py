"""components/worker_images.py: a standalone or libvirt worker made after install runs the static
pods' images of the release the cluster is at, read through its API when the server is made;
one made at install runs the install's. `oc` here is a stand-in for the cluster's API and the
registry: it answers `oc get clusterversion` with an upgraded release and `oc adm release info
--image-for` with digests of that release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from cluster.installer import RELEASE_COMPONENTS
from ignition import assembly
from tests.conftest import deploy, preview, stack_config, with_section
from tools.mock_run import unwrap

UPGRADED = "quay.io/openshift-release-dev/ocp-release@sha256:" + "ab" * 32
UPGRADED_OC = """#!/bin/sh
echo "$*" >> "$(dirname "$0")/calls"
case "$*" in
*"get clusterversion version"*) printf '%%s' "%s";;
*--image-for=*)
  for a in "$@"; do case "$a" in --image-for=*) name=${a#--image-for=};; quay.io/*) release=$a;; esac; done
  printf 'quay.io/upgraded/%%s@sha256:%%s\\n' "$name" "$(printf '%%s %%s' "$release" "$name" | sha256sum | cut -c1-64)";;
*) exit 1;;
esac
""" % UPGRADED
UNREACHABLE_OC = """#!/bin/sh
echo 'Unable to connect to the server: dial tcp: lookup api.ocp4.lab.local: no such host' >&2
exit 1
"""


def _oc(tmp_path: Path, script: str) -> Path:
    oc = tmp_path / "oc"
    oc.write_text(script)
    oc.chmod(0o755)
    return oc


def _installed(config: dict[str, str]) -> list:
    return deploy(config, "standalone")


def _day2(config: dict[str, str], oc: Path, **workers) -> dict[str, str]:
    torn_down = with_section(config, "bootstrap", enabled=False)
    installer = json.loads(torn_down["ocp:installer"])
    return with_section(with_section(torn_down, "installer", **{**installer, "oc": str(oc)}), "workers", **workers)


def pod_images(server) -> dict[str, list[str]]:
    """The images of every static pod in a server's user_data, by manifest file."""
    ignition = json.loads(unwrap(server.inputs["userData"]))
    pods = {}
    for entry in ignition["storage"]["files"]:
        if entry["path"].startswith("/etc/kubernetes/manifests/"):
            pod = yaml.safe_load(assembly.file_contents(entry))
            pods[entry["path"].rsplit("/", 1)[1]] = [c["image"] for c in pod["spec"]["containers"]]
    return pods


@pytest.fixture(scope="module")
def installed():
    config = with_section(stack_config("standalone"), "workers", count=3)
    return config, _installed(config)


def test_a_worker_made_after_the_bootstrap_is_gone_runs_the_running_release(installed, tmp_path):
    config, state = installed
    at_install = preview(state, config, "standalone")
    grown = preview(state, _day2(config, _oc(tmp_path, UPGRADED_OC), count=4), "standalone")
    assert grown.error is None, grown.error
    assert grown.changes["ocp4-worker-images-worker-3"].action == "create"
    # Workers 0-2 keep theirs (their lookups ran at install), worker 3 reads the cluster once.
    assert all(grown.changes[f"ocp4-worker-images-worker-{i}"].action == "same" for i in range(3))
    new = pod_images(next(r for r in grown.registered if r.name == "ocp4-workers-worker-3"))
    old = pod_images(next(r for r in at_install.registered if r.name == "ocp4-workers-worker-0"))
    # The router worker 3 is not: CoreDNS only; upgraded, where the install's are the fake release's.
    assert set(new) == {"coredns.yaml"} and all(image.startswith("quay.io/upgraded/coredns@sha256:") for image in new["coredns.yaml"])
    assert all(not image.startswith("quay.io/upgraded/") for images in old.values() for image in images)
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls[0].startswith("--kubeconfig=") and calls[0].endswith("get clusterversion version -o jsonpath={.status.desired.image}")
    assert sorted(call.split("--image-for=")[1].split()[0] for call in calls[1:]) == sorted(RELEASE_COMPONENTS)
    assert all(call.endswith(UPGRADED) for call in calls[1:])


def test_the_router_workers_keepalived_follows_too(installed, tmp_path):
    config, state = installed
    # Worker slots 0 and 1 run the routers (two router nodes): a new worker 1 gets keepalived.
    shrunk = preview(state, _day2(config, _oc(tmp_path, UPGRADED_OC), count=1), "standalone")
    assert shrunk.error is None, shrunk.error
    regrown_state = [r for r in state if "-worker-1" not in r["name"] and "-worker-2" not in r["name"]]
    regrown = preview(regrown_state, _day2(config, _oc(tmp_path, UPGRADED_OC), count=2), "standalone")
    assert regrown.error is None, regrown.error
    images = pod_images(next(r for r in regrown.registered if r.name == "ocp4-workers-worker-1"))
    assert {"coredns.yaml", "keepalived.yaml"} <= set(images)
    assert all(image.startswith("quay.io/upgraded/") for image in images["keepalived.yaml"] + images["coredns.yaml"])


def test_an_unreachable_api_stops_the_new_worker_and_says_what_to_do(installed, tmp_path):
    config, state = installed
    refused = preview(state, _day2(config, _oc(tmp_path, UNREACHABLE_OC), count=4), "standalone")
    assert refused.error is not None
    assert "ocp:workers.count: no static pod images for ocp4-worker-3" in refused.error
    assert "a worker made after install runs the keepalived, haproxy and CoreDNS images of the release the cluster runs now" in refused.error
    assert "Unable to connect to the server" in refused.error and "ocp:networking.images" in refused.error


def test_naming_all_three_images_needs_no_oc(tmp_path):
    images = {name: f"registry.example/{name}@sha256:{'cd' * 32}" for name in RELEASE_COMPONENTS}
    config = with_section(
        with_section(stack_config("standalone"), "networking", images=images), "installer",
        **{**json.loads(stack_config("standalone")["ocp:installer"]), "oc": str(tmp_path / "no-such-oc")},
    )
    state = _installed(config)
    assert not any(r["name"].startswith("ocp4-worker-images-") for r in state)
    run = next(r for r in state if r["name"] == "installer-run")
    assert run["inputs"]["environment"]["RELEASE_COMPONENTS"] == ""
    grown = preview(state, with_section(with_section(config, "bootstrap", enabled=False), "workers", count=3), "standalone")
    assert grown.error is None, grown.error


def test_a_later_workers_lookups_read_the_release_through_the_stacks_mirrors(tmp_path):
    """Issue 50, finding 9: with ocp:imageDigestSources each `oc adm release info` of a worker made after install
    gets `--idms-file`, the ImageDigestMirrorSet the installer makes of them (tests/cluster/test_installer.py holds
    it to the real installer's), read by oc while it runs; the cluster's own read (`oc get clusterversion`) needs none."""
    mirrors = [{"source": "quay.io/openshift-release-dev/ocp-v4.0-art-dev", "mirrors": ["mirror.lab:5000/ocp/release"]}]
    config = with_section(stack_config("standalone", imageDigestSources=mirrors), "workers", count=3)
    state = _installed(config)
    reading = UPGRADED_OC.replace(
        'echo "$*" >> "$(dirname "$0")/calls"\n',
        'echo "$*" >> "$(dirname "$0")/calls"\n'
        'for a in "$@"; do case "$a" in --idms-file=*) cat "${a#--idms-file=}" >> "$(dirname "$0")/idms"; echo >> "$(dirname "$0")/idms";; esac; done\n',
    )
    grown = preview(state, _day2(config, _oc(tmp_path, reading), count=4), "standalone")
    assert grown.error is None, grown.error
    calls = (tmp_path / "calls").read_text().splitlines()
    assert "--idms-file" not in calls[0] and all("--idms-file=" in call for call in calls[1:]) and len(calls) > 1, calls
    documents = [json.loads(line) for line in (tmp_path / "idms").read_text().splitlines()]
    assert documents == [{
        "apiVersion": "config.openshift.io/v1", "kind": "ImageDigestMirrorSet", "metadata": {"name": "image-digest-mirror"},
        "spec": {"imageDigestMirrors": mirrors},
    }] * (len(calls) - 1)
