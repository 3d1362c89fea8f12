"""The real engine hands the program its config (pulumi.Config); the program learns the keys set
and which are secret from the stack file the CLI wrote beside it."""

from __future__ import annotations

from tests.e2e import test_engine as engine
from tests.e2e.test_engine import init_stack, pulumi

pytestmark = engine.pytestmark
isolated = engine.isolated  # the fixtures of the engine's tests
project = engine.project


def test_an_unknown_key_and_a_secret_that_would_show_are_refused_before_any_resource(isolated, project):
    stack_file = project / "Pulumi.standalone.yaml"
    stack_file.write_text(stack_file.read_text().replace("ocp:clusterName: ocp4", "ocp:clusterName: ocp4\n  ocp:clusterNmae: ocp5"))
    init_stack(isolated, project, "standalone")
    # The CLI stores it encrypted, as `secure:`; the engine hands it to the program decrypted.
    done = pulumi(isolated, project, "config", "set", "--secret", "ocp:baseDomain", "example.com", "--stack", "standalone")
    assert done.returncode == 0, done.output
    assert "ocp:baseDomain:\n    secure: " in stack_file.read_text()
    result = pulumi(isolated, project, "preview", "--stack", "standalone")
    assert result.returncode != 0
    assert "ocp:clusterNmae: not a setting of this program: did you mean clusterName?" in result.output
    assert "ocp:baseDomain: is set as a secret, but the program writes it into resources in clear" in result.output
    assert "resource plugin" not in result.output
    assert result.connects == []


def test_a_proxy_set_as_a_secret_is_read_and_the_stack_runs_to_the_first_provider(isolated, project):
    init_stack(isolated, project, "standalone")
    url = "http://user:pw-e2e@proxy.example.com:3128"
    done = pulumi(isolated, project, "config", "set", "--secret", "--path", "ocp:proxy.httpProxy", url, "--stack", "standalone")
    assert done.returncode == 0, done.output
    result = pulumi(isolated, project, "preview", "--stack", "standalone")
    assert "invalid stack configuration" not in result.output, result.output
    assert "resource plugin" in result.output and "pw-e2e" not in result.output
