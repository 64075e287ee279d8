"""Deployable environments are complete or refused, every bad field named by its path (outpost.deploy), and the
Vigilmon monitors as code follow the schedules (outpost.tooling.monitors).

The refusals go through `load_settings`, the one loader behind `outpost validate`, `outpost package` and every
cold start. The monitors are checked over every check the registry holds, not a list of names.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from outpost import cli, registry
from outpost.config import environment_file
from outpost.deploy import (
    cron_schedule,
    function_timeout_seconds,
    monitor_margin_seconds,
    run_seconds,
    run_worst_case_seconds,
)
from outpost.errors import ConfigError
from outpost.settings import load_settings
from outpost.tooling.monitors import LAYER_GROUPS, document, render
from outpost.tooling.packaging.aws import logical_id, resources
from outpost.tooling.packaging.platforms import entry_functions

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = ("dev", "staging", "prod", "gcp-dev")

DEPLOYABLE: dict[str, Any] = {
    "environment": "stage1",
    "deploy": {"platform": "aws", "region": "eu-west-1"},
    "cluster": {
        "name": "c",
        "auth": {
            "mode": "token",
            "server": "https://k8s.example.test",
            "token": "ssm:/outpost/stage1/token",
            "ca_data": "Q0E=",
        },
    },
    "vigilmon": {
        "api_key": "secretsmanager:outpost/stage1/vigilmon#key",
        "channels": {"page": ["pagerduty"], "notify": ["slack-platform-eng"]},
    },
    "checks": {"apiserver-health": {"heartbeat": "ssm:/outpost/stage1/heartbeat/apiserver-health", "monitor_id": "42"}},
}
EKS = {"mode": "eks", "cluster_name": "c", "region": "eu-west-1", "server": "https://k", "ca_data": "Q0E="}


def write(directory: Path, document: dict[str, Any], name: str | None = None) -> Path:
    path = directory / f"{name or document['environment']}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def changed(path: str, value: Any) -> dict[str, Any]:
    """DEPLOYABLE with the dotted `path` set to `value` (None deletes it)."""
    document = copy.deepcopy(DEPLOYABLE)
    *parents, last = path.split(".")
    node = document
    for part in parents:
        node = node.setdefault(part, {})
    if value is None:
        node.pop(last, None)
    else:
        node[last] = value
    return document


def on_gcf(**deploy: str) -> dict[str, Any]:
    """DEPLOYABLE moved to Cloud Functions in europe-west1, with the `deploy` fields given."""
    return changed("deploy", {"platform": "gcf", "region": "europe-west1", **deploy})


def renamed(environment: str) -> dict[str, Any]:
    """DEPLOYABLE for another environment name (its secret references moved into that stage's scope)."""
    renamed: dict[str, Any] = yaml.safe_load(yaml.safe_dump(DEPLOYABLE).replace("stage1", environment))
    return renamed


def test_the_deployable_base_case_is_valid(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, DEPLOYABLE))
    assert settings.deploy is not None
    assert settings.deploy.platform == "aws"


HB = "checks.apiserver-health.heartbeat"

