"""The benchmark's report of its disk (bench/disk.py) and ``--tmp`` (bench/run.py): which file system
the temporary folder is on, whether an ext4 has a journal, and the disk probes printed with the
results. Made-up mount tables and /sys trees; no figure is asserted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench import run
from bench.disk import Mount, describe, ext4_journal, mount_of, parse_mountinfo, probe

MOUNTINFO = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw,size=12334492k
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=100k
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
30 25 0:27 / /dev/shm rw,nosuid - tmpfs shm2 rw,size=200k
31 27 8:1 / /mnt/with\\040space rw shared:5 - xfs /dev/sda1 rw,noquota
not a mountinfo line
"""


def test_parse_mountinfo_reads_points_types_and_both_options() -> None:
    mounts = parse_mountinfo(MOUNTINFO)
    assert len(mounts) == 6  # the line of another shape is skipped
    assert mounts[3] == Mount("/", "254:0", "ext4", "/dev/vda", "rw,relatime", "rw,discard")
    # escapes undone, optional fields ("shared:5") before the separator skipped
    assert mounts[5] == Mount("/mnt/with space", "8:1", "xfs", "/dev/sda1", "rw", "rw,noquota")


@pytest.mark.parametrize(
    ("path", "source"),
    [
        pytest.param("/tmp/x", "/dev/vda", id="root"),
        pytest.param("/", "/dev/vda", id="root-itself"),
        pytest.param("/dev/shm/bench", "shm2", id="the-later-of-two-mounts-on-one-point"),
        pytest.param("/dev/shmother", "devtmpfs", id="a-name-prefix-is-no-parent"),
        pytest.param("/mnt/with space/a", "/dev/sda1", id="escaped-point"),
    ],
)
def test_mount_of_is_the_longest_point_above_the_path(path: str, source: str) -> None:
    found = mount_of(path, parse_mountinfo(MOUNTINFO))
    assert found is not None and found.source == source


def _sys(tmp_path: Path, journal_task: str | None) -> Path:
    sys_root = tmp_path / "sys"
    (sys_root / "dev" / "block").mkdir(parents=True)
    (sys_root / "devices" / "vda").mkdir(parents=True)
    os.symlink("../../devices/vda", sys_root / "dev" / "block" / "254:0")
    if journal_task is not None:
        (sys_root / "fs" / "ext4" / "vda").mkdir(parents=True)
        (sys_root / "fs" / "ext4" / "vda" / "journal_task").write_text(journal_task + "\n")
    return sys_root


@pytest.mark.parametrize(
    ("journal_task", "jbd2", "expected"),
    [
        pytest.param("<none>", None, "no journal", id="journal-task-none"),
        pytest.param("812", None, "journal", id="journal-task-pid"),
        pytest.param(None, ["vda-8"], "journal", id="jbd2-entry"),
        pytest.param(None, ["vdb-8"], "journal unknown", id="jbd2-without-ours"),
        pytest.param(None, None, "journal unknown", id="nothing-readable"),
    ],
)
def test_ext4_journal_is_read_without_root_tools(
    tmp_path: Path, journal_task: str | None, jbd2: list[str] | None, expected: str
) -> None:
    proc_root = tmp_path / "proc"
    if jbd2 is not None:
        for entry in jbd2:
            (proc_root / "fs" / "jbd2" / entry).mkdir(parents=True)
    assert ext4_journal("254:0", _sys(tmp_path, journal_task), proc_root) == expected


def test_ext4_journal_of_an_unknown_device(tmp_path: Path) -> None:
    assert ext4_journal("9:9", _sys(tmp_path, "<none>"), tmp_path / "proc") == "journal unknown"


def test_describe_names_type_source_and_options(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text(MOUNTINFO)
    assert describe(Path("/dev/shm"), info) == "tmpfs (shm2 on /dev/shm; mount rw,nosuid; super rw,size=200k)"
    assert describe(tmp_path, tmp_path / "missing").startswith("file system unknown")


def test_probe_leaves_nothing_behind(tmp_path: Path) -> None:
    found = probe(tmp_path, "start", files=20)
    assert (found.when, found.files) == ("start", 20)
    assert found.create_us >= 0 and found.remove_us >= 0
    assert list(tmp_path.iterdir()) == []
    assert found.line().startswith("disk probe, start: 20 empty files, create ")


def test_a_probe_that_fails_halfway_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A disk that fills up (or any error) after some files were made: the error goes on to the
    caller, the files made and the probe's folder do not stay behind."""
    real_open, opened = os.open, []

    def failing_open(path: str, flags: int, mode: int = 0o777, **kwargs: int) -> int:
        if flags & os.O_CREAT:
            if len(opened) == 3:
                raise OSError(28, "No space left on device", path)
            opened.append(path)
        return real_open(path, flags, mode, **kwargs)

    monkeypatch.setattr(os, "open", failing_open)
    with pytest.raises(OSError, match="No space left"):
        probe(tmp_path, "start", files=10)
    monkeypatch.undo()
    assert len(opened) == 3
    assert list(tmp_path.iterdir()) == []


def test_tmp_must_be_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        run._parser().parse_args(["--tmp", str(tmp_path / "missing")])
    assert "is not a folder: name an existing one" in capsys.readouterr().err
    assert run._parser().parse_args(["--tmp", str(tmp_path)]).tmp == tmp_path


def test_run_on_tmp_prints_its_file_system_and_probes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TMPDIR", os.environ.get("TMPDIR", "/tmp"))  # main() sets it: restored after
    monkeypatch.setattr(run, "_remove", lambda root: None)
    monkeypatch.setattr(run, "probe", lambda root, when: probe(root, when, files=5))
    run.main(["--only", "formula", "--repeat", "1", "--tmp", str(tmp_path)])
    out = capsys.readouterr().out
    (root,) = tmp_path.iterdir()  # the run's folder, under --tmp
    assert f"temporary folder: {root} on " in out
    assert os.environ["TMPDIR"] == str(tmp_path)
    final = out.rsplit("| formula |", 1)[1]  # the probes are printed again with the results
    assert final.count("disk probe, start: 5 empty files") == 1
    assert final.count("disk probe, end: 5 empty files") == 1
    assert "before" not in final  # only overhead, workspace and peers get one before them
