#!/usr/bin/env python3
"""EXAMPLE AGENT (nop): changes nothing, so only what the template already gets right is credited."""

print("nop: left the workspace as it was")
