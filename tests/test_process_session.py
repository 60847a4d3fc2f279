"""Where an agent runs: always in a process group of its own (what the group kill needs) and never
with a terminal; in a session of its own only when pytest has a controlling terminal to keep from
it. Without one it stays in pytest's session: on Linux every new session is a scheduler autogroup
of its own, which on a busy machine waits behind the other sessions at each of its wake-ups."""

from __future__ import annotations

import os

import pytest
from helpers import FAST_ARGS, PYTHON, XDIST_MODES, agent, write

needs_linux = pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs Linux")

# Prints where it runs: its process group and session (its own or shared) and whether it can open
# a terminal.
WHERE_AGENT = """
import os
try:
    os.close(os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK))
    tty = "open"
except OSError:
    tty = "none"
group = "own" if os.getpgid(0) == os.getpid() else "shared"
session = "own" if os.getsid(0) == os.getpid() else "shared"
print(f"group={group} session={session} tty={tty}")
"""

# Runs pytest (the arguments) in a new session, with or without a pseudo-terminal as its
# controlling terminal (first argument: "tty" or "none"), whatever the session running the tests.
LAUNCHER = """
import fcntl, os, sys, termios
os.setsid()
if sys.argv[1] == "tty":
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSCTTY, 0)
    os.set_inheritable(leader, True)  # the terminal stays up while pytest runs
    os.set_inheritable(follower, True)
os.execv(sys.executable, [sys.executable, "-m", "pytest", *sys.argv[2:]])
"""


@needs_linux
@XDIST_MODES
@pytest.mark.parametrize(
    ("terminal", "expected"),
    [("none", "group=own session=shared tty=none"), ("tty", "group=own session=own tty=none")],
    ids=["no-terminal", "terminal"],
)
def test_an_agent_leads_its_process_group_and_never_has_a_terminal(
    pytester: pytest.Pytester, xdist: list[str], terminal: str, expected: str
) -> None:
    if terminal == "none" and not os.path.exists("/dev/tty"):
        pytest.skip("no /dev/tty here: whether pytest has a terminal cannot be told, so agents get a session")
    script = agent(pytester.path, "where.py", WHERE_AGENT)
    write(
        pytester.path / "where.eval.yaml",
        f"""
        metadata: {{name: where, model: m}}
        configurations:
          where: {{cli: "{PYTHON}", args: ["{script}"]}}
        evals:
          - {{name: e, prompt: p, checks: [{{contains: "{expected}"}}]}}
        """,
    )
    launcher = write(pytester.path / "launch.py", LAUNCHER)
    result = pytester.run(PYTHON, str(launcher), terminal, *FAST_ARGS, *xdist)
    result.assert_outcomes(passed=1)
