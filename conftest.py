"""Test wiring for this repository: the plugin's own tests drive real pytest runs with pytester."""

pytest_plugins = ["pytester"]
