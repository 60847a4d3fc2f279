"""The command line.

``python -m pytest_vibeeval schema [--check]``: write or check the shipped JSON Schemas.
``python -m pytest_vibeeval compare BASELINE NEW [--fail-on-regression]``: compare two results files.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .baseline import BaselineError, compare_results, comparison_lines, load_baseline, resolve_baseline
from .results import ResultsFile

SCHEMA_DIR = Path(__file__).parent / "schemas"


def results_schema() -> str:
    """The JSON Schema of the results file, as shipped in ``schemas/results.schema.json``."""
    schema = ResultsFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "pytest-vibeeval results"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def schema_command(check: bool) -> int:
    """Write the shipped schemas, or (``check``) fail when they are out of date."""
    target = SCHEMA_DIR / "results.schema.json"
    text = results_schema()
    if check:
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            print(f"{target} is out of date: run `python -m pytest_vibeeval schema`", file=sys.stderr)
            return 1
        return 0
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target}")
    return 0


def compare_command(baseline: str, new: str, fail_on_regression: bool) -> int:
    """Print the comparison; 1 on a regression with ``fail_on_regression``, 2 for an unusable file."""
    cwd = Path.cwd()
    base_path, new_path = resolve_baseline(baseline, cwd), resolve_baseline(new, cwd)
    try:
        base_results, new_results = load_baseline(base_path), load_baseline(new_path)
    except BaselineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    comparison = compare_results(new_results, base_results, str(base_path))
    print("\n".join(comparison_lines(comparison)))
    return 1 if fail_on_regression and comparison.regressions else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_vibeeval")
    sub = parser.add_subparsers(dest="command", required=True)
    schema = sub.add_parser("schema", help="write the JSON Schemas shipped in the package")
    schema.add_argument("--check", action="store_true", help="fail if the shipped schemas are out of date")
    compare = sub.add_parser(
        "compare",
        help="compare a results file with a baseline results file",
        description="Pair the runs of NEW with BASELINE's by suite file and configuration, and label each "
        "by its score delta. `latest` stands for .vibeeval/results/latest.json under the current folder.",
    )
    compare.add_argument("baseline", help="the baseline results file (or `latest`)")
    compare.add_argument("new", help="the new results file (or `latest`)")
    compare.add_argument(
        "--fail-on-regression", action="store_true", help="exit 1 when any run is labelled regression"
    )
    args = parser.parse_args(argv)
    if args.command == "compare":
        return compare_command(args.baseline, args.new, args.fail_on_regression)
    return schema_command(args.check)


if __name__ == "__main__":
    sys.exit(main())
