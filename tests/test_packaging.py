"""The sdist and the wheel as a packager builds them: the sdist from a copy of this checkout, then the
wheel from the unpacked sdist, both through the build backend pyproject.toml names (setuptools).

The sdist must carry what rebuilding the wheel and running the test suite need; the wheel every
file of the package and nothing else; the metadata what pyproject.toml and the package declare."""

from __future__ import annotations

import email.message
import email.parser
import importlib.metadata
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

import pytest_vibeeval

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

# What the sdist carries from the checkout (each folder whole), and what a run, a build or an
# editor leaves there, which it must not carry.
SHIPPED = [".ci", "bench", "docs", "examples", "tests", "pytest_vibeeval"]
SHIPPED_FILES = [
    "CHANGELOG.md",
    "LICENSE",
    "MANIFEST.in",
    "README.md",
    "conftest.py",
    "mkdocs.yml",
    "pyproject.toml",
]
LEFT_BEHIND = [
    "__pycache__",
    "*.pyc",
    ".pytest_cache",
    ".hypothesis",
    ".mypy_cache",
    ".ruff_cache",
    ".vibeeval",
    "node_modules",
    ".tmp-workspace-*",
    ".tmp-grading-*",
    "*.swp",
    "*~",
    ".DS_Store",
    ".idea",
    ".vscode",
    ".venv*",
    "build",
    "dist",
]
# What setuptools writes into every sdist.
GENERATED = re.compile(r"PKG-INFO|setup\.cfg|pytest_vibeeval\.egg-info/.*")


