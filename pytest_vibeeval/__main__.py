"""``python -m pytest_vibeeval schema [--check]``: write or check the shipped JSON Schemas."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .results import ResultsFile

SCHEMA_DIR = Path(__file__).parent / "schemas"


def results_schema() -> str:
    """The JSON Schema of the results file, as shipped in ``schemas/results.schema.json``."""
    schema = ResultsFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "pytest-vibeeval results"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_vibeeval")
    sub = parser.add_subparsers(dest="command", required=True)
    schema = sub.add_parser("schema", help="write the JSON Schemas shipped in the package")
    schema.add_argument("--check", action="store_true", help="fail if the shipped schemas are out of date")
    args = parser.parse_args(argv)
    target = SCHEMA_DIR / "results.schema.json"
    text = results_schema()
    if args.check:
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            print(f"{target} is out of date: run `python -m pytest_vibeeval schema`", file=sys.stderr)
            return 1
        return 0
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
