"""The hostile corpus is data for tests/test_hostile_inputs.py, never a test suite of this repository:
nothing below this folder is collected (its ``*.eval.yaml`` and ``eval-config.json`` files would be)."""

collect_ignore_glob = ["*"]
