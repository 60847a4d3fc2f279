"""What an agent prints never reaches the terminal raw: ANSI colours, OSC title sequences, bells and
NUL bytes in failure messages and Run Summary lines are shown escaped."""

from __future__ import annotations

import sys

import pytest
from helpers import XDIST_MODES, run, write

AGENT = r"""
import sys
sys.stdin.read()
sys.stdout.write("\x1b]0;pwned title\x07\x1b[2J\x1b[31mRED\x00 done")
"""


@XDIST_MODES
def test_agent_control_characters_are_escaped_on_the_terminal(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    agent = write(pytester.path / "agent.py", AGENT)
    write(
        pytester.path / "esc.eval.yaml",
        f"""
        metadata: {{name: esc, model: m}}
        configurations:
          agent: {{cli: "{sys.executable}", args: ["{agent}"]}}
        evals:
          - {{name: a, prompt: hi, checks: [{{equals: "nope"}}]}}
        """,
    )
    result = run(pytester, *xdist, "--vibe-history=", "--vibe-results", "r.json", subprocess=True)
    output = result.stdout.str() + result.stderr.str()
    assert "Run Summary" in output
    for raw in ("\x1b", "\x07", "\x00"):
        assert raw not in output, repr(raw)
    assert "\\x1b]0;pwned title\\x07" in output  # shown, escaped
