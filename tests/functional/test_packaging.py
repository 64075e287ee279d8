"""`outpost package`: a bad configuration is refused before anything is written; a good one gives a
bundle whose entry modules import from the bundle alone, and a serverless.yml that the Serverless
Framework itself packages into one scheduled, non-retried function per enabled check.

The bundle holds only the product: no sandbox code (even while the source tree has it), and only the
dependencies the environment and the platform reach: the Lambda bundle has no Cloud Functions server, the
Cloud Functions source no AWS SDK unless the environment's secrets or auth use AWS."""

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
from outpost.config import parse_settings
from outpost.packaging import build, describe, forbidden_entries, required_extras

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


GKE = {
    "environment": "stage1",
    "cluster": {"name": "c", "auth": {"mode": "gke", "server": "https://k8s.example.test", "ca_data": "Q0E="}},
    "vigilmon": {"api_key": "env:VIGILMON_API_KEY"},
    "checks": {"apiserver-health": {"heartbeat": "gcpsm:projects/p/secrets/heartbeat-api"}},
}

# What only the Cloud Functions server brings; never in a Lambda bundle.
CLOUD_FUNCTIONS_SERVER = {"functions_framework", "flask", "werkzeug", "gunicorn", "click", "itsdangerous"}
SANDBOX = {"outpost/sandbox", "outpost_sandbox"}


