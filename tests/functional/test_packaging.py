"""`outpost package`: a bad configuration is refused before anything is written; a good one gives a
bundle whose entry modules import from the bundle alone, and a serverless.yml that the Serverless
Framework itself packages into one scheduled, non-retried function per enabled check."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path

import pytest
import yaml

from outpost.cli import main
from outpost.packaging import build

REPO = Path(__file__).resolve().parents[2]
SERVERLESS = REPO / ".tools" / "node_modules" / ".bin" / "serverless"


def project_copy(tmp_path: Path, environment: Mapping[str, object]) -> Path:
    """A minimal project tree (entry modules + one environment) to package from."""
    root = tmp_path / "project"
    shutil.copytree(REPO / "functions", root / "functions")
    (root / "infra" / "environments").mkdir(parents=True)
    (root / "infra" / "environments" / "stage1.yaml").write_text(yaml.safe_dump(environment))
    return root


GOOD = {
    "environment": "stage1",
    "cluster": {"name": "c", "auth": {"mode": "token", "server": "https://k8s.example.test",
                                      "token": "ssm:/outpost/stage1/token"}},
    "checks": {"apiserver-health": {"schedule_minutes": 5, "heartbeat": "ssm:/outpost/stage1/heartbeat/api"}},
}


def test_functions_json_has_one_scheduled_function_per_enabled_check(tmp_path: Path) -> None:
    target = build("stage1", tmp_path / "out", functions_only=True, root=project_copy(tmp_path, GOOD))
    functions = json.loads((target / "functions.json").read_text())
    assert functions == {
        "apiserver-health": {
            "handler": "functions/apiserver_health/main.handler",
            "description": "Outpost check apiserver-health (stage1, critical)",
            "maximumRetryAttempts": 0,
            "url": {"authorizer": "aws_iam"},
            "events": [{"schedule": {"rate": ["rate(5 minutes)"]}}],
        }
    }


def test_bad_configuration_is_refused_and_nothing_is_written(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    bad = {**GOOD, "checks": {"apiserver-health": {"schedule_minutes": 0, "params": {"bogus": 1}}}}
    root = project_copy(tmp_path, bad)
    out = tmp_path / "out"
    assert main(["package", "--env", "stage1", "--root", str(root), "--output", str(out), "--functions-only"]) == 64
    err = capsys.readouterr().err
    assert "checks.apiserver-health.schedule_minutes: " in err
    assert "checks.apiserver-health.params.bogus: " in err
    assert not out.exists()


def test_bundle_imports_from_itself_and_cold_starts(tmp_path: Path) -> None:
    root = project_copy(tmp_path, GOOD)
    shutil.copy2(REPO / "pyproject.toml", root / "pyproject.toml")
    shutil.copy2(REPO / "README.md", root / "README.md")
    shutil.copytree(REPO / "shared", root / "shared", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    target = build("stage1", tmp_path / "out", platform="host", root=root)
    archive = target / "outpost-stage1.zip"
    unpacked = tmp_path / "task"
    with zipfile.ZipFile(archive) as bundle:
        names = set(bundle.namelist())
        bundle.extractall(unpacked)
    assert {"functions/apiserver_health/main.py", "infra/environments/stage1.yaml", "outpost/runner.py"} <= names
    # A cold start as Lambda does it: only the bundle on sys.path, cwd = bundle root, config relative to it.
    probe = ("import sys; sys.path[:0] = ['.']; import importlib; m = importlib.import_module("
             "'functions.apiserver_health.main'); import outpost, pydantic_core; "
             "print(m.handler.__name__, m.http.__name__, outpost.__file__, pydantic_core.__file__)")
    process = subprocess.run([sys.executable, "-I", "-S", "-c", probe], cwd=unpacked, capture_output=True, text=True,
                             env={"OUTPOST_CONFIG": "infra/environments/stage1.yaml", "PATH": os.environ["PATH"]},
                             check=False, timeout=120)
    assert process.returncode == 0, process.stderr
    handler, http, package, binary = process.stdout.split()
    assert (handler, http) == ("handler_apiserver_health", "http_apiserver_health")
    assert package == str(unpacked / "outpost" / "__init__.py")
    assert binary.startswith(str(unpacked))


def test_serverless_framework_packages_the_generated_functions(tmp_path: Path) -> None:
    assert SERVERLESS.exists(), "Serverless Framework v3 is not installed; run `make setup` (it installs .tools)"
    root = project_copy(tmp_path, GOOD)
    shutil.copy2(REPO / "serverless.yml", root / "serverless.yml")
    target = build("stage1", root / "build", functions_only=True, root=root)
    (target / "outpost-stage1.zip").write_bytes(b"PK\x05\x06" + b"\x00" * 18)  # an empty, valid zip
    process = subprocess.run([str(SERVERLESS), "package", "--stage", "stage1"], cwd=root, capture_output=True,
                             text=True, check=False, timeout=300,
                             env={**os.environ, "SLS_TELEMETRY_DISABLED": "1", "SLS_NOTIFICATIONS_MODE": "off"})
    assert process.returncode == 0, process.stdout + process.stderr
    template = json.loads((root / ".serverless" / "cloudformation-template-update-stack.json").read_text())
    resources = template["Resources"]
    rules = [r["Properties"]["ScheduleExpression"] for r in resources.values() if r["Type"] == "AWS::Events::Rule"]
    assert rules == ["rate(5 minutes)"]
    retry = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Lambda::EventInvokeConfig"]
    assert retry[0]["MaximumRetryAttempts"] == 0
    function = next(r["Properties"] for r in resources.values() if r["Type"] == "AWS::Lambda::Function")
    assert function["Handler"] == "functions/apiserver_health/main.handler"
    assert function["Environment"]["Variables"]["OUTPOST_CONFIG"] == "infra/environments/stage1.yaml"
    urls = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Lambda::Url"]
    assert urls[0]["AuthType"] == "AWS_IAM"
