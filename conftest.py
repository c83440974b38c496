"""Registers the harness's pytest plugins (plugins/, one concern each); nothing else."""

pytest_plugins = ["plugins.hardware", "plugins.parity", "plugins.perf", "plugins.artifacts", "plugins.gates",
                  "pytester"]
