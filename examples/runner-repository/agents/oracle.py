#!/usr/bin/env python3
"""EXAMPLE AGENT (oracle): a stand-in for a coding agent that always gets it right.

It runs in its workspace, ``problems/<id>/.tmp-workspace-<n>/workspace``, and copies the reference
solution SOLUTIONS_DIR/<id>/ (its only argument; outside the workspace) over it. Deterministic,
offline, no API keys. Usage: oracle.py SOLUTIONS_DIR
"""

import shutil
import sys
from pathlib import Path


def copy_solution(solutions: Path) -> Path:
    """Copy the reference solution of this workspace's problem over it; returns where it came from."""
    problem = Path.cwd().parent.parent.name
    solution = solutions / problem
    shutil.copytree(solution, ".", dirs_exist_ok=True)
    return solution


def main() -> int:
    solution = copy_solution(Path(sys.argv[1]))
    print(f"oracle: copied the reference solution from {solution}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
