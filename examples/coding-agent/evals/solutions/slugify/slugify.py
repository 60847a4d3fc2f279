"""EXAMPLE PROBLEM: the reference solution, outside the workspace; the oracle agent copies it in."""

import re
import unicodedata


def slugify(title: str) -> str:
    """Turn a title into a URL slug."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", ascii_title.lower()).strip("-")
