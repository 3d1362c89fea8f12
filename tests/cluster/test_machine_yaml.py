"""cluster.machine_yaml: the installer's YAML read as the pure parser reads it, only faster."""

import pytest
import yaml

from cluster import machine_yaml

KUBECONFIG = """\
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTi==
    server: https://api.ocp4.example.com:6443
  name: ocp4
contexts:
- context: {cluster: ocp4, user: admin}
  name: admin
current-context: admin
preferences: {}
users:
- name: admin
  user: {client-certificate-data: "LS0t", token: null}
"""
MANIFEST = b"""\
apiVersion: config.openshift.io/v1
kind: ClusterVersion
metadata: {name: version, namespace: openshift-cluster-version}
spec:
  channel: stable-4.19
  overrides:
  - {kind: Deployment, name: x, unmanaged: true, group: apps, namespace: "0755"}
  when: 2026-11-27
  port: 0o22
"""


def test_it_reads_what_the_safe_loader_reads():
    for document in (KUBECONFIG, MANIFEST, "", "- 1\n- yes\n- ~\n"):
        assert machine_yaml.load(document) == yaml.safe_load(document)


def test_it_uses_libyaml_where_pyyaml_has_it():
    if yaml.__with_libyaml__:
        assert machine_yaml._LOADER is yaml.CSafeLoader


def test_it_refuses_what_the_safe_loader_refuses():
    with pytest.raises(yaml.YAMLError):
        machine_yaml.load("!!python/object/apply:os.system ['true']")
