"""Where `python -m ocp install` writes the cluster's admin kubeconfig and kubeadmin password (auth/ in the
installer's directory) and the offline plan its node files (ocp/private_files.py): a directory others may write or
own is refused before anything is made, naming the key; no link on the way is followed; a file is replaced whole,
the owner's alone from its first byte. The installer's run script holds its directory to the same rule
(tests/cluster/test_installer.py)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest

from ocp.__main__ import main
from tests.ocp.test_driver import OUTPUTS, FakeStack, installing  # noqa: F401 - the fixture


@pytest.fixture
def shared(installing, tmp_path):  # noqa: F811 - the fixture above
    """An install whose ocp:installer.dir is tmp_path/shared/dev, someone else's file tmp_path/stolen beside it; its
    bootstrap never hands over, so it stops right after it wrote the credentials (this test's concern)."""
    directory = tmp_path / "shared" / "dev"
    stack = FakeStack([], OUTPUTS)
    installing(stack, {"wait-for": False}, installer=SimpleNamespace(binary="openshift-install", assets_dir=None, dir=str(directory), oc="oc"))
    (tmp_path / "stolen").write_text("theirs\n")
    return stack, directory, tmp_path / "stolen"


def planted(directory: Path, stolen: Path) -> Path:
    """auth/kubeconfig a link to a file of someone else's, as whoever can write the directory would leave it."""
    (directory / "auth").mkdir(parents=True, exist_ok=True)
    (directory / "auth" / "kubeconfig").symlink_to(stolen)
    return directory / "auth" / "kubeconfig"


def test_an_installer_directory_in_a_shared_path_stops_the_install_before_anything(shared, capsys):
    stack, directory, stolen = shared
    planted(directory, stolen)
    directory.chmod(0o777)
    assert main(["install", "--stack", "kvm"]) == 1
    assert stack.asked == [] and stolen.read_text() == "theirs\n"
    assert capsys.readouterr().err == (
        f"stopped: ocp:installer.dir: {directory} is writable by its group and everyone (mode 777): they could replace the "
        f"cluster's secrets written there with links of their own. `chmod 700 {directory}`, or name a directory of your own\n"
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="a directory of another user's is made here as root")
def test_an_installer_directory_of_another_users_stops_the_install_before_anything(shared, capsys):
    stack, directory, stolen = shared
    planted(directory, stolen)
    os.chown(directory, 65534, 65534)
    assert main(["install", "--stack", "kvm"]) == 1
    assert stack.asked == [] and stolen.read_text() == "theirs\n"
    assert capsys.readouterr().err.startswith(f"stopped: ocp:installer.dir: {directory} belongs to nobody (uid 65534), not to you (root (uid 0)): ")


def test_a_link_planted_where_the_kubeconfig_goes_is_replaced_never_followed(shared, capsys):
    stack, directory, stolen = shared
    kubeconfig = planted(directory, stolen)
    directory.chmod(0o755)  # the user's own, readable: narrowed, as the run script makes it
    assert main(["install", "--stack", "kvm"]) == 1
    assert capsys.readouterr().err == "stopped: the bootstrap did not complete\n"
    assert stolen.read_text() == "theirs\n"
    assert not kubeconfig.is_symlink() and kubeconfig.read_text() == OUTPUTS["kubeconfig"]
    assert [stat.S_IMODE(path.stat().st_mode) for path in (directory, directory / "auth", kubeconfig)] == [0o700, 0o700, 0o600]
    assert sorted(path.name for path in (directory / "auth").iterdir()) == ["kubeadmin-password", "kubeconfig"]  # no part file left


def test_an_auth_directory_that_is_a_link_stops_the_install_naming_it(shared, capsys):
    stack, directory, stolen = shared
    elsewhere = stolen.parent / "elsewhere"
    elsewhere.mkdir()
    directory.mkdir(parents=True, mode=0o700)
    (directory / "auth").symlink_to(elsewhere)
    assert main(["install", "--stack", "kvm"]) == 1
    assert list(elsewhere.iterdir()) == []
    assert capsys.readouterr().err == (
        f"stopped: ocp:installer.dir: {directory / 'auth'} is a symbolic link (to {elsewhere}), which this program does not follow: "
        "name the directory itself\n"
    )
