"""The names of the files the plugin collects: what every session's collection hooks compare
file names with, before anything of the plugin's loading machinery is imported."""

from __future__ import annotations

YAML_SUFFIXES = (".yaml", ".yml")
SUITE_SUFFIXES = (".eval.yaml", ".eval.yml")  # collected wherever they are
CLI_CONFIG_NAME = "cli-config.json"
# a unified-runner config folder's files (read by runner_config, named here for the collectors)
EVAL_CONFIG_NAME = "eval-config.json"
REGISTRY_NAME = "command-registry.json"
SOURCE_SUFFIXES = (*YAML_SUFFIXES, EVAL_CONFIG_NAME)  # files whose load errors stop only themselves
