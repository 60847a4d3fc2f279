"""The names of the files the plugin collects: what every session's collection hooks compare
file names with, before anything of the plugin's loading machinery is imported; and the names of
the files it makes from eval names and configuration ids, kept within the system's limit."""

from __future__ import annotations

import re

YAML_SUFFIXES = (".yaml", ".yml")
SUITE_SUFFIXES = (".eval.yaml", ".eval.yml")  # collected wherever they are
CLI_CONFIG_NAME = "cli-config.json"
# a unified-runner config folder's files (read by runner_config, named here for the collectors)
EVAL_CONFIG_NAME = "eval-config.json"
REGISTRY_NAME = "command-registry.json"
SOURCE_SUFFIXES = (*YAML_SUFFIXES, EVAL_CONFIG_NAME)  # files whose load errors stop only themselves

# Bytes in one file name on most Linux file systems (NAME_MAX); a longer one fails (ENAMETOOLONG).
NAME_MAX = 255
_UNSAFE_IN_NAMES = re.compile(r"[^A-Za-z0-9._+-]+")


def bounded_name(text: str, max_bytes: int = NAME_MAX) -> str:
    """``text`` cut to at most ``max_bytes`` bytes of UTF-8 (at a character's end) when it is
    longer, a hash of the whole text after the cut: two long names that differ only past it still
    name two files. A name that fits is returned as it is."""
    data = text.encode("utf-8", "surrogateescape")
    if len(data) <= max_bytes:
        return text
    import hashlib  # only for names this long: every session imports this module

    digest = hashlib.sha256(data).hexdigest()[:12]
    head = data[: max(max_bytes - len(digest) - 1, 0)].decode("utf-8", "ignore")
    return f"{head}-{digest}"


def name_part(text: str, max_bytes: int = NAME_MAX) -> str:
    """``text`` (an eval name, a configuration id, a step name) as part of a file name: each run of
    characters other than letters, digits and ``._+-`` as ``_``, at most ``max_bytes`` long."""
    return bounded_name(_UNSAFE_IN_NAMES.sub("_", text), max_bytes)


# the folder of pytest's cache (``config.cache.mkdir``) parsed suites are kept in (loading.parse_cache)
PARSED_SUITES_FOLDER = "vibeeval-parsed"