REFUSED = [
    ("no heartbeat", changed(HB, None), f"{HB}: required for a deployed check"),
    ("no monitor", changed("checks.apiserver-health.monitor_id", None), "checks.apiserver-health.monitor_id: required"),
    ("critical check cannot page", changed("vigilmon.channels.page", []), "vigilmon.channels.page: required"),
    ("nothing notifies", changed("vigilmon.channels.notify", []), "vigilmon.channels.notify: required"),
    ("no check enabled", changed("checks", {}), "checks: a deployable environment enables at least one check"),
    ("env: secret on Lambda", changed(HB, "env:HEARTBEAT"), f"{HB}: env: references cannot be read on aws"),
    (
        "gcpsm: secret on Lambda",
        changed("vigilmon.api_key", "gcpsm:projects/p/secrets/k"),
        "vigilmon.api_key: gcpsm: references cannot be read on aws",
    ),
    (
        "ssm: outside the stage's scope",
        changed(HB, "ssm:/outpost/prod/heartbeat/x"),
        f"{HB}: ssm: name is outside the stage's IAM scope: it must start with /outpost/stage1/",
    ),
    (
        "ssm: name without the leading slash",
        changed(HB, "ssm:outpost/stage1/heartbeat"),
        f"{HB}: ssm: name is outside the stage's IAM scope",
    ),
    (
        "secretsmanager: outside the stage's scope",
        changed("vigilmon.api_key", "secretsmanager:shared/vigilmon"),
        "vigilmon.api_key: secretsmanager: name is outside the stage's IAM scope: it must start with outpost/stage1/",
    ),
    (
        "secretsmanager: ARN in another region",
        changed(
            "vigilmon.api_key",
            "secretsmanager:arn:aws:secretsmanager:us-east-1:123456789012:secret:outpost/stage1/v-AbCdEf",
        ),
        "vigilmon.api_key: secretsmanager: ARN is in region us-east-1, the stage deploys to eu-west-1",
    ),
    (
        "cluster token outside the scope",
        changed("cluster.auth.token", "ssm:/k8s/token"),
        "cluster.auth.token: ssm: name is outside the stage's IAM scope",
    ),
    (
        "kubeconfig auth on Lambda",
        changed("cluster.auth", {"mode": "kubeconfig", "path": "~/.kube/config"}),
        "cluster.auth.mode: kubeconfig cannot authenticate on aws (a kubeconfig file and its exec credential plugins",
    ),
    (
        "gke auth on Lambda",
        changed("cluster.auth", {"mode": "gke", "server": "https://k", "ca_data": "Q0E="}),
        "cluster.auth.mode: gke cannot authenticate on aws",
    ),
    ("CA file on this machine", changed("cluster.auth.ca_file", "/etc/ca.crt"), "cluster.auth.ca_file: "),
    (
        "role_arn that is no role",
        changed("cluster.auth", {**EKS, "role_arn": "arn:aws:iam::123456789012:user/u"}),
        "cluster.auth.role_arn: not an IAM role ARN",
    ),
    (
        "KMS alias",
        changed("deploy.kms_key_arn", "arn:aws:kms:eu-west-1:123456789012:alias/outpost"),
        "deploy.kms_key_arn: not a KMS key ARN",
    ),
    (
        "KMS key in another region",
        changed("deploy.kms_key_arn", "arn:aws:kms:us-east-1:123456789012:key/1234"),
        "deploy.kms_key_arn: key is in region us-east-1",
    ),
    (
        "failure destination of the wrong kind",
        changed("deploy.failure_destination", "arn:aws:s3:::bucket"),
        "deploy.failure_destination: not the ARN of a sqs, sns, lambda, events destination",
    ),
    ("region name", changed("deploy.region", "europe-west1"), "deploy.region: not a aws region name"),
    ("unknown deploy field", changed("deploy.memory", 512), "deploy.memory: Extra inputs are not permitted"),
    ("unknown platform", changed("deploy.platform", "azure"), "deploy.platform: Input should be 'aws' or 'gcf'"),
    (
        "run longer than Lambda allows",
        changed("cluster.deadline_seconds", 840)
        | {"heartbeat": {"timeout_seconds": 20, "retries": 3, "backoff_seconds": 1}},
        "cluster.deadline_seconds: deadline + heartbeat worst case (timeout x (1 + retries) + backoffs) = 928 s",
    ),
    (
        "ssm: on Cloud Functions",
        on_gcf(),
        f"{HB}: ssm: references cannot be read on gcf (gcf functions have no credentials for that store)",
    ),
    (
        "eks auth on Cloud Functions",
        on_gcf() | {"cluster": {"name": "c", "auth": EKS}},
        "cluster.auth.mode: eks cannot authenticate on gcf",
    ),
    ("architecture on Cloud Functions", on_gcf(architecture="x86_64"), "deploy.architecture: AWS only"),
    ("no project on Cloud Functions", on_gcf(), "deploy.project: required on gcf"),
    ("project id shape", on_gcf(project="My_Project"), "deploy.project: not a Google Cloud project id"),
    ("project on AWS", changed("deploy.project", "outpost-example"), "deploy.project: Cloud Functions only"),
    (
        "a period cron cannot keep",
        on_gcf(project="outpost-example")
        | {
            "checks": {
                "apiserver-health": {
                    "schedule_minutes": 7,
                    "heartbeat": "gcpsm:projects/p/secrets/h",
                    "monitor_id": "1",
                }
            }
        },
        "checks.apiserver-health.schedule_minutes: 7 cannot be a Cloud Scheduler cron period",
    ),
    (
        "the API key in a check's secret (Secrets Manager, another JSON key)",
        changed(HB, "secretsmanager:outpost/stage1/vigilmon#heartbeat"),
        f"{HB}: the same secretsmanager secret as vigilmon.api_key (or a name it begins with): the checks' identity "
        "would read the API key",
    ),
    (
        "the API key's name begins with a check's secret (its grant ends in a wildcard)",
        changed(HB, "secretsmanager:outpost/stage1/vig"),
        f"{HB}: the same secretsmanager secret as vigilmon.api_key",
    ),
    (
        "the API key is a check's SSM parameter",
        changed("vigilmon.api_key", "ssm:/outpost/stage1/token"),
        "cluster.auth.token: the same ssm secret as vigilmon.api_key",
    ),
    (
        "a check's own cluster_auth token is in the stage's scope too",
        changed(
            "checks.apiserver-health.cluster_auth",
            {"mode": "token", "server": "https://k8s.example.test", "token": "ssm:/shared/token", "ca_data": "Q0E="},
        ),
        "checks.apiserver-health.cluster_auth.token: ssm: name is outside the stage's IAM scope",
    ),
    (
        "the API key in a check's Secret Manager secret (another version)",
        on_gcf(project="outpost-example")
        | {
            "cluster": {"name": "c", "auth": {"mode": "gke", "server": "https://k", "ca_data": "Q0E="}},
            "vigilmon": {
                "api_key": "gcpsm:projects/p/secrets/shared/versions/2",
                "channels": {"page": ["pagerduty"], "notify": ["slack"]},
            },
            "checks": {"apiserver-health": {"heartbeat": "gcpsm:projects/p/secrets/shared", "monitor_id": "1"}},
        },
        f"{HB}: the same gcpsm secret as vigilmon.api_key",
    ),
    (
        "more parent schedules than a Cloud Monitoring policy has conditions for",
        on_gcf(project="outpost-example")
        | {
            "vigilmon": {
                "api_key": "gcpsm:projects/p/secrets/vigilmon-key",
                "channels": DEPLOYABLE["vigilmon"]["channels"],
            },
            "hold_back": {"enabled": True},
            "checks": {
                name: {"schedule_minutes": minutes, "heartbeat": f"gcpsm:projects/p/secrets/{name}", "monitor_id": name}
                for name, minutes in [
                    ("apiserver-health", 1),
                    ("apiserver-triage", 2),
                    ("koord-manager-health", 3),
                    ("koord-webhook", 4),
                    ("kruise-manager-health", 5),
                    ("kruise-webhook", 6),
                    ("admission-dry-run", 10),
                ]
            },
        },
        "checks.admission-dry-run: held back by checks with 6 different schedule and tolerance pairs (every 1 min, 3 "
        "runs: apiserver-health; every 2 min, 3 runs: apiserver-triage; ",
    ),
    (
        "inhibitor service account id too long",
        renamed("e" + "x" * 17)
        | {
            "deploy": {"platform": "gcf", "region": "europe-west1", "project": "outpost-example"},
            "hold_back": {"enabled": True},
        },
        "environment: the inhibitor service account id 'outpost-exxxxxxxxxxxxxxxxx-hold' would be 31 "
        "characters (limit 30); environment names of at most 17 characters fit",
    ),
    (
        "service account id too long",
        renamed("e" + "x" * 16)
        | {"deploy": {"platform": "gcf", "region": "europe-west1", "project": "outpost-example"}},
        "environment: the invoker service account id 'outpost-exxxxxxxxxxxxxxxx-invoke' would be 32 characters "
        "(limit 30); environment names of at most 15 characters fit",
    ),
]


