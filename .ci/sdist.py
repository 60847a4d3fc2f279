"""CI's ``sdist`` step: the sdist the wheel step built carries every file git tracks (``.gitignore``
aside), which running the test suite and the examples from it needs.

Run from the checkout's root with the folder the sdist was built in. Names are compared as they
are, whatever they hold (spaces, non-ASCII, a backslash): ``git ls-files -z`` and :mod:`tarfile`
quote none of them, where ``git ls-files`` and ``tar -t`` each quote some (under ``LC_ALL=C``
``tar`` writes ``café`` as ``caf\\303\\251``). A tracked file deleted from the checkout is not looked
for: the sdist is built from the checkout.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path


def tracked() -> list[str]:
    """The files git tracks that the checkout has, ``.gitignore`` aside."""
    listed = subprocess.run(["git", "ls-files", "-z"], capture_output=True, check=True).stdout
    names = (os.fsdecode(name) for name in listed.split(b"\0") if name)
    return [name for name in names if name != ".gitignore" and os.path.lexists(name)]


def members(sdist: Path) -> set[str]:
    """The sdist's member names, below its top folder (``name-version/``)."""
    top = sdist.name.removesuffix(".tar.gz") + "/"
    with tarfile.open(sdist) as archive:
        return {name.removeprefix(top) for name in archive.getnames() if name.startswith(top)}


def main(argv: list[str]) -> int:
    """Compare the sdist in ``argv[0]`` with ``git ls-files``; name what it lacks and exit 1."""
    dist = Path(argv[0])
    sdists = sorted(dist.glob("*.tar.gz"))
    if not sdists:
        print(f"CI: no sdist in {dist}: the wheel step did not build one", file=sys.stderr)
        return 1
    sdist, files = sdists[0], tracked()
    missing = sorted(set(files) - members(sdist))
    if missing:
        named = ", ".join(repr(name) for name in missing)
        print(f"CI: missing from {sdist.name} (add them to MANIFEST.in): {named}", file=sys.stderr)
        return 1
    print(f"CI: {sdist.name} carries all {len(files)} files git tracks but .gitignore", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