def _backend(hook: str, source: Path, out: Path) -> Path:
    """Run a PEP 517 hook of setuptools in ``source`` (as build and pip do); the file it made."""
    done = subprocess.run(
        [sys.executable, "-c", f"import sys, setuptools.build_meta as b; print(b.{hook}(sys.argv[1]))", out],
        cwd=source,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out / done.stdout.strip().splitlines()[-1]


def _files(folder: Path) -> set[str]:
    return {path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file()}


def _metadata(text: str) -> email.message.Message:
    return email.parser.Parser().parsestr(text)


class Built:
    """A checkout copied without what runs left behind, its sdist, and the wheel built from it."""

    def __init__(self, tmp: Path) -> None:
        self.checkout = tmp / "checkout"
        ignore = shutil.ignore_patterns(*LEFT_BEHIND)
        for name in SHIPPED:
            shutil.copytree(ROOT / name, self.checkout / name, ignore=ignore, symlinks=True)
        for name in SHIPPED_FILES:
            if (ROOT / name).exists():  # one missing is missing from the sdist too (the test says so)
                shutil.copy2(ROOT / name, self.checkout / name)
        self.expected = _files(self.checkout)
        # What a run leaves behind, planted where runs put it: none of it may reach the sdist.
        for junk in [
            "tests/__pycache__/helpers.cpython-311.pyc",
            "pytest_vibeeval/__pycache__/plugin.cpython-311.pyc",
            "examples/.vibeeval/results/latest.json",
            "examples/coding-agent/node_modules/left/index.js",
            "examples/runner-repository/.tmp-workspace-1/notes.txt",
            "tests/.hypothesis/examples/x",
            "tests/.pytest_cache/v/cache/lastfailed",
            "tests/.helpers.py.swp",
            "tests/helpers.py~",
            "docs/.DS_Store",
            "examples/.idea/workspace.xml",
            "tests/.vscode/settings.json",
            "tests/.venv/bin/python",
            "examples/build/lib/x.py",
            "bench/dist/x.whl",
        ]:
            (self.checkout / junk).parent.mkdir(parents=True, exist_ok=True)
            (self.checkout / junk).write_text("left behind\n", encoding="utf-8")
        dist = tmp / "dist"
        dist.mkdir()
        self.sdist = _backend("build_sdist", self.checkout, dist)
        with tarfile.open(self.sdist) as archive:
            top = archive.getnames()[0].split("/")[0]
            names = [
                member.name.removeprefix(f"{top}/") for member in archive.getmembers() if member.isfile()
            ]
            self.members = {name for name in names if not GENERATED.fullmatch(name)}
            # The "data" filter where this Python has it (3.11.4 on); it is our own archive.
            safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            archive.extractall(tmp / "unpacked", **safe)
        self.unpacked = tmp / "unpacked" / top
        self.wheel = _backend("build_wheel", self.unpacked, dist)


def _backend_missing() -> str | None:
    """Why this environment cannot run the build backend pyproject.toml names, if it cannot."""
    for text in PYPROJECT["build-system"]["requires"]:
        requirement = Requirement(text)
        try:
            version = importlib.metadata.version(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            return f"{requirement.name} is not installed"
        if not requirement.specifier.contains(version):
            return f"{requirement.name} {version} is installed, the build needs {text}"
    return None


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    if why := _backend_missing():
        pytest.skip(f"{why}: pip install -e '.[test]'")
    return Built(tmp_path_factory.mktemp("packaging"))


def test_the_sdist_carries_the_checkout_and_nothing_a_run_left(built: Built) -> None:
    """Tests, examples, docs, the benchmarks, CI's scripts, the license and the changelog: a packager
    rebuilds the wheel and runs the suite from the sdist."""
    assert sorted(set(SHIPPED_FILES) - built.members) == [], "missing from the sdist"
    assert sorted(built.expected - built.members) == [], "missing from the sdist (MANIFEST.in)"
    assert sorted(built.members - built.expected) == [], "in the sdist, not in the checkout"


def test_the_wheel_has_every_file_of_the_package_and_only_those(built: Built) -> None:
    package = {name for name in built.expected if name.startswith("pytest_vibeeval/")}
    assert any(name.endswith(".schema.json") for name in package) and "pytest_vibeeval/py.typed" in package
    with zipfile.ZipFile(built.wheel) as wheel:
        names = set(wheel.namelist())
    info = f"pytest_vibeeval-{pytest_vibeeval.__version__}.dist-info/"
    assert {name for name in names if not name.startswith(info)} == package
    assert {name.removeprefix(info) for name in names if name.startswith(info)} == {
        "METADATA",
        "WHEEL",
        "RECORD",
        "entry_points.txt",
        "top_level.txt",
        "licenses/LICENSE",
    }


def test_the_metadata_says_what_pyproject_and_the_package_declare(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as wheel:
        info = f"pytest_vibeeval-{pytest_vibeeval.__version__}.dist-info/"
        meta = _metadata(wheel.read(info + "METADATA").decode())
        entry_points = wheel.read(info + "entry_points.txt").decode()
        wheel_tags = _metadata(wheel.read(info + "WHEEL").decode())
    project = PYPROJECT["project"]
    assert meta["Name"] == "pytest-vibeeval"
    # One version: the package's __version__, which pyproject.toml reads.
    assert meta["Version"] == pytest_vibeeval.__version__
    assert _metadata((built.unpacked / "PKG-INFO").read_text(encoding="utf-8"))["Version"] == meta["Version"]
    assert built.sdist.name == f"pytest_vibeeval-{pytest_vibeeval.__version__}.tar.gz"
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta.get_all("License-File") == ["LICENSE"]
    classifiers = meta.get_all("Classifier") or []
    assert "Framework :: Pytest" in classifiers and "Typing :: Typed" in classifiers
    assert not [c for c in classifiers if c.startswith("License ::")], "superseded by License-Expression"
    # The Python versions named are those requires-python allows from its floor on, one by one.
    assert meta["Requires-Python"] == project["requires-python"]
    floor = Version(project["requires-python"].removeprefix(">="))
    minors = sorted(int(c.rsplit(".", 1)[1]) for c in classifiers if re.fullmatch(r".*:: 3\.\d+", c))
    assert minors == list(range(floor.minor, minors[-1] + 1))
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta.get_payload().startswith("# pytest-vibeeval\n")
    assert set(meta.get_all("Provides-Extra") or []) == set(project["optional-dependencies"])
    requires = [Requirement(text) for text in meta.get_all("Requires-Dist") or []]
    assert {r.name for r in requires if r.marker is None} == {
        Requirement(text).name for text in project["dependencies"]
    }
    assert "[pytest11]\nvibeeval = pytest_vibeeval.plugin\n" in entry_points
    assert wheel_tags["Tag"] == "py3-none-any" and wheel_tags["Root-Is-Purelib"] == "true"
