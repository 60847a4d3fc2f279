#!/usr/bin/env python3
"""EXAMPLE AGENT (nop): a stand-in for a coding agent that does nothing.

It reads the instruction on stdin and exits 0 without touching the workspace, so the eval
fails at its first grade step: the baseline every real agent should beat.
"""

import sys

print(f"nop: ignoring {sys.stdin.read().strip()!r}")