def source_project(tmp_path: Path, environment: Mapping[str, object]) -> Path:
    """A project copy with the package source, and a sandbox in it as the source tree may have one."""
    root = project_copy(tmp_path, environment)
    shutil.copy2(REPO / "pyproject.toml", root / "pyproject.toml")
    shutil.copy2(REPO / "README.md", root / "README.md")
    shutil.copytree(REPO / "shared", root / "shared", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    sandbox = root / "shared" / "outpost" / "sandbox"
    if not sandbox.exists():  # the sandbox moved to its own distribution: keep proving it would be left out
        sandbox.mkdir()
        (sandbox / "__init__.py").write_text('"""Development-only code that must never be bundled."""\n')
    return root


def top_level(names: set[str]) -> set[str]:
    """Importable top-level names in a bundle, and `outpost/<subpackage>` for the product's own packages."""
    tops = {name.split("/")[0].split("-")[0].removesuffix(".py").lower() for name in names}
    return tops | {"/".join(name.split("/")[:2]) for name in names if name.startswith("outpost/")}


def test_lambda_bundle_holds_only_the_product_and_cold_starts(tmp_path: Path) -> None:
    root = source_project(tmp_path, GOOD)
    target = build("stage1", tmp_path / "out", platform="host", root=root)
    archive = target / "outpost-stage1.zip"
    summary = describe(archive)
    print(f"Lambda bundle (token auth, ssm: secrets): {summary}")
    unpacked = tmp_path / "task"
    with zipfile.ZipFile(archive) as bundle:
        names = set(bundle.namelist())
        bundle.extractall(unpacked)
    assert {"functions/apiserver_health/main.py", "infra/environments/stage1.yaml", "outpost/runner.py",
            "outpost/runtime/aws_lambda.py", "outpost/cluster/auth.py"} <= names, summary
    tops = top_level(names)
    assert not tops & SANDBOX, f"sandbox code in the bundle: {sorted(tops & SANDBOX)}"
    assert not tops & CLOUD_FUNCTIONS_SERVER, f"Cloud Functions server in the Lambda bundle: {sorted(tops)}"
    # ssm: references need the AWS SDK; nothing in this environment needs kubernetes, google-auth or cryptography.
    assert {"boto3", "botocore", "pydantic", "httpx", "yaml"} <= tops, summary
    assert not tops & {"kubernetes", "google", "cryptography", "requests"}, f"unreached dependency: {sorted(tops)}"
    assert not [name for name in names if "__pycache__" in name or name.endswith((".pyc", "/RECORD"))], summary
    assert not [name for name in names if name.startswith("bin/")], summary
    # The whole of today's unsplit bundle was 40 MB (5954 files); this environment needs far less.
    assert archive.stat().st_size < 25_000_000, summary
    # A cold start as Lambda does it: only the bundle on sys.path, cwd = bundle root, config relative to it.
    probe = ("import sys; sys.path[:0] = ['.']; import importlib; m = importlib.import_module("
             "'functions.apiserver_health.main'); import outpost, pydantic_core, boto3; "
             "print(m.handler.__name__, m.http.__name__, outpost.__file__, pydantic_core.__file__, boto3.__file__)")
    process = subprocess.run([sys.executable, "-I", "-S", "-c", probe], cwd=unpacked, capture_output=True, text=True,
                             env={"OUTPOST_CONFIG": "infra/environments/stage1.yaml", "PATH": os.environ["PATH"]},
                             check=False, timeout=120)
    assert process.returncode == 0, process.stderr
    handler, http, package, binary, sdk = process.stdout.split()
    assert (handler, http) == ("handler_apiserver_health", "http_apiserver_health")
    assert package == str(unpacked / "outpost" / "__init__.py")
    assert binary.startswith(str(unpacked))
    assert sdk == str(unpacked / "boto3" / "__init__.py")  # the ssm: path's SDK loads from the bundle alone


def requirement_names(text: str) -> set[str]:
    return {line.split(";")[0].split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip().lower()
            for line in text.splitlines() if line.strip()}


def test_cloud_functions_source_has_its_server_and_no_aws_sdk_it_does_not_reach(tmp_path: Path) -> None:
    root = source_project(tmp_path, GKE)
    target = build("stage1", tmp_path / "out", platform="gcf", root=root)
    archive = target / "outpost-stage1-gcf.zip"
    summary = describe(archive)
    print(f"Cloud Functions source (gke auth, gcpsm: secrets): {summary}")
    unpacked = tmp_path / "source"
    with zipfile.ZipFile(archive) as source:
        names = set(source.namelist())
        source.extractall(unpacked)
    required = requirement_names((unpacked / "requirements.txt").read_text())
    assert {"functions-framework", "google-auth", "requests", "pydantic", "httpx", "pyyaml"} <= required
    assert not required & {"boto3", "botocore", "s3transfer", "kubernetes", "cryptography", "outpost"}, required
    assert {"main.py", "requirements.txt", "functions/apiserver_health/main.py", "infra/environments/stage1.yaml",
            "outpost/runtime/gcf.py"} <= names, summary
    # Only the product is vendored: Cloud Functions installs requirements.txt itself.
    assert top_level(names) - {"main", "requirements.txt", "functions", "infra"} == {
        "outpost", *{"/".join(name.split("/")[:2]) for name in names if name.startswith("outpost/")}}, summary
    assert not top_level(names) & SANDBOX, summary
    # The generated main.py exports the check's HTTP target under the name the deployment's --entry-point
    # uses, and the functions-framework serves it from the source (a PUT is answered without touching a cluster).
    probe = ("import sys; sys.path.insert(0, '.'); import functions_framework, main, outpost; "
             "app = functions_framework.create_app(target='apiserver_health', source='main.py'); "
             "print(main.apiserver_health.__name__, outpost.__file__, app.test_client().put('/').status_code)")
    process = subprocess.run([sys.executable, "-c", probe], cwd=unpacked, capture_output=True, text=True,
                             env={"OUTPOST_CONFIG": "infra/environments/stage1.yaml", "PATH": os.environ["PATH"]},
                             check=False, timeout=120)
    assert process.returncode == 0, process.stderr
    assert process.stdout.split() == ["http_apiserver_health", str(unpacked / "outpost" / "__init__.py"), "405"]


def test_cloud_functions_source_keeps_the_aws_sdk_when_the_environment_reads_ssm(tmp_path: Path) -> None:
    target = build("stage1", tmp_path / "out", platform="gcf", root=source_project(tmp_path, GOOD))
    with zipfile.ZipFile(target / "outpost-stage1-gcf.zip") as source:
        required = requirement_names(source.read("requirements.txt").decode())
    assert {"boto3", "functions-framework"} <= required
    assert not required & {"kubernetes", "google-auth"}, required


@pytest.mark.parametrize(
    ("auth", "references", "platform", "extras"),
    [
        ({"mode": "token", "server": "https://k", "token": "env:T"}, {}, "aws-arm64", []),
        ({"mode": "token", "server": "https://k", "token": "secretsmanager:outpost/t#token"}, {}, "host", ["aws"]),
        ({"mode": "eks", "cluster_name": "c", "region": "eu-west-1", "server": "https://k", "ca_data": "Q0E="},
         {}, "gcf", ["aws", "cloudfunctions"]),
        ({"mode": "kubeconfig"}, {"vigilmon": {"api_key": "gcpsm:projects/p/secrets/k"}}, "aws-x86_64",
         ["gcp"]),
        ({"mode": "gke", "server": "https://k", "ca_data": "Q0E="}, {}, "gcf", ["gcp", "cloudfunctions"]),
    ],
)
def test_required_extras_follow_auth_mode_secret_references_and_platform(
    auth: dict[str, object], references: dict[str, object], platform: str, extras: list[str]
) -> None:
    settings = parse_settings({"environment": "e", "cluster": {"name": "c", "auth": auth}, **references,
                               "checks": {"apiserver-health": {}}})
    assert required_extras(settings, platform) == extras


@pytest.mark.parametrize(
    ("checks", "extras"),
    [
        ({"apiserver-health": {}, "apiserver-latency": {}, "apiserver-triage": {}}, []),
        ({"apiserver-cert-expiry": {}}, ["certificates"]),
        ({"webhook-cert-expiry": {}, "apiserver-cert-expiry": {}}, ["certificates"]),
        ({"webhook-cert-expiry": {"enabled": False}}, []),
    ],
)
def test_certificates_extra_only_when_a_certificate_check_is_enabled(checks: dict[str, object],
                                                                     extras: list[str]) -> None:
    settings = parse_settings({"environment": "e", "cluster": {"name": "c", "auth": {"mode": "kubeconfig"}},
                               "checks": checks})
    assert required_extras(settings, "aws-arm64") == extras


def test_sandbox_and_cloud_functions_server_are_refused_by_name() -> None:
    names = ["outpost/runner.py", "outpost/sandbox/cluster.py", "outpost_sandbox/__init__.py",
             "outpost_sandbox-0.1.0.dist-info/METADATA", "flask/app.py", "werkzeug-3.1.9.dist-info/METADATA",
             "boto3/session.py"]
    assert forbidden_entries(names, "aws-arm64") == [
        "flask", "outpost/sandbox", "outpost_sandbox", "outpost_sandbox-0.1.0.dist-info",
        "werkzeug-3.1.9.dist-info"]
    assert forbidden_entries(names, "gcf") == ["outpost/sandbox", "outpost_sandbox",
                                               "outpost_sandbox-0.1.0.dist-info"]


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
