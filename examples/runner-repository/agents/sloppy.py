#!/usr/bin/env python3
"""EXAMPLE AGENT (sloppy): solves the problem as the oracle does, then leaves debugging code behind
with an ``any`` (a lint error) and a wrong type annotation (a type error). Every hidden test passes,
but the failing lint and typecheck steps score it 0, as the unified runner's rules say.
Usage: sloppy.py SOLUTIONS_DIR
"""

import sys
from pathlib import Path

from oracle import copy_solution

LEFT_BEHIND = """
export const debugLimit: number = '10';

export function debugWords(list: any): string {
  return list.join(' ');
}
"""


def main() -> int:
    copy_solution(Path(sys.argv[1]))
    with open("src/top.ts", "a", encoding="utf-8") as source:
        source.write(LEFT_BEHIND)
    print("sloppy: copied the reference solution and left debugging code in src/top.ts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
