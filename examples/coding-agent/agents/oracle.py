#!/usr/bin/env python3
"""EXAMPLE AGENT (oracle): a stand-in for a coding agent that always gets it right.

It runs in the workspace, reads the instruction on stdin, finds the problem's id on the
`Problem: <id>` line of ./prompt.md and copies the reference solution from
SOLUTIONS_DIR/<id>/ (its only argument; kept outside the workspace) over the workspace.
Deterministic, offline, no API keys. Usage: oracle.py SOLUTIONS_DIR
"""

import re
import shutil
import sys
from pathlib import Path


def main() -> int:
    instruction = sys.stdin.read().strip()
    print(f"oracle: instruction {instruction!r}")
    match = re.search(r"^Problem: (\S+)$", Path("prompt.md").read_text(encoding="utf-8"), re.MULTILINE)
    if match is None:
        print("oracle: no 'Problem: <id>' line in prompt.md", file=sys.stderr)
        return 2
    solution = Path(sys.argv[1]) / match.group(1)
    shutil.copytree(solution, ".", dirs_exist_ok=True)
    print(f"oracle: copied the reference solution from {solution}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
