"""Coding-agent evals: template copies, the sandbox and process limits, and the agent → build → grade
run."""
