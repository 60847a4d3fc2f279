"""The contract tests' installer (tests/real_clis/install.py) where a CLI cannot be installed from
the registry: the skip says why the last install failed, and ``VIBE_CLI_<PRESET>`` names a build
to test instead. A real npm, refused by a registry address on 127.0.0.1 where nothing listens."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import write
from real_clis import install as installer
from real_clis.install import CLIS, InstallError, bin_dir, install, installed, missing_reason

LLXPRT = CLIS["llxprt"]


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(installer, "CACHE", tmp_path / "clis")
    for name in ("VIBE_CLI_LLXPRT", "VIBE_CLI_VERSIONS"):
        monkeypatch.delenv(name, raising=False)


def test_a_cli_that_could_not_be_installed_skips_saying_why(monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("npm") is None:
        pytest.skip("npm is not on PATH")
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")  # refused at once, no retries
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    with pytest.raises(InstallError):
        install(LLXPRT)
    reason = missing_reason(LLXPRT)
    assert reason is not None and installed(LLXPRT) is None
    assert reason.startswith("@vybestack/llxprt-code 0.10.0 is not installed in ")
    assert "(the last install failed: npm error code ECONNREFUSED; " in reason.replace("ERR!", "error")
    assert reason.endswith("run `python tests/real_clis/install.py`, or name a build in VIBE_CLI_LLXPRT")


def test_a_build_named_in_its_variable_is_tested_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = write(tmp_path / "build" / "bin" / "llxprt", "#!/bin/sh\n")
    monkeypatch.setenv("VIBE_CLI_LLXPRT", str(build))
    assert (installed(LLXPRT), bin_dir(LLXPRT), missing_reason(LLXPRT)) == (build, build.parent, None)
    assert install(LLXPRT) == build  # nothing is installed
    assert not (tmp_path / "clis").exists()
    monkeypatch.setenv("VIBE_CLI_LLXPRT", str(tmp_path / "none"))
    assert missing_reason(LLXPRT) == f"VIBE_CLI_LLXPRT: no file {tmp_path / 'none'}"
    with pytest.raises(InstallError, match="VIBE_CLI_LLXPRT: no file"):
        install(LLXPRT)
