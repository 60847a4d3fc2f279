"""EXAMPLE PROBLEM: the code the agent is asked to fix (see problem.md)."""


def slugify(title: str) -> str:
    """Turn a title into a URL slug."""
    return title.lower().replace(" ", "-")