@pytest.mark.parametrize(
    ("minutes", "cron"),
    [
        (1, "* * * * *"),
        (5, "*/5 * * * *"),
        (30, "*/30 * * * *"),
        (60, "0 * * * *"),
        (120, "0 */2 * * *"),
        (1440, "0 0 * * *"),
        (7, None),
        (90, None),
        (300, None),
    ],
)
def test_cloud_scheduler_cron_runs_every_period_evenly_or_refuses(minutes: int, cron: str | None) -> None:
    assert cron_schedule(minutes) == cron


@pytest.mark.parametrize(("case", "document", "expected"), REFUSED, ids=[case for case, _, _ in REFUSED])
def test_an_incomplete_deployable_environment_is_refused_with_the_path(
    tmp_path: Path, case: str, document: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, document))
    assert any(problem.startswith(expected) for problem in caught.value.problems), (case, caught.value.problems)


def test_the_environment_name_must_match_its_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, DEPLOYABLE, name="other"))
    assert caught.value.problems == [
        "environment: 'stage1' must match its file name 'other.yaml' (a stage deploys infra/environments/<stage>.yaml)"
    ]


def test_local_is_never_deployable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, renamed("local")))
    assert any(p.startswith("deploy: environment 'local' is for local runs only") for p in caught.value.problems)


