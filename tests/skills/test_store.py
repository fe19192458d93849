"""Installing skills: archives that try to escape, pinned hashes, re-approval, and the CLI."""

from __future__ import annotations

import io
import os
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from typer.testing import CliRunner

from bot.cli.skill_cmd import app
from bot.config import SkillSettings
from bot.skills.tools import load_skill_tools
from skills_runtime.manifest import ManifestError, parse_manifest
from skills_runtime.store import SkillChanged, SkillError, SkillStore
from skills_runtime.tree import MAX_FILE_BYTES, TreeError, extract_archive, tree_hash
from tests.skills.conftest import EXAMPLES, HOSTILE, install

GAS = EXAMPLES / "gas_tracker"
MANIFEST = (GAS / "SKILL.md").read_text()


def tar_with(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for info, data in members:
            info.size = len(data) if info.isfile() else 0
            tf.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return path


def good_members() -> list[tuple[tarfile.TarInfo, bytes]]:
    return [
        (tarfile.TarInfo("gas/SKILL.md"), MANIFEST.encode()),
        (tarfile.TarInfo("gas/main.py"), (GAS / "main.py").read_bytes()),
    ]


def test_a_tar_archive_installs_and_pins_the_same_hash_as_the_folder(home, tmp_path):
    archive = tar_with(
        tmp_path / "gas.tar.gz",
        [
            (tarfile.TarInfo("SKILL.md"), MANIFEST.encode()),
            (tarfile.TarInfo("main.py"), (GAS / "main.py").read_bytes()),
        ],
    )
    store = SkillStore(home)
    prepared = store.prepare(archive)
    assert prepared.tree_hash == tree_hash(GAS)
    skill = store.install(prepared)
    assert store.load("gas_tracker").tree_hash == skill.tree_hash
    assert not [p for p in (home / "skills").iterdir() if p.name.startswith(".incoming")]


@pytest.mark.parametrize(
    "name", ["../evil.py", "/etc/cron.d/evil", "a/../../evil.py", "C:/evil.py", "..\\evil.py"]
)
def test_zip_slip_names_are_refused(tmp_path, name):
    archive = tmp_path / "slip.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("SKILL.md", MANIFEST)
        zf.writestr(name, "print('pwned')")
    with pytest.raises(TreeError):
        extract_archive(archive, tmp_path / "out")
    assert not (tmp_path / "evil.py").exists()


@pytest.mark.parametrize("kind", [tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.FIFOTYPE])
def test_links_and_devices_in_a_tar_are_refused(tmp_path, kind):
    info = tarfile.TarInfo("main.py")
    info.type = kind
    info.linkname = "/root/.owliabot/secrets/signer.token"
    archive = tar_with(
        tmp_path / "bad.tar.gz", [(tarfile.TarInfo("SKILL.md"), MANIFEST.encode()), (info, b"")]
    )
    with pytest.raises(TreeError, match="links and special files"):
        extract_archive(archive, tmp_path / "out")


def test_symlinks_in_a_zip_and_in_a_folder_are_refused(tmp_path):
    archive = tmp_path / "link.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        info = zipfile.ZipInfo("main.py")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(TreeError):
        extract_archive(archive, tmp_path / "out")
    folder = tmp_path / "linked"
    shutil.copytree(GAS, folder)
    os.symlink("/etc/passwd", folder / "data.txt")
    with pytest.raises(TreeError, match="symlinks"):
        SkillStore(tmp_path / "home").prepare(folder)


def test_oversized_members_are_refused_even_when_the_header_lies(tmp_path):
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("SKILL.md", MANIFEST)
        zf.writestr("blob.bin", b"\0" * (MAX_FILE_BYTES + 10))
    with pytest.raises(TreeError, match="larger than"):
        extract_archive(archive, tmp_path / "out")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(alphabet="ab./\\:", min_size=1, max_size=12), min_size=1, max_size=4, unique=True))
def test_any_member_name_lands_inside_the_target_or_is_refused(tmp_path_factory, names):
    root = tmp_path_factory.mktemp("prop")
    archive = root / "a.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for name in names:
            zf.writestr(name, "x")
    target = root / "sandbox" / "out"
    target.parent.mkdir()
    try:
        extract_archive(archive, target)
    except TreeError:
        pass
    written = [p for p in root.rglob("*") if p.is_file() and p != archive]
    assert all(target in p.parents for p in written), written


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, 40), min_size=1, max_size=8))
def test_tree_size_limits_hold_for_any_set_of_files(tmp_path_factory, monkeypatch, sizes):
    from skills_runtime import tree

    monkeypatch.setattr(tree, "MAX_FILE_BYTES", 25)
    monkeypatch.setattr(tree, "MAX_TREE_BYTES", 100)
    monkeypatch.setattr(tree, "MAX_FILES", 5)
    root = tmp_path_factory.mktemp("sizes")
    (root / "src").mkdir()
    for i, size in enumerate(sizes):
        (root / "src" / f"f{i}.txt").write_bytes(b"x" * size)
    fits = max(sizes) <= 25 and sum(sizes) <= 100 and len(sizes) <= 5
    try:
        tree.copy_tree(root / "src", root / "dst")
        copied = True
    except TreeError:
        copied = False
    assert copied == fits, sizes


