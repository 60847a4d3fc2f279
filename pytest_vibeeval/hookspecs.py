"""Hooks that other plugins and conftest files implement to extend pytest-vibeeval."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .checks import CheckRegistry


@pytest.hookspec(historic=True)
def pytest_vibeeval_register_checks(registry: CheckRegistry) -> None:
    """Register extra check types with ``registry.register(CheckType(...))``.

    Historic: a conftest found later in collection is still called, before its suites load.
    A name that is already registered (including the built-ins and ``or``) is an error.
    """
