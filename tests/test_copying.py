"""Tests for pytest_vibeeval.workspace.copying on the real filesystem, through ``cp`` and the Python walk."""

from __future__ import annotations

import os
import pickle
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import write

from pytest_vibeeval.workspace import copying
from pytest_vibeeval.workspace.copying import CopyError, copy_template, copy_tree, remove_tree

Copy = Callable[..., None]


@pytest.fixture(params=["cp", "python"])
def copy(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Copy:
    """``copy_tree`` through GNU cp, or through the Python walk (the probe says there is no cp)."""
    if request.param == "cp":
        if copying._gnu_cp() is None:
            pytest.skip("GNU cp is not available")
    else:
        monkeypatch.setattr(copying, "_gnu_cp", lambda: None)
    return copy_tree


def snapshot(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry under ``root`` by relative path: kind, mode, mtime and content or link target."""
    entries: dict[str, tuple[Any, ...]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        name = path.relative_to(root).as_posix()
        if stat.S_ISLNK(info.st_mode):
            entries[name] = ("link", os.readlink(path))
        elif stat.S_ISDIR(info.st_mode):
            entries[name] = ("dir", stat.S_IMODE(info.st_mode), info.st_mtime_ns)
        else:
            entries[name] = ("file", stat.S_IMODE(info.st_mode), info.st_mtime_ns, path.read_bytes())
    return entries


def template(root: Path) -> Path:
    """A small template: nested folders, modes, empty and binary files, an empty folder, and
    relative, absolute, dangling and directory symlinks."""
    write(root / "README.md", "# project\n")
    write(root / "src" / "pkg" / "__init__.py", "")
    write(root / "src" / "pkg" / "mod.py", "x = 1\n")
    (root / "bin").mkdir()
    (root / "bin" / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "bin" / "run.sh").chmod(0o755)
    (root / "secret.txt").write_text("s")
    (root / "secret.txt").chmod(0o600)
    (root / "readonly.txt").write_text("r")
    (root / "readonly.txt").chmod(0o444)
    (root / "data.bin").write_bytes(bytes(range(256)) * 400)
    (root / "empty").mkdir()
    (root / "private").mkdir(mode=0o700)
    (root / "private").chmod(0o750)
    (root / "link-relative").symlink_to("src/pkg/mod.py")
    (root / "link-absolute").symlink_to(root / "README.md")
    (root / "link-dangling").symlink_to("does/not/exist")
    (root / "link-dir").symlink_to("src")
    (root / "src" / "pkg" / "up").symlink_to("../../README.md")
    return root


def test_copies_contents_modes_and_times(tmp_path: Path, copy: Copy) -> None:
    source = template(tmp_path / "source")
    copy(source, tmp_path / "target")
    assert snapshot(tmp_path / "target") == snapshot(source)
    assert len(snapshot(source)) == 17


def test_symlinks_stay_symlinks(tmp_path: Path, copy: Copy) -> None:
    source = template(tmp_path / "source")
    target = tmp_path / "target"
    copy(source, target)
    for name, pointee in [
        ("link-relative", "src/pkg/mod.py"),
        ("link-absolute", str(source / "README.md")),
        ("link-dangling", "does/not/exist"),
        ("link-dir", "src"),
        ("src/pkg/up", "../../README.md"),
    ]:
        assert (target / name).is_symlink(), name
        assert os.readlink(target / name) == pointee
    assert not (target / "link-dangling").exists()
    # A symlink to a folder is not followed: nothing was copied through it.
    assert not (target / "link-dir").resolve().is_relative_to(source)


def test_copies_are_not_hardlinks_and_the_source_is_only_read(tmp_path: Path, copy: Copy) -> None:
    source = template(tmp_path / "source")
    before = snapshot(source)
    target = tmp_path / "target"
    copy(source, target)
    for name in ["README.md", "src/pkg/mod.py", "data.bin", "bin/run.sh"]:
        original, copied = (source / name).stat(), (target / name).stat()
        assert (original.st_dev, original.st_ino) != (copied.st_dev, copied.st_ino), name
        assert original.st_nlink == 1
        assert copied.st_nlink == 1
    (target / "README.md").write_text("changed by the agent\n")
    with (target / "data.bin").open("r+b") as handle:
        handle.write(b"overwritten")
    (target / "readonly.txt").chmod(0o644)
    (target / "readonly.txt").write_text("changed")
    assert snapshot(source) == before


def test_merges_into_an_existing_target(tmp_path: Path, copy: Copy) -> None:
    source = tmp_path / "source"
    write(source / "same.txt", "new\n")
    write(source / "sub" / "deep.txt", "new deep\n")
    write(source / "was-a-link.txt", "new\n")
    write(source / "was-dangling.txt", "new\n")
    (source / "becomes-link").symlink_to("same.txt")
    (source / "link").symlink_to("sub")
    target = tmp_path / "target"
    write(target / "same.txt", "old\n")
    write(target / "only-in-target.txt", "kept\n")
    write(target / "sub" / "only-in-target.txt", "kept too\n")
    write(target / "sub" / "deep.txt", "old deep\n")
    (target / "sub" / "deep.txt").chmod(0o444)
    outside = write(tmp_path / "outside.txt", "outside\n")
    (target / "was-a-link.txt").symlink_to(outside)
    (target / "was-dangling.txt").symlink_to("nowhere")
    write(target / "becomes-link", "old file\n")
    (target / "link").symlink_to("elsewhere")

    copy(source, target)

    assert (target / "same.txt").read_text() == "new\n"
    assert (target / "only-in-target.txt").read_text() == "kept\n"
    assert (target / "sub" / "only-in-target.txt").read_text() == "kept too\n"
    assert (target / "sub" / "deep.txt").read_text() == "new deep\n"
    # A symlink in the target is replaced, not written through.
    assert not (target / "was-a-link.txt").is_symlink()
    assert (target / "was-a-link.txt").read_text() == "new\n"
    assert outside.read_text() == "outside\n"
    assert (target / "was-dangling.txt").read_text() == "new\n"
    assert os.readlink(target / "becomes-link") == "same.txt"
    assert os.readlink(target / "link") == "sub"


def test_copying_twice_gives_the_same_tree(tmp_path: Path, copy: Copy) -> None:
    source = template(tmp_path / "source")
    copy(source, tmp_path / "target")
    copy(source, tmp_path / "target")
    assert snapshot(tmp_path / "target") == snapshot(source)


@pytest.mark.parametrize("conflict", ["dir-over-file", "file-over-dir", "dir-over-link-to-dir"])
def test_a_folder_and_a_file_never_replace_each_other(tmp_path: Path, copy: Copy, conflict: str) -> None:
    source, target = tmp_path / "source", tmp_path / "target"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if conflict == "dir-over-file":
        write(source / "x" / "inner.txt", "inner\n")
        write(target / "x", "a file\n")
    elif conflict == "file-over-dir":
        write(source / "x", "a file\n")
        write(target / "x" / "inner.txt", "inner\n")
    else:
        write(source / "x" / "inner.txt", "inner\n")
        target.mkdir()
        (target / "x").symlink_to(elsewhere)
    with pytest.raises(CopyError) as raised:
        copy(source, target)
    message = str(raised.value)
    assert str(source) in message
    assert str(target) in message
    assert "overwrite" in message
    assert list(elsewhere.iterdir()) == []


def test_creates_the_target_and_its_parents(tmp_path: Path, copy: Copy) -> None:
    source = tmp_path / "source"
    write(source / "a.txt", "a\n")
    target = tmp_path / "x" / "y" / "target"
    copy(source, target)
    assert (target / "a.txt").read_text() == "a\n"


def test_an_empty_source_gives_an_empty_target(tmp_path: Path, copy: Copy) -> None:
    (tmp_path / "source").mkdir()
    copy(tmp_path / "source", tmp_path / "target")
    assert list((tmp_path / "target").iterdir()) == []


def test_names_with_spaces_and_leading_dashes(
    tmp_path: Path, copy: Copy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    source = Path("-r my template")
    write(source / "--help" / "-f file.txt", "content\n")
    copy(source, Path("-T target dir"))
    assert (tmp_path / "-T target dir" / "--help" / "-f file.txt").read_text() == "content\n"


IGNORED_TREE = [
    "keep.py",
    "node_modules/pkg/index.js",
    "src/node_modules/dep.js",
    "src/node_modules_not/kept.js",
    "src/app/__pycache__/app.cpython-311.pyc",
    "src/app/app.py",
    "src/app/stale.pyc",
    ".git/HEAD",
    "lib/.git",
]


@pytest.mark.parametrize("use_cp", [True, False], ids=["cp-available", "cp-unavailable"])
def test_ignore_skips_matching_names_at_any_depth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, use_cp: bool
) -> None:
    if not use_cp:
        monkeypatch.setattr(copying, "_gnu_cp", lambda: None)
    source = tmp_path / "source"
    for name in IGNORED_TREE:
        write(source / name, name)
    target = tmp_path / "target"
    copy_tree(source, target, ignore=["node_modules", ".git", "__pycache__", "*.pyc"])
    copied = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert copied == ["keep.py", "src/app/app.py", "src/node_modules_not/kept.js"]
    assert not (target / "node_modules").exists()


def test_a_single_string_is_one_pattern(tmp_path: Path) -> None:
    source = tmp_path / "source"
    for name in IGNORED_TREE:
        write(source / name, name)
    copy_tree(source, tmp_path / "target", ignore="node_modules")
    assert not (tmp_path / "target" / "node_modules").exists()
    assert (tmp_path / "target" / ".git" / "HEAD").exists()


def test_nothing_is_ignored_by_default(tmp_path: Path, copy: Copy) -> None:
    source = tmp_path / "source"
    for name in IGNORED_TREE:
        write(source / name, name)
    copy(source, tmp_path / "target")
    assert snapshot(tmp_path / "target") == snapshot(source)


def test_the_python_walk_called_directly(tmp_path: Path) -> None:
    source = template(tmp_path / "source")
    copying._copy_tree_python(source, tmp_path / "new" / "target")
    assert snapshot(tmp_path / "new" / "target") == snapshot(source)


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_missing_source_is_a_clear_error(tmp_path: Path, copy: Copy, kind: str) -> None:
    source = tmp_path / "no such template"
    if kind == "file":
        source.write_text("not a folder\n")
    target = tmp_path / "target"
    with pytest.raises(CopyError) as raised:
        copy(source, target)
    error = raised.value
    assert isinstance(error, OSError)
    assert error.source == str(source)
    assert error.target == str(target)
    reason = "No such file or directory" if kind == "missing" else "not a directory"
    assert str(error) == f"cannot copy {source} to {target}: " + (
        f"cannot read the source: {reason}" if kind == "missing" else f"the source is {reason}"
    )
    assert not target.exists()


@pytest.mark.parametrize("inside", [".", "sub", "sub/deeper"])
def test_a_target_in_the_source_is_a_clear_error(tmp_path: Path, copy: Copy, inside: str) -> None:
    source = tmp_path / "source"
    write(source / "sub" / "a.txt", "a\n")
    before = snapshot(source)
    with pytest.raises(CopyError, match="the target is the source or inside it"):
        copy(source, source / inside)
    assert snapshot(source) == before


def test_a_sibling_sharing_the_name_s_start_is_not_inside(tmp_path: Path, copy: Copy) -> None:
    write(tmp_path / "source" / "a.txt", "a\n")
    copy(tmp_path / "source", tmp_path / "source-copy")
    assert (tmp_path / "source-copy" / "a.txt").read_text() == "a\n"


def test_a_target_that_cannot_be_created_is_a_clear_error(tmp_path: Path, copy: Copy) -> None:
    (tmp_path / "source").mkdir()
    write(tmp_path / "file", "in the way\n")
    with pytest.raises(CopyError, match="cannot create the target"):
        copy(tmp_path / "source", tmp_path / "file" / "target")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_an_unreadable_file_is_a_clear_error(tmp_path: Path, copy: Copy) -> None:
    source = tmp_path / "source"
    secret = write(source / "secret.txt", "s")
    secret.chmod(0)
    try:
        with pytest.raises(CopyError, match=r"secret\.txt") as raised:
            copy(source, tmp_path / "target")
    finally:
        secret.chmod(0o600)
    assert "Permission denied" in str(raised.value)


def test_cp_failures_are_copy_errors_with_cp_s_message_trimmed(tmp_path: Path) -> None:
    if copying._gnu_cp() is None:
        pytest.skip("GNU cp is not available")
    source, target = tmp_path / "source", tmp_path / "target"
    for i in range(12):
        write(source / f"d{i:02}" / "inner.txt", "inner\n")
        write(target / f"d{i:02}", "a file in the way\n")
    with pytest.raises(CopyError) as raised:
        copy_tree(source, target)
    assert raised.value.__cause__ is None
    lines = str(raised.value).splitlines()
    assert lines[0].startswith(f"cannot copy {source} to {target}: ")
    assert len(lines) == copying.MAX_ERROR_LINES + 1
    assert lines[-1] == f"… and {12 - copying.MAX_ERROR_LINES} more lines"


def test_summary_of_silent_and_long_complaints() -> None:
    assert copying._summary("", 3) == "cp exited with status 3"
    long = copying._summary("x" * 5000 + ": File name too long", 1)  # a path near PATH_MAX, then why
    assert len(long) == copying.MAX_LINE_CHARS + 1 and long.endswith("x: File name too long")
    lines = copying._summary("\n".join(["y" * 5000] * copying.MAX_ERROR_LINES), 1)
    assert len(lines) == copying.MAX_ERROR_CHARS + 1


def test_copy_errors_pickle() -> None:
    error = CopyError("a", "b", "why")
    restored = pickle.loads(pickle.dumps(error))
    assert (restored.source, restored.target, restored.reason) == ("a", "b", "why")
    assert str(restored) == str(error) == "cannot copy a to b: why"


def test_the_probe_wants_gnu_cp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    probe = copying._gnu_cp.__wrapped__
    monkeypatch.setenv("PATH", str(tmp_path))
    assert probe() is None  # no cp at all
    fake = write(tmp_path / "cp", "#!/bin/sh\necho 'cp (not GNU) 1.0'\n")
    fake.chmod(0o755)
    assert probe() is None
    fake.write_text("#!/bin/sh\necho 'cp: unknown option --reflink=auto' >&2\nexit 1\n")
    assert probe() is None
    fake.write_text("#!/bin/sh\necho 'cp (GNU coreutils) 9.9'\n")
    assert probe() == str(fake)


def test_the_probe_runs_once() -> None:
    assert copying._gnu_cp() is copying._gnu_cp()
    assert copying._gnu_cp.cache_info().hits >= 1


def test_copy_template_repoints_absolute_links_into_the_template(tmp_path: Path) -> None:
    template = tmp_path / "template"
    (template / "pkg").mkdir(parents=True)
    (template / "calc.py").write_text("original\n")
    (template / "pkg" / "abs_calc.py").symlink_to(template / "calc.py")
    (template / "abs_pkg").symlink_to(template / "pkg", target_is_directory=True)
    (template / "outside").symlink_to("/etc/hostname")
    target = tmp_path / "copy"
    copy_template(template, target)
    assert os.readlink(target / "pkg" / "abs_calc.py") == "../calc.py"
    assert os.readlink(target / "abs_pkg") == "pkg"
    assert os.readlink(target / "outside") == "/etc/hostname"  # not into the template: kept
    (target / "pkg" / "abs_calc.py").write_text("changed through the link\n")
    assert (template / "calc.py").read_text() == "original\n"
    assert (target / "calc.py").read_text() == "changed through the link\n"


def test_remove_tree_opens_locked_folders_and_ignores_missing_paths(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "locked" / "deep").mkdir(parents=True)
    (tree / "locked" / "deep" / "f").write_text("x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (tree / "link").symlink_to(outside, target_is_directory=True)
    os.chmod(tree / "locked" / "deep", 0)
    os.chmod(tree / "locked", 0o500)
    remove_tree(tree)
    assert not tree.exists()
    assert outside.is_dir() and stat.S_IMODE(outside.stat().st_mode) == 0o755  # links not followed
    remove_tree(tree)  # already gone: fine
