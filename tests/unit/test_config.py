"""Configuration: every bad field is named by its path, all at once.

Defaults come from docs/contracts.md "Configuration".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from outpost.config import environment_file
from outpost.errors import ConfigError
from outpost.settings import load_settings, settings_from_environment

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, document: Any) -> Path:
    path = tmp_path / "env.yaml"
    path.write_text(yaml.safe_dump(document) if not isinstance(document, str) else document)
    return path


def minimal(**overrides: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "environment": "prod",
        "cluster": {"name": "prod-eu", "auth": {"mode": "token", "server": "https://api.example.test:6443",
                                                "token": "ssm:/outpost/prod/token", "ca_file": "/etc/ca.crt"}},
        "checks": {"apiserver-health": {"heartbeat": "secretsmanager:outpost/prod/hb#apiserver"}},
    }
    document.update(overrides)
    return document


def problems_of(tmp_path: Path, document: Any) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, document))
    return caught.value.problems


@pytest.mark.parametrize("environment", sorted(p.stem for p in (REPO / "infra" / "environments").glob("*.yaml")))
def test_shipped_environments_are_valid(environment: str) -> None:
    settings = load_settings(environment_file(environment, REPO))
    assert settings.environment == environment


def test_defaults(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, minimal()))
    assert settings.cluster.connect_timeout_seconds == 5.0
    assert settings.cluster.deadline_seconds == 45.0
    assert settings.heartbeat.retries == 3
    assert settings.vigilmon.api_url == "https://vigilmon.online/api"
    check = settings.checks["apiserver-health"]
    assert check.enabled
    assert check.tolerated_misses == 2
    assert check.grace_seconds(schedule_minutes=1) == 180
    assert settings.enabled_checks() == ["apiserver-health"]


def test_every_problem_is_named_by_path(tmp_path: Path) -> None:
    document = minimal()
    document["cluster"]["auth"]["server"] = "http://plain.example.test"
    document["cluster"]["read_timeout_seconds"] = -1
    document["heartbeat"] = {"retries": "many"}
    document["checks"] = {
        "apiserver-health": {"heartbeat": "https://hb.example.test/secret-token", "params": {"exclud": ["etcd"]}},
        "no-such-check": {},
    }
    document["colour"] = "blue"
    problems = problems_of(tmp_path, document)
    joined = "\n".join(problems)
    for path in (
        "cluster.auth.token.server: ",
        "cluster.read_timeout_seconds: ",
        "heartbeat.retries: ",
        "checks.apiserver-health.heartbeat: ",
        "checks.apiserver-health.params.exclud: ",
        "checks.no-such-check: unknown check",
        "colour: ",
    ):
        assert any(p.startswith(path) for p in problems), f"{path!r} not in:\n{joined}"
    # A heartbeat URL written in place of a reference is a secret: it must not be echoed back.
    assert "secret-token" not in joined


def test_unknown_auth_mode(tmp_path: Path) -> None:
    document = minimal()
    document["cluster"]["auth"] = {"mode": "password"}
    assert any(p.startswith("cluster.auth: ") for p in problems_of(tmp_path, document))


def test_not_a_mapping(tmp_path: Path) -> None:
    assert problems_of(tmp_path, "- just\n- a list\n") == ["(top level): expected a mapping, got list"]


def test_yaml_syntax_error_names_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, "environment: prod\ncluster: [unclosed\n"))
    assert "line" in caught.value.problems[0]


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match="cannot read configuration"):
        load_settings("/nonexistent/outpost.yaml")


def test_cold_start_needs_a_source() -> None:
    with pytest.raises(ConfigError, match="OUTPOST_CONFIG"):
        settings_from_environment({})


def test_cold_start_reads_outpost_config(tmp_path: Path) -> None:
    path = write(tmp_path, minimal())
    assert settings_from_environment({"OUTPOST_CONFIG": str(path)}).environment == "prod"


def test_the_function_timeout_is_derived_from_the_file_not_fixed(tmp_path: Path) -> None:
    from outpost.deploy import function_timeout_seconds, run_worst_case_seconds

    settings = load_settings(write(tmp_path, minimal(
        cluster={"name": "c", "deadline_seconds": 100, "auth": {"mode": "token", "server": "https://k",
                                                                 "token": "ssm:/outpost/prod/token"}},
        heartbeat={"timeout_seconds": 10, "retries": 3, "backoff_seconds": 1})))
    assert run_worst_case_seconds(settings) == 148  # 100 + 10 x 4 + (1 + 2 + 4) + 1
    assert function_timeout_seconds(settings) == 153  # + the 5 s margin
    serverless = yaml.safe_load("\n".join(line for line in (REPO / "serverless.yml").read_text().splitlines()
                                          if "${" not in line))
    assert "timeout" not in serverless["provider"]  # each function's timeout comes from its build
