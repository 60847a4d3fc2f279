"""Print each of pyproject.toml's direct dependencies pinned to its declared floor (``name==X``).

CI installs these into a venv of its own and runs a subset of the suite there, so a floor that no
longer works (or that names no released version) fails CI. A dependency without a ``>=`` floor is
an error: its oldest supported version could not be tested.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(.*?)\s*(?:;.*)?$")
FLOOR = re.compile(r"(?:^|,)\s*>=\s*([0-9][0-9A-Za-z.]*)\s*(?:,|$)")


def floor_pin(requirement: str) -> str:
    """``requirement`` (e.g. ``pydantic>=2.6,<3``) as ``pydantic==2.6``; ValueError without a floor."""
    match = REQUIREMENT.match(requirement)
    floor = FLOOR.search(match.group(2)) if match else None
    if match is None or floor is None:
        raise ValueError(f"dependency {requirement!r} declares no '>=' floor")
    return f"{match.group(1)}=={floor.group(1)}"


def main() -> int:
    """Print one pin a line; on a dependency without a floor, say which and exit 1."""
    dependencies = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["dependencies"]
    try:
        pins = [floor_pin(requirement) for requirement in dependencies]
    except ValueError as error:
        print(f"floors.py: {error}", file=sys.stderr)
        return 1
    print("\n".join(pins))
    return 0


if __name__ == "__main__":
    sys.exit(main())
