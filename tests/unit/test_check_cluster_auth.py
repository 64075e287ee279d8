"""A check's own cluster identity (`checks.NAME.cluster_auth`) and opt-in jobs: validated like
`cluster.auth`, used by the runner for that check only, replaced by `--kubeconfig`, and an opt-in job
that the configuration does not enable does nothing."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
import yaml

from outpost.cluster import Cluster, Deadline
from outpost.config import KubeconfigAuth, Settings
from outpost.errors import ConfigError
from outpost.result import Status
from outpost.runner import run_check, settings_for_check
from outpost.settings import load_settings, settings_from_args

JOB = "kwok-pod-reconciler"


def write(tmp_path: Path, checks: dict[str, Any]) -> Path:
    path = tmp_path / "env.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "environment": "test",
                "cluster": {"name": "c", "auth": {"mode": "kubeconfig", "path": "/probe.kubeconfig"}},
                "checks": checks,
            }
        )
    )
    return path


def test_cluster_auth_is_validated_like_cluster_auth(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            JOB: {"cluster_auth": {"mode": "token", "server": "http://plain.example", "token": "not-a-reference"}},
            "gang-scheduling": {"cluster_auth": {"mode": "nope"}},
        },
    )
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    problems = "\n".join(caught.value.problems)
    assert f"checks.{JOB}.cluster_auth.token.server: must be an https:// URL" in problems
    assert f"checks.{JOB}.cluster_auth.token.token:" in problems
    assert "checks.gang-scheduling.cluster_auth: Input tag 'nope'" in problems


def test_the_check_runs_as_its_own_identity_and_others_as_the_cluster_auth(tmp_path: Path) -> None:
    settings = load_settings(
        write(
            tmp_path,
            {JOB: {"cluster_auth": {"mode": "kubeconfig", "path": "/reconciler.kubeconfig"}}, "gang-scheduling": {}},
        )
    )
    assert settings_for_check(settings, JOB).cluster.auth == KubeconfigAuth(
        mode="kubeconfig", path="/reconciler.kubeconfig"
    )
    assert settings_for_check(settings, "gang-scheduling").cluster.auth.path == "/probe.kubeconfig"  # type: ignore[union-attr]
    assert settings_for_check(settings, "be-eviction-rate") is settings  # not configured: unchanged

    seen: list[Settings] = []

    def factory(run_settings: Settings, deadline: Deadline) -> Cluster:
        seen.append(run_settings)
        raise ConfigError("stop here")

    for name in (JOB, "gang-scheduling"):
        result = run_check(settings, name, report=False, log=False, cluster_factory=factory)
        assert result.status is Status.ERROR
        assert "stop here" in result.summary
    assert [s.cluster.auth.path for s in seen] == ["/reconciler.kubeconfig", "/probe.kubeconfig"]  # type: ignore[union-attr]


def test_the_command_line_identity_replaces_every_configured_one(tmp_path: Path) -> None:
    path = write(tmp_path, {JOB: {"cluster_auth": {"mode": "kubeconfig", "path": "/reconciler.kubeconfig"}}})
    args = argparse.Namespace(config=str(path), env=None, kubeconfig="/mine.kubeconfig", context=None)
    settings = settings_from_args(args)
    assert settings.checks[JOB].cluster_auth is None
    assert settings_for_check(settings, JOB).cluster.auth.path == "/mine.kubeconfig"  # type: ignore[union-attr]


@pytest.mark.parametrize("entry", [None, {"enabled": False}])
def test_an_opt_in_job_not_enabled_does_nothing(tmp_path: Path, entry: dict[str, Any] | None) -> None:
    settings = load_settings(write(tmp_path, {} if entry is None else {JOB: entry}))
    called: list[str] = []

    def factory(run_settings: Settings, deadline: Deadline) -> Cluster:
        called.append("cluster")
        raise AssertionError("no cluster may be built")

    result = run_check(settings, JOB, log=False, cluster_factory=factory)
    assert result.status is Status.ERROR
    assert result.reported is False
    assert f"opt-in job {'not configured' if entry is None else 'disabled'}" in result.summary
    assert "nothing was done" in result.summary
    assert called == []


def test_shipped_local_environment_runs_the_job_as_the_reconciler() -> None:
    settings = load_settings(Path(__file__).resolve().parents[2] / "infra" / "environments" / "local.yaml")
    job = settings_for_check(settings, JOB).cluster.auth
    assert isinstance(job, KubeconfigAuth)
    assert job.path == "~/.outpost/sandbox/reconciler.kubeconfig"
    assert settings.cluster.auth.path == "~/.outpost/sandbox/probe.kubeconfig"  # type: ignore[union-attr]


def test_jobs_run_like_checks() -> None:
    from outpost import registry

    root = Path(__file__).resolve().parents[2]
    assert [job.name for job in registry.jobs()] == [JOB]
    assert JOB in registry.names()
    assert registry.get(JOB).writes
    assert registry.get(JOB).opt_in
    assert JOB not in [check.name for check in registry.checks()]  # not a row of the check catalogue
    assert (root / "functions" / "kwok_pod_reconciler" / "main.py").is_file()
    local = load_settings(root / "infra" / "environments" / "local.yaml")
    assert JOB in local.enabled_checks()
    assert local.checks[JOB].heartbeat == "env:OUTPOST_HEARTBEAT_KWOK_POD_RECONCILER"


def test_a_checks_own_kubeconfig_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    """The check's own identity is read like any kubeconfig (`outpost.local_files`): a FIFO in its place is an
    `error` naming it at once, where reading it would block forever."""
    import os
    import time

    fifo = tmp_path / "reconciler.kubeconfig"
    os.mkfifo(fifo)
    settings = load_settings(write(tmp_path, {JOB: {"cluster_auth": {"mode": "kubeconfig", "path": str(fifo)}}}))
    started = time.monotonic()
    result = run_check(settings, JOB, report=False, log=False)
    assert time.monotonic() - started < 2.0
    assert result.status is Status.ERROR
    assert f"kubeconfig {fifo}: is a FIFO (named pipe), not a regular file" in result.summary


def test_a_password_in_a_checks_own_server_is_refused_naming_the_field(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            JOB: {
                "cluster_auth": {
                    "mode": "token",
                    "server": "https://job:hunter2-Xy7@k.example",
                    "token": "env:JOB_TOKEN",
                }
            }
        },
    )
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    problems = "\n".join(caught.value.problems)
    assert (
        f"checks.{JOB}.cluster_auth.token.server: must not carry user information (user:password@): "
        "https://k.example is what may be given" in problems
    )
    assert "hunter2" not in problems