def test_local_stays_valid_for_local_runs() -> None:
    settings = load_settings(environment_file("local", REPO))
    assert settings.deploy is None


def test_a_long_environment_name_is_refused_by_the_names_it_would_generate(tmp_path: Path) -> None:
    name = "e" + "x" * 38  # 39 characters: the IAM role name would be 68
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, renamed(name)))
    role = f"outpost-{name}-eu-west-1-lambdaRole"
    assert (
        f"environment: the IAM role name {role!r} would be 68 characters (limit 64); environment names of at "
        "most 35 characters fit"
    ) in caught.value.problems
    # outpost-<39>-apiserver-health is exactly 64 characters: the function name itself still fits.
    assert not [p for p in caught.value.problems if "Lambda function name" in p]
    # The longest name that fits every generated name for this region and check passes.
    fits = "e" + "x" * 34
    assert load_settings(write(tmp_path, renamed(fits))).environment == fits


def test_every_refusal_at_once_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = changed(HB, "env:HEARTBEAT")
    document["checks"]["apiserver-health"].pop("monitor_id")
    document["cluster"]["auth"] = {"mode": "kubeconfig"}
    assert cli.main(["validate", "--config", str(write(tmp_path, document))]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    for path in (f"{HB}: env:", "checks.apiserver-health.monitor_id:", "cluster.auth.mode: kubeconfig"):
        assert f"  {path}" in err, err


@pytest.mark.parametrize("environment", EXAMPLES)
def test_example_environments_are_deployable_with_derived_timeouts(environment: str) -> None:
    settings = load_settings(environment_file(environment, REPO))
    assert settings.deploy is not None
    assert settings.deploy.platform == ("gcf" if environment.startswith("gcp-") else "aws")
    assert settings.enabled_checks(), "an example enables at least one check"
    assert function_timeout_seconds(settings) >= run_worst_case_seconds(settings) + 5


@pytest.mark.parametrize("environment", [name for name in EXAMPLES if not name.startswith("gcp-")])
def test_log_groups_outlive_the_stage(environment: str) -> None:
    """`serverless remove` (DeletionPolicy) and a replacement (UpdateReplacePolicy) keep every function's log group:
    the run history is kept until serverless.yml's logRetentionInDays expires it."""
    settings = load_settings(environment_file(environment, REPO))
    assert resources(settings)["extensions"] == {
        f"{logical_id(name)}LogGroup": {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}
        for name in entry_functions(settings)  # the inhibitor's too, with hold-back
    }


def every_check_enabled() -> dict[str, Any]:
    """A deployable environment enabling every check of the registry, schedules and misses varied; a check
    with required parameters (e.g. ls-latency's endpoints) gets those of the local environment."""
    local = yaml.safe_load(environment_file("local", REPO).read_text())["checks"]
    document = copy.deepcopy(DEPLOYABLE)
    document["checks"] = {
        name: {
            "heartbeat": f"ssm:/outpost/stage1/heartbeat/{name}",
            "monitor_id": str(index),
            "schedule_minutes": 1 + index % 7,
            "tolerated_misses": 1 + index % 3,
            **({"params": local[name]["params"]} if "params" in (local.get(name) or {}) else {}),
        }
        for index, name in enumerate(registry.names())
    }
    return document


def test_monitors_cover_every_enabled_check_with_grace_from_the_schedule(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, every_check_enabled()))
    margin = monitor_margin_seconds(settings)
    assert margin >= 60
    assert margin % 60 == 0
    assert margin >= run_seconds(settings)
    data = document(settings)
    monitors = {m["check"]: m for m in data["monitors"]}
    assert list(monitors) == settings.enabled_checks()
    for name, monitor in monitors.items():
        configured = settings.checks[name]
        spec = registry.get(name)
        assert monitor["name"] == f"outpost-stage1-{name}"
        assert monitor["heartbeat"] == configured.heartbeat  # the reference, never a URL
        assert monitor["interval_seconds"] == (configured.schedule_minutes or 0) * 60
        assert monitor["grace_seconds"] == monitor["interval_seconds"] * configured.tolerated_misses + margin
        assert monitor["severity"] == spec.severity
        expected = ["pagerduty", "slack-platform-eng"] if spec.severity == "critical" else ["slack-platform-eng"]
        assert monitor["alert_channels"] == expected
        assert monitor["group"] == LAYER_GROUPS[spec.layer]
        # The person paged reads what fails it, each way it fails, and where the next command is.
        assert spec.fails_when in monitor["description"]
        assert all(entry.title[1:] in monitor["description"] for entry in spec.runbooks)
        assert f"docs/runbooks.md#{name}" in monitor["description"]
    grouped = {name for group in data["status_page"]["groups"] for name in group["monitors"]}
    assert grouped == {m["name"] for m in data["monitors"]}
    order = [group["name"] for group in data["status_page"]["groups"]]
    assert order == [group for group in LAYER_GROUPS.values() if group in order]


