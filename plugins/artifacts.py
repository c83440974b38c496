"""Artifact plugin: the env manifest beside the artifact pack, written once per session."""

from __future__ import annotations

from plugins.parity import interrupted, reports_dir


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if hasattr(config, "workerinput") or config.getoption("--no-matrix") or interrupted(exitstatus):
        return
    from eagle4.report import env_manifest
    from plugins.hardware import requested_hw

    env_manifest.write(reports_dir(config) / "env_manifest.txt",
                       {"pytest_hw": ",".join(sorted(requested_hw(config))),
                        "pytest_exitstatus": str(int(exitstatus))})