def test_a_changed_skill_is_refused_until_approved_again(home, tmp_path):
    install(home, GAS)
    store = SkillStore(home)
    main = home / "skills" / "gas_tracker" / "main.py"
    main.write_text(main.read_text() + "\nimport os  # now it does something else\n")
    with pytest.raises(SkillChanged, match="files changed"):
        store.load("gas_tracker")
    assert load_skill_tools(home, SkillSettings(), None).tools == []
    _, digest = store.current("gas_tracker")
    store.approve("gas_tracker", digest)
    assert store.load("gas_tracker").tree_hash == digest


def test_approval_is_bound_to_the_hash_the_user_saw(home):
    install(home, GAS)
    store = SkillStore(home)
    (home / "skills" / "gas_tracker" / "extra.py").write_text("x = 1\n")
    _, shown = store.current("gas_tracker")
    (home / "skills" / "gas_tracker" / "extra.py").write_text("x = 2\n")
    with pytest.raises(SkillChanged, match="changed again"):
        store.approve("gas_tracker", shown)


def test_widened_permissions_need_approval_even_with_the_same_code(home):
    install(home, GAS)
    store = SkillStore(home)
    path = home / "skills" / "gas_tracker" / "SKILL.md"
    path.write_text(path.read_text().replace("network: []", "network: [evil.example]"))
    with pytest.raises(SkillChanged):
        store.load("gas_tracker")


@pytest.mark.parametrize(
    "change, problem",
    [
        ("name: gas_tracker", "name: ../gas"),
        ("entrypoint: main.py", "entrypoint: ../../usr/lib/x.py"),
        ("network: []", "network: ['http://evil.example:8080/x']"),
        ("network: []", "network: ['*']"),
        ("level: read", "level: admin"),
        ("type: integer", "type: number"),
        ("maximum: 30000000", "maximum: 30000000\n          format: evil"),
    ],
)
def test_manifests_outside_the_supported_contract_are_refused(change, problem):
    with pytest.raises(ManifestError):
        parse_manifest(MANIFEST.replace(change, problem, 1))


def cli(home: Path, *args: str, input: str | None = None):
    return CliRunner().invoke(app, list(args), input=input, env={"OWLIA_HOME": str(home)})


def test_cli_install_shows_permissions_and_needs_confirmation(home):
    declined = cli(home, "install", str(HOSTILE / "evil"), input="n\n")
    assert declined.exit_code == 1 and "network: api.allowed.test" in declined.output
    assert "skill_evil_read_secrets [read]" in declined.output
    assert SkillStore(home).entries() == {}
    accepted = cli(home, "install", str(HOSTILE / "spender"), input="y\n")
    assert accepted.exit_code == 0, accepted.output
    assert (
        "signing: may ask the signer" in accepted.output and "installed spender (enabled)" in accepted.output
    )


def test_cli_list_info_disable_enable_approve_remove(home):
    assert cli(home, "install", str(GAS), "--yes").exit_code == 0
    assert '"state": "ok"' in cli(home, "list").output
    assert cli(home, "disable", "gas_tracker").exit_code == 0
    assert SkillStore(home).enabled() == []
    assert cli(home, "enable", "gas_tracker").exit_code == 0
    (home / "skills" / "gas_tracker" / "main.py").write_text("print('changed')\n")
    assert "CHANGED since approval" in cli(home, "info", "gas_tracker").output
    assert "refused" in cli(home, "list").output
    assert cli(home, "approve", "gas_tracker", input="n\n").exit_code == 1
    assert cli(home, "approve", "gas_tracker", "--yes").exit_code == 0
    assert '"state": "ok"' in cli(home, "list").output
    assert cli(home, "remove", "gas_tracker", "--yes").exit_code == 0
    assert not (home / "skills" / "gas_tracker").exists()
    missing = cli(home, "info", "gas_tracker")
    assert missing.exit_code == 1 and "no skill named" in missing.output


@pytest.mark.parametrize("body", ["{not json", "[]", '{"version": 1, "skills": ["gas"]}'])
def test_a_broken_registry_refuses_every_skill_with_a_clear_error(home, body):
    """Hand-edited or truncated: no skill loads and the CLI says which file, never a traceback."""
    assert cli(home, "install", str(GAS), "--yes").exit_code == 0
    (home / "skills" / "registry.json").write_text(body)
    done = cli(home, "list")
    assert done.exit_code == 1 and "registry.json is corrupt; refusing to load any skill" in done.output
    assert done.exception is None or isinstance(done.exception, SystemExit)
    with pytest.raises(SkillError, match="corrupt"):
        SkillStore(home).enabled()