def test_monitors_override_severity_and_default_schedule(tmp_path: Path) -> None:
    document = copy.deepcopy(DEPLOYABLE)
    document["checks"]["apiserver-health"] |= {"severity": "warning"}
    data = document_of(tmp_path, document)
    (monitor,) = data["monitors"]
    assert monitor["severity"] == "warning"
    assert monitor["alert_channels"] == ["slack-platform-eng"]
    assert monitor["interval_seconds"] == registry.get("apiserver-health").schedule_minutes * 60


def document_of(tmp_path: Path, source: dict[str, Any]) -> dict[str, Any]:
    return document(load_settings(write(tmp_path, source)))


@pytest.mark.parametrize("environment", EXAMPLES)
def test_outpost_monitors_prints_yaml_and_json_without_a_secret(
    environment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["monitors", "--env", environment]) == 0
    as_yaml = yaml.safe_load(capsys.readouterr().out)
    assert cli.main(["monitors", "--env", environment, "--format", "json"]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert as_yaml == as_json
    settings = load_settings(environment_file(environment, REPO))
    assert [m["check"] for m in as_json["monitors"]] == settings.enabled_checks()
    assert "https://" not in json.dumps(as_json["monitors"])  # heartbeat references only
    assert render(settings, "yaml").startswith("# Vigilmon monitors of environment")
