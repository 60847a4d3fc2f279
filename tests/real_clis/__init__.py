"""Contract tests' material: the real agent CLIs (installed pinned, outside the repository), a
scripted model API server on 127.0.0.1, and a private HOME per CLI pointing it at that server."""
