"""examples/ci/.gitlab-ci.yml run for real (issue 52, item 3): gitlab-ci-local (toolchain/pins.toml) runs its jobs
with its shell executor in a clone of this project with the dev stack, the state in the local cloud's Swift (s3api),
the stack's key under a real Vault's transit key, both from CI variables (gitlab-ci-local's variables file, as a
project's CI/CD settings give them). A merge request's pipeline runs the offline plan and the preview with the guard
rails (a fork's would not run the preview); the default branch's pipeline runs `python -m ocp up`, which makes the
cluster's resources; then a worker's security group rule deleted by hand, the scheduled pipeline's drift job
(`python -m ocp status --all --json`) fails with exit 1, naming the rule. One deployed stack, one master and one
worker, destroyed on the way out with the same backend and key."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from harness import vault
from tests.localcloud.conftest import sdk, state_url
from tests.localcloud.engine import Stack, needs
from tests.localcloud.openstack_stack import PLUGINS, infra_id, openstack_stack
from tools import toolchain

ROOT = Path(__file__).resolve().parents[2]
PIPELINE = ROOT / "examples" / "ci" / ".gitlab-ci.yml"
PREFIX = "tests/pipeline"
# The team lists its stacks in the pipeline; this clone has one.
STACKS = "      - OCP_STACK: [prod-eu1, prod-eu2, staging]\n"
# What a project's CI/CD variables hold (examples/ci/.gitlab-ci.yml names them): the state, its credential, the key, the cloud.
CI_VARIABLES = ("PULUMI_BACKEND_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "VAULT_ADDR", "VAULT_TOKEN", "OS_CLIENT_CONFIG_FILE")

pytestmark = [
    pytest.mark.skipif(needs(*PLUGINS) is not None, reason=str(needs(*PLUGINS))),
    pytest.mark.skipif(vault.missing() is not None, reason=str(vault.missing())),
    pytest.mark.skipif(toolchain.binary("gitlab-ci-local") is None, reason=toolchain.missing("gitlab-ci-local")),
]


@pytest.fixture(scope="module")
def stack(cloud, cloud_env, vault_server, tmp_path_factory) -> Iterator[Stack]:
    def small(committed: dict) -> dict:
        # One master, one worker booting from a volume; no floating IP to take from the shared cloud's quota.
        return {
            **committed,
            "ocp:openstack": dict(committed["ocp:openstack"], apiFloatingIp="none", ingressFloatingIp="none"),
            "ocp:masters": dict(committed["ocp:masters"], count=1),
            "ocp:workers": dict(committed["ocp:workers"], count=1, rootVolume={"size": 30, "type": "ssd"}),
        }

    url = state_url(cloud_env, PREFIX)
    extra = {
        "PULUMI_BACKEND_URL": url,
        **{key: cloud_env[key] for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_EC2_METADATA_DISABLED")},
        **vault_server.env(),
    }
    made = openstack_stack("dev", tmp_path_factory.mktemp("pipeline"), cloud, cloud_env, edit=small, extra_env=extra, secrets_provider=vault_server.secrets_provider)
    created = next(made)
    try:
        clone(created)
        yield created
    finally:
        for _ in made:  # its teardown: the stack destroyed, the cloud swept
            pass


def clone(stack: Stack) -> None:
    """The team's repository: this project with its stack file and the example pipeline at its root, committed on
    main; the CI/CD variables in gitlab-ci-local's variables file (never committed)."""
    text = PIPELINE.read_text()
    assert text.count(STACKS) == 1
    (stack.project / ".gitlab-ci.yml").write_text(text.replace(STACKS, STACKS.replace("[prod-eu1, prod-eu2, staging]", f"[{stack.name}]")))
    (stack.project / ".gitlab-ci-local-variables.yml").write_text(yaml.safe_dump({key: stack.env[key] for key in CI_VARIABLES}))
    (stack.project / ".gitignore").write_text((stack.project / ".gitignore").read_text() + "/.gitlab-ci-local*\n")
    for command in (["init", "-q", "-b", "main"], ["add", "-A"], ["-c", "user.name=ci", "-c", "user.email=ci@example.com", "commit", "-qm", "the team's clusters"]):
        subprocess.run(["git", *command], cwd=stack.project, check=True, capture_output=True)


def gitlab_ci_local(stack: Stack, source: str, *args: str, timeout: float = 2400) -> subprocess.CompletedProcess:
    """gitlab-ci-local in the clone, as a pipeline of `source` (CI_PIPELINE_SOURCE); the runner's environment is
    the toolchain's (the CLI, PULUMI_HOME with the plugins), without the CI variables: those come from the file."""
    env = {key: value for key, value in stack.env.items() if key not in CI_VARIABLES}
    env["GCL_IGNORE_PREDEFINED_VARS"] = "CI_PIPELINE_SOURCE,CI_PROJECT_ID"
    began = time.monotonic()
    done = subprocess.run(
        [str(toolchain.binary("gitlab-ci-local")), "--no-color", "--variable", f"CI_PIPELINE_SOURCE={source}", *args],
        cwd=stack.project, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
    )
    print(f"gitlab-ci-local {source} {' '.join(args)}: exit {done.returncode} in {time.monotonic() - began:.0f} s")
    return done


