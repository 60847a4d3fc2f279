"""``.ci/floors.py``, which CI's ``tests-floors`` step installs from: each of pyproject.toml's
direct dependencies pinned to its declared floor, and a dependency without a floor refused."""

from __future__ import annotations

import runpy
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / ".ci" / "floors.py"


def load_floors() -> dict[str, object]:
    """The script's globals (it is no package module)."""
    return runpy.run_path(str(SCRIPT))


@pytest.mark.parametrize(
    ("requirement", "pin"),
    [
        ("pydantic>=2.11.5,<3", "pydantic==2.11.5"),
        ("pytest-xdist>=3.6.1", "pytest-xdist==3.6.1"),
        ("mcp[cli] <3, >= 2.3 ; python_version >= '3.11'", "mcp==2.3"),
    ],
)
def test_a_requirement_is_pinned_to_its_floor(requirement: str, pin: str) -> None:
    assert load_floors()["floor_pin"](requirement) == pin  # type: ignore[operator]


@pytest.mark.parametrize("requirement", ["httpx", "httpx<1", "httpx==0.27", "httpx>0.27"])
def test_a_requirement_without_a_floor_is_refused(requirement: str) -> None:
    with pytest.raises(ValueError, match="declares no '>=' floor"):
        load_floors()["floor_pin"](requirement)  # type: ignore[operator]


def test_every_direct_dependency_is_printed_at_its_floor() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, check=True)
    pins = done.stdout.split()
    assert len(pins) == len(declared)
    assert all(
        "==" in pin and pin.split("==")[0] in requirement
        for pin, requirement in zip(pins, declared, strict=True)
    )
