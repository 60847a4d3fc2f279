"""``mask_file`` rewrites a kept copy of a prompt with its secrets masked, and only that copy: what
an agent left in its place (a symlink, a hard link to another file, a FIFO, a huge file) is not
read through nor rewritten, so masking can never change a file outside the workspace or hang."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_vibeeval.masking import MASKED_FILE_LIMIT, mask_file

SECRET = "sk-live-0123456789abcdef"


def test_a_copy_is_rewritten_masked_with_its_bytes_otherwise_kept(tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.md"
    prompt.write_bytes(f"use {SECRET}\r\nthen stop\n".encode())
    mask_file(prompt, [SECRET])
    text = prompt.read_bytes().decode()
    assert SECRET not in text
    assert text.endswith("\r\nthen stop\n")  # line endings as they were


def test_a_symlink_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "user.env"
    outside.write_text(f"KEY={SECRET}\n")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "prompt.md").symlink_to(outside)
    mask_file(workspace / "prompt.md", [SECRET])
    assert outside.read_text() == f"KEY={SECRET}\n"


def test_a_hard_link_to_another_file_is_left_alone(tmp_path: Path) -> None:
    outside = tmp_path / "user.env"
    outside.write_text(f"KEY={SECRET}\n")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    os.link(outside, workspace / "prompt.md")
    mask_file(workspace / "prompt.md", [SECRET])
    assert outside.read_text() == f"KEY={SECRET}\n"


def test_a_fifo_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "agent.stdin"
    os.mkfifo(fifo)
    mask_file(fifo, [SECRET])  # returns at once: no writer is waited for
    assert fifo.is_fifo()


@pytest.mark.parametrize("make", ["missing", "folder"])
def test_nothing_there_to_mask_is_no_error(tmp_path: Path, make: str) -> None:
    path = tmp_path / "prompt.md"
    if make == "folder":
        path.mkdir()
    mask_file(path, [SECRET])


def test_a_file_larger_than_any_prompt_is_left_alone(tmp_path: Path) -> None:
    big = tmp_path / "prompt.md"
    with big.open("wb") as out:
        out.write(SECRET.encode())
        out.truncate(MASKED_FILE_LIMIT + 1)  # sparse: no disk used
    mask_file(big, [SECRET])
    with big.open("rb") as data:
        assert data.read(len(SECRET)).decode() == SECRET
