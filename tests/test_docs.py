"""The README a new user reads, CONTRIBUTING.md and docs/: short, linked to files that exist, and
telling commands, options and versions the project has. Pulumi.example.yaml, the stack file the
README says to copy, plans as written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from ocp.__main__ import main as ocp_main
from tests.conftest import ROOT
from tools.plan import PLAN_ENTRIES
from tools.plan import main as plan_main

README = ROOT / "README.md"
PAGES = [README, ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
# Drawn by the offline plan and committed; a checkout may not have it before it is generated.
PICTURE = "docs/images/dev-topology.svg"
QUICK_START = [
    "bash .ci/setup && venv/bin/python -m tools.plan --stack dev   # offline plan of the dev stack -> build/plan-dev/",
    "bash .ci/run                                                   # the whole test suite (installs what it needs; root for apt and netns tests)",
]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def section(text: str, heading: str) -> str:
    return text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_is_short():
    assert len(README.read_bytes()) <= 12_500


def test_the_quick_start_keeps_its_two_commands():
    quick = section(README.read_text(), "## Quick start")
    block = quick.split("```sh\n", 1)[1].split("\n```", 1)[0]
    assert block.splitlines() == QUICK_START


def test_no_long_lines():
    """The README wraps every line; elsewhere only a Markdown table row may not (a row cannot wrap)."""
    long = [f"{page.relative_to(ROOT)}:{number}" for page in PAGES for number, line in enumerate(page.read_text().splitlines(), 1)
            if len(line) > 200 and (page == README or not line.startswith("|"))]
    assert long == []


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    lines, inside = [], False
    for line in page.read_text().splitlines():
        inside ^= line.lstrip().startswith("```")
        if not inside and line.startswith("#"):
            lines.append(_slug(line.lstrip("#")))
    return set(lines)


def _links() -> list[tuple[str, str]]:
    return [(str(page.relative_to(ROOT)), target) for page in PAGES for target in LINK.findall(page.read_text())
            if not re.match(r"[a-z]+:", target)]


@pytest.mark.parametrize("page,target", _links(), ids=[f"{page}->{target}" for page, target in _links()])
def test_every_relative_link_resolves(page, target):
    path, _, anchor = target.partition("#")
    file = (ROOT / page).parent / path if path else ROOT / page
    if not file.exists() and file.resolve() == (ROOT / PICTURE).resolve():
        pytest.skip(f"{PICTURE} is drawn by the offline plan and not generated in this checkout yet")
    assert file.exists(), f"{page} links to {target}, which does not exist"
    if anchor:
        assert anchor in _anchors(file), f"{page} links to {target}: no such heading in {file.relative_to(ROOT)}"


def test_the_pages_link_each_other():
    readme = README.read_text()
    for page in PAGES[1:]:
        assert f"({page.relative_to(ROOT)})" in readme, f"the README does not link {page.relative_to(ROOT)}"


def test_the_commands_the_readme_gives_exist(capsys):
    readme = README.read_text()
    given = set(re.findall(r"venv/bin/python -m ocp ([a-z-]+)", readme))
    assert given == {"install", "up", "approve-csrs", "destroy", "status"}
    for command in given:
        with pytest.raises(SystemExit) as usage:  # the stack is required: argparse's usage error
            ocp_main([command])
        assert usage.value.code == 2
    with pytest.raises(SystemExit):
        plan_main(["--help"])
    usage = capsys.readouterr().out
    options = {name for line in re.findall(r"-m tools\.plan ([^`\n]*)", readme) for name in re.findall(r"--[a-z-]+", line)}
    assert options and {name for name in options if name not in usage} == set()
    assert "pulumi preview --diff" in readme and "--secrets-provider" in readme


def test_every_up_the_docs_give_runs_the_policy_pack():
    """A command line the README or docs/ give to run (a shell block's line, or `...` in the text) never
    runs a bare `pulumi up`: `python -m ocp up` previews and updates under the pack (issue 42)."""
    bare = [
        f"{page.name}: {line.strip()}"
        for page in [README, *sorted((ROOT / "docs").glob("*.md"))]
        for line in page.read_text().splitlines()
        if re.search(r"(^\s*|&& |`)pulumi up( |`|$)(?!.*--policy-pack)", line) and re.search(r"pulumi up (--|-y)|^\s*pulumi up|&& pulumi up", line)
    ]
    assert bare == []


def test_the_plugin_versions_are_the_sdks():
    pins = dict(line.split("==") for line in (ROOT / "requirements.txt").read_text().splitlines() if "==" in line)
    given = dict(re.findall(r"pulumi plugin install resource ([a-z]+) ([0-9.]+)", README.read_text()))
    assert given == {name: pins[f"pulumi-{name}"] for name in ("openstack", "command", "libvirt")}
    assert f"Pulumi CLI, {'.'.join(pins['pulumi'].split('.')[:2])} or later" in README.read_text()


def test_the_example_stack_file_plans_as_written(tmp_path, capsys):
    example = ROOT / "Pulumi.example.yaml"
    out = tmp_path / "plan"
    assert plan_main(["--config-file", str(example), "--out", str(out)]) == 0, capsys.readouterr().err
    outputs = json.loads((out / "outputs.json").read_text())
    assert outputs["apiUrl"] == "https://api.ocp4.osd2019.local:6443"
    # Every line a user must change is marked, and the stack file says nothing the dev lab does not.
    keys = [re.match(r"\s*([\w:]+?):(\s|$)", line) for line in example.read_text().splitlines() if "# CHANGE" in line]
    marked = {key.group(1) for key in keys if key}
    assert {"openstack:cloud", "ocp:clusterName", "ocp:baseDomain", "ocp:nameservers", "flavor", "image", "cloud",
            "externalNetwork", "sshAllowedCidr"} <= marked
    assert "ocp:sshKey: ssh-" in example.read_text().split("# CHANGE: your SSH public key", 1)[1]
    config = yaml.safe_load(example.read_text())["config"]
    dev = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    assert set(config) <= set(dev)
    assert "cp Pulumi.example.yaml Pulumi.<stack>.yaml" in README.read_text()
    # The README names every output its steps use (kubeconfig was missing); the floating IPs by
    # what they are, and nodeCreated, which only the CSR approver reads, not at all.
    listed = README.read_text().split("`pulumi stack output` gives ", 1)[1].split(". ", 1)[0]
    named = set(re.findall(r"`(\w+)`", listed))
    assert named == set(outputs) - {"apiFloatingIp", "ingressFloatingIp", "nodeCreated"} and "the floating IPs" in listed


def test_the_licence_is_apache_2_0_whole():
    licence = (ROOT / "LICENSE").read_text()
    assert licence.split()[:5] == ["Apache", "License", "Version", "2.0,", "January"]
    assert "END OF TERMS AND CONDITIONS" in licence and "APPENDIX: How to apply the Apache License" in licence
    assert "[Apache-2.0](LICENSE)" in README.read_text()


def test_the_config_reference_is_a_section_per_group_of_short_rows():
    """Cells ran to 700 characters; each group of keys is now a section of its own, details below its table."""
    reference = (ROOT / "docs/config.md").read_text()
    cells = [cell.strip() for line in reference.splitlines() if line.startswith("|") for cell in line.strip().strip("|").split("|")]
    assert max(len(cell) for cell in cells) <= 120
    sections = re.findall(r"^## (.+)$", reference, re.M)
    assert len(sections) >= 8
    # The contents at the top link every section.
    assert all(f"](#{_slug(title)})" in reference for title in sections)


def test_the_offline_plan_page_names_everything_a_plan_holds():
    page = (ROOT / "docs/offline-plan.md").read_text()
    entries = {re.match(r"\| `([^`/]+)", line).group(1) for line in page.splitlines() if re.match(r"\| `", line)}
    assert entries == set(PLAN_ENTRIES)


def test_day2_replaces_a_dead_master_by_the_urn_the_program_gives_it(tmp_path):
    """docs/day2.md's URNs are those of the masters a plan of the dev and kvm stacks registers,
    and the server is protected, which is why the page unprotects it first."""
    day2 = (ROOT / "docs/day2.md").read_text()
    urn = re.search(r"The URN is `(urn:pulumi:[^`]+)`", day2).group(1)
    libvirt = re.search(r"`(ocp:libvirt:Machine\$libvirt:index/domain:Domain::[^`]+)`", day2).group(1)
    for stack, cluster, shown in (("dev", "ocp4", urn), ("kvm", "kvm4", libvirt)):
        out = tmp_path / stack
        assert plan_main(["--stack", stack, "--out", str(out)]) == 0
        state = {item["urn"]: item for item in json.loads((out / "state.json").read_text())}
        wanted = shown.replace("<stack>", stack).replace("<clusterName>", cluster)
        found = [item for name, item in state.items() if name.endswith(wanted)]
        assert len(found) == 1, f"{wanted} is not in the {stack} plan"
        if stack == "dev":
            assert found[0]["protect"] is True
            assert f"{wanted}-root-volume" not in state  # dev has no zones: Nova makes its root volume
        else:
            assert state[found[0]["urn"].replace("$libvirt:index/domain:Domain::", "$libvirt:index/volume:Volume::").replace("-domain", "-disk")]["protect"] is True