def listed(stack: Stack, source: str, *args: str) -> list[str]:
    done = gitlab_ci_local(stack, source, "--list-json", *args)
    assert done.returncode == 0, done.stderr[-2000:]
    return sorted(job["name"] for job in json.loads(done.stdout) if job["when"] != "never")


def test_which_jobs_each_pipeline_runs(stack):
    project = ["--variable", "CI_PROJECT_ID=7"]
    ours = listed(stack, "merge_request_event", *project, "--variable", "CI_MERGE_REQUEST_SOURCE_PROJECT_ID=7")
    assert ours == ["plan: [dev]", "preview: [dev]"]
    # A fork's merge request run in this project: the plan, which needs no secret, and no preview.
    assert listed(stack, "merge_request_event", *project, "--variable", "CI_MERGE_REQUEST_SOURCE_PROJECT_ID=8") == ["plan: [dev]"]
    assert listed(stack, "push") == ["up-yes: [dev]", "up: [dev]"]
    assert listed(stack, "schedule") == ["drift"]


def test_a_merge_request_runs_the_offline_plan_and_the_preview_with_the_guard_rails(stack):
    project = ["--variable", "CI_PROJECT_ID=7", "--variable", "CI_MERGE_REQUEST_SOURCE_PROJECT_ID=7"]
    done = gitlab_ci_local(stack, "merge_request_event", *project)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-6000:]
    assert " PASS  plan: [dev]" in log and " PASS  preview: [dev]" in log, log[-6000:]
    assert (stack.project / "build" / "plan-dev").is_dir()  # the plan's artifact
    preview = [line for line in log.splitlines() if line.startswith("preview: [dev] >")]
    assert any("ocp-guard-rails" in line for line in preview), "\n".join(preview[-80:])
    assert any(line.rstrip().endswith("to create") for line in preview), "\n".join(preview[-40:])
    assert stack.state() == []  # a preview makes nothing


def test_the_default_branch_runs_ocp_up_then_a_rule_deleted_by_hand_fails_the_scheduled_drift_job(stack):
    done = gitlab_ci_local(stack, "push")
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-6000:]
    assert " PASS  up: [dev]" in log and "up-yes: [dev] starting" not in log, log[-4000:]  # the manual one waits for a person
    infra = infra_id(stack)
    servers = [r for r in stack.state() if r["type"] == "openstack:compute/instance:Instance"]
    # The master, the worker and the bootstrap (an up keeps it: the install driver's teardown removes it).
    names = sorted(r["urn"].rsplit("::", 1)[1] for r in servers)
    assert len(names) == 3 and "ocp4-bootstrap-node" in names, names

    rule = sdk(stack.cloud, """
group = tenant.network.find_security_group(f"{infra}-worker")
rule = next(r for r in tenant.network.security_group_rules(security_group_id=group.id) if r.port_range_min == 10250)
tenant.network.delete_security_group_rule(rule)
result = rule.id
""", infra=infra)  # type: ignore[attr-defined]
    done = gitlab_ci_local(stack, "schedule")
    log = done.stdout + done.stderr
    print(log[-3000:])
    # The job's own verdict, as GitLab shows it. (gitlab-ci-local 4.73.0 exits 0 for a pipeline whose job failed with a
    # code its `allow_failure: exit_codes` does not list, exit 1 here against [2]: seen on this machine; GitLab fails it.)
    lines = [line.split(None, 1) for line in log.splitlines() if line.strip()]
    (finished,) = [rest for first, *rest in lines if first == "drift" and rest and rest[0].startswith("finished in ")]
    assert finished[0].split()[-2:] == ["FAIL", "1"] and "\n FAIL  drift" in log, log[-4000:]
    report = json.loads((stack.project / "status.json").read_text())
    assert (report["schema"], report["exitCode"]) == ("ocp-status-all/1", 1), report
    (dev,) = report["stacks"]
    assert (dev["stack"], dev["verdict"]) == ("dev", "drift"), dev
    (gone,) = [c for c in dev["drift"]["changes"] if c["type"] == "openstack:networking/secGroupRule:SecGroupRule"]
    assert (gone["op"], gone["id"]) == ("gone", rule) and "python -m ocp up --stack dev` makes it again" in gone["run"], gone
    # What a person reads in the job's log: the stack, its verdict and exit code, and the rule gone.
    (said,) = [rest[0] for first, *rest in lines if first == "drift" and rest and rest[0].startswith("> [1/1 ")]
    assert "dev: drift (exit 1)" in said and "(openstack:networking/secGroupRule:SecGroupRule) gone from the cloud" in said, said
