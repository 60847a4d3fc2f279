"""Dotted paths into parsed JSON (``usage.output_tokens``, ``content.0.text``, ``items.-1``)."""

from __future__ import annotations

from typing import Any

MISSING: Any = object()  # what :func:`lookup` returns for a path that is not there


def lookup(data: Any, path: str) -> Any:
    """Follow a dotted path: keys of objects, indexes (negative too) of lists; :data:`MISSING` if absent."""
    node = data
    for part in path.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.lstrip("-").isdigit() and -len(node) <= int(part) < len(node):
            node = node[int(part)]
        else:
            return MISSING
    return node
