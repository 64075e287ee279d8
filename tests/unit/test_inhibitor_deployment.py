"""The inhibitor is deployed with hold-back, and only it reads the Vigilmon API key (docs/contracts.md "Hold-back").

AWS: the Serverless sections (`outpost.tooling.packaging.aws`) give it a function of its own (no schedule, no
URL, no retry, a minute's event age, a timeout for opening and rolling back its windows) under a role of its own
that reads exactly the API key; the checks' role reads exactly the checks' secrets and may invoke the inhibitor.
Google Cloud: infra/gcp's variables (`outpost.tooling.packaging.cloudfunctions`) split the secrets between the
runtime and the inhibitor accounts. The checks' functions find the inhibitor by name (AWS) or by the URI
infra/gcp gives them (`$OUTPOST_INHIBITOR_URL`).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from outpost.config import Settings
from outpost.deploy import inhibitor_timeout_seconds
from outpost.holdback.senders import INHIBITOR_URL_ENV, HttpSender, sender_for
from outpost.settings import load_settings
from outpost.tooling.packaging.aws import INHIBITOR_ROLE, function_definitions, iam_statements, resources
from outpost.tooling.packaging.cloudfunctions import cloud_functions_main, terraform_variables
from outpost.tooling.packaging.platforms import entry_functions

KEY_SSM = "ssm:/outpost/stage1/vigilmon-api-key"
AWS: dict[str, Any] = {
    "environment": "stage1",
    "deploy": {"platform": "aws", "region": "eu-west-1"},
    "cluster": {
        "name": "c",
        "auth": {
            "mode": "token",
            "server": "https://k8s.example.test",
            "token": "secretsmanager:outpost/stage1/cluster",
            "ca_data": "Q0E=",
        },
    },
    "vigilmon": {"api_key": KEY_SSM, "channels": {"page": ["pagerduty"], "notify": ["slack"]}},
    "hold_back": {"enabled": True},
    "checks": {
        "apiserver-health": {"heartbeat": "ssm:/outpost/stage1/heartbeat/apiserver-health", "monitor_id": "1"},
        "koord-manager-health": {"heartbeat": "ssm:/outpost/stage1/heartbeat/koord-manager-health", "monitor_id": "2"},
    },
}
GCP: dict[str, Any] = {
    **AWS,
    "deploy": {"platform": "gcf", "region": "europe-west1", "project": "outpost-example"},
    "cluster": {"name": "c", "auth": {"mode": "gke", "server": "https://k", "ca_data": "Q0E="}},
    "vigilmon": {
        "api_key": "gcpsm:projects/p/secrets/key/versions/3",
        "channels": {"page": ["pagerduty"], "notify": ["slack"]},
    },
    "checks": {
        "apiserver-health": {"heartbeat": "gcpsm:projects/p/secrets/hb-api", "monitor_id": "1"},
        "koord-manager-health": {"heartbeat": "gcpsm:projects/p/secrets/hb-km", "monitor_id": "2"},
    },
}


def load(tmp_path: Path, document: dict[str, Any], **changes: Any) -> Settings:
    changed = copy.deepcopy(document)
    changed.update(changes)
    path = tmp_path / f"{changed['environment']}.yaml"
    path.write_text(yaml.safe_dump(changed))
    return load_settings(path)


def granted(statements: list[dict[str, Any]], action: str) -> list[str]:
    """The resources of the statements allowing `action`, as the ARN templates they are."""
    found: list[str] = []
    for statement in statements:
        if action in statement["Action"]:
            assert statement["Effect"] == "Allow"
            resources_ = statement["Resource"]
            for resource in resources_ if isinstance(resources_, list) else [resources_]:
                found.append(resource["Fn::Sub"] if isinstance(resource, dict) else resource)
    return found


ACCOUNT = "arn:${AWS::Partition}:%s:${AWS::Region}:${AWS::AccountId}"


@pytest.mark.parametrize("hold_back", [True, False], ids=["hold-back on", "hold-back off"])
def test_the_checks_role_reads_exactly_the_checks_secrets_and_never_the_api_key(
    tmp_path: Path, hold_back: bool
) -> None:
    settings = load(tmp_path, AWS, hold_back={"enabled": hold_back})
    statements = iam_statements(settings)
    assert sorted(granted(statements, "ssm:GetParameter")) == [
        (ACCOUNT % "ssm") + ":parameter/outpost/stage1/heartbeat/apiserver-health",
        (ACCOUNT % "ssm") + ":parameter/outpost/stage1/heartbeat/koord-manager-health",
    ]
    # Secrets Manager appends six characters to a secret's ARN: the name, a hyphen and six characters.
    assert granted(statements, "secretsmanager:GetSecretValue") == [
        (ACCOUNT % "secretsmanager") + ":secret:outpost/stage1/cluster-??????"
    ]
    assert not any("vigilmon-api-key" in arn for arn in granted(statements, "ssm:GetParameter"))
    invoke = granted(statements, "lambda:InvokeFunction")
    assert invoke == ([(ACCOUNT % "lambda") + ":function:outpost-stage1-inhibitor"] if hold_back else [])


def test_a_secret_given_as_an_arn_is_granted_by_that_arn(tmp_path: Path) -> None:
    arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:outpost/stage1/cluster-AbCdEf"
    settings = load(
        tmp_path, AWS, cluster={**AWS["cluster"], "auth": {**AWS["cluster"]["auth"], "token": f"secretsmanager:{arn}"}}
    )
    assert granted(iam_statements(settings), "secretsmanager:GetSecretValue") == [
        (ACCOUNT % "secretsmanager") + ":secret:outpost/stage1/cluster-AbCdEf*"
    ]


def test_the_inhibitor_has_a_function_of_its_own_invoked_only_by_the_checks(tmp_path: Path) -> None:
    settings = load(tmp_path, AWS)
    functions = function_definitions(settings)
    assert list(functions) == [*settings.enabled_checks(), "inhibitor"]
    inhibitor = functions["inhibitor"]
    assert inhibitor["handler"] == "functions/inhibitor/main.handler"
    assert not {"events", "url"} & set(inhibitor)  # no schedule, no Function URL
    assert (inhibitor["maximumRetryAttempts"], inhibitor["maximumEventAge"]) == (0, 60)
    assert inhibitor["role"] == {"Fn::Sub": "${InhibitorIamRole.Arn}"}
    # Default heartbeat: 10 s x 4 attempts + 0.5 + 1 + 2 s of backoff + 1 s of margin = 44.5 s per Vigilmon
    # client (the windows', then the rollback's), + 5 s.
    assert inhibitor["timeout"] == inhibitor_timeout_seconds(settings) == 94
    assert "inhibitor" not in function_definitions(load(tmp_path, AWS, hold_back={"enabled": False}))


@pytest.mark.parametrize(
    ("kms", "expected_kms"),
    [(None, None), ("arn:aws:kms:eu-west-1:123456789012:key/k", "arn:aws:kms:eu-west-1:123456789012:key/k")],
    ids=["no key", "a customer-managed key"],
)
def test_the_inhibitors_role_reads_the_api_key_alone(tmp_path: Path, kms: str | None, expected_kms: str | None) -> None:
    settings = load(tmp_path, AWS, deploy={**AWS["deploy"], **({"kms_key_arn": kms} if kms else {})})
    stack = resources(settings)["Resources"]
    role = stack[INHIBITOR_ROLE]
    assert role["Type"] == "AWS::IAM::Role"
    assert role["Properties"]["RoleName"] == "outpost-stage1-eu-west-1-inhibitorRole"
    trust = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust == [
        {"Effect": "Allow", "Principal": {"Service": ["lambda.amazonaws.com"]}, "Action": ["sts:AssumeRole"]}
    ]
    (policy,) = role["Properties"]["Policies"]
    statements = policy["PolicyDocument"]["Statement"]
    assert granted(statements, "ssm:GetParameter") == [(ACCOUNT % "ssm") + ":parameter/outpost/stage1/vigilmon-api-key"]
    assert granted(statements, "secretsmanager:GetSecretValue") == []
    assert granted(statements, "kms:Decrypt") == ([expected_kms] if expected_kms else [])
    group = (ACCOUNT % "logs") + ":log-group:/aws/lambda/outpost-stage1-inhibitor"
    assert granted(statements, "logs:CreateLogStream") == [f"{group}:*"]
    assert granted(statements, "logs:PutLogEvents") == [f"{group}:*:*"]
    every_action = {action for statement in statements for action in statement["Action"]}
    assert every_action == {
        "logs:CreateLogStream",
        "logs:CreateLogGroup",
        "logs:PutLogEvents",
        "ssm:GetParameter",
        *(["kms:Decrypt"] if kms else []),
    }
    assert INHIBITOR_ROLE not in resources(load(tmp_path, AWS, hold_back={"enabled": False}))["Resources"]


@pytest.mark.parametrize("hold_back", [True, False], ids=["hold-back on", "hold-back off"])
def test_google_cloud_splits_the_secrets_between_the_runtime_and_the_inhibitor(tmp_path: Path, hold_back: bool) -> None:
    settings = load(tmp_path, GCP, hold_back={"enabled": hold_back})
    variables = terraform_variables(settings, "../../build/x.zip", "0" * 64)
    assert variables["secrets"] == ["projects/p/secrets/hb-api", "projects/p/secrets/hb-km"]
    if not hold_back:
        assert (variables["inhibitor_secrets"], variables["inhibitor"]) == ([], None)
        return
    assert variables["inhibitor_secrets"] == ["projects/p/secrets/key"]
    assert variables["inhibitor"] == {
        "function_name": "outpost-stage1-inhibitor",
        "description": "Outpost inhibitor (stage1): holds back the dependants of a failing check",
        "entry_point": "inhibitor",
        "account_id": "outpost-stage1-hold",
        "timeout_seconds": inhibitor_timeout_seconds(settings),
        "schedule": None,  # no recurring maintenance window: nothing ticks it
        "attempt_deadline_seconds": inhibitor_timeout_seconds(settings) + 30,
        "tick_body": '{"environment": "stage1", "tick": "maintenance-windows"}',
    }


def test_the_bundle_serves_the_inhibitor_only_with_hold_back(tmp_path: Path) -> None:
    settings = load(tmp_path, GCP)
    assert entry_functions(settings) == [*settings.enabled_checks(), "inhibitor"]
    main = cloud_functions_main(settings)
    modules = json.loads(main.split("ENTRY_MODULES = ", 1)[1].split("\n\n", 1)[0])
    assert modules["inhibitor"] == "functions.inhibitor.main"
    off = load(tmp_path, GCP, hold_back={"enabled": False})
    assert entry_functions(off) == off.enabled_checks()
    off_main = cloud_functions_main(off)
    assert "inhibitor" not in json.loads(off_main.split("ENTRY_MODULES = ", 1)[1].split("\n\n", 1)[0])


@pytest.mark.parametrize(
    ("configured", "environ", "expected"),
    [
        (None, {INHIBITOR_URL_ENV: "https://inhibitor.run.app"}, "https://inhibitor.run.app"),
        (
            "https://configured.example.test",
            {INHIBITOR_URL_ENV: "https://inhibitor.run.app"},
            "https://configured.example.test",
        ),
        (None, {}, None),
    ],
    ids=["infra/gcp's URI", "the file's URI wins", "none: nothing is held back"],
)
def test_a_cloud_functions_check_finds_the_inhibitor_by_the_uri_infra_gcp_gives_it(
    tmp_path: Path, configured: str | None, environ: dict[str, str], expected: str | None
) -> None:
    hold_back = {"enabled": True, **({"inhibitor_url": configured} if configured else {})}
    sender = sender_for(load(tmp_path, GCP, hold_back=hold_back), "gcf", environ)
    assert (sender.url if isinstance(sender, HttpSender) else sender) == expected


WINDOW = {"name": "nightly", "cron": "0 2 * * *", "minutes": 60, "checks": ["apiserver-health"]}


@pytest.mark.parametrize("document", [AWS, GCP], ids=["aws", "gcp"])
def test_recurring_windows_deploy_the_inhibitor_on_a_schedule_even_without_hold_back(
    tmp_path: Path, document: dict[str, Any]
) -> None:
    settings = load(tmp_path, document, hold_back={"enabled": False}, maintenance_windows=[WINDOW])
    assert entry_functions(settings)[-1] == "inhibitor"
    if document is AWS:
        inhibitor = function_definitions(settings)["inhibitor"]
        assert inhibitor["events"] == [{"schedule": {"rate": ["rate(1 minute)"]}}]
        # It reads the API key; the checks may not invoke it (they ask nothing without hold-back).
        role = resources(settings)["Resources"][INHIBITOR_ROLE]["Properties"]["Policies"][0]["PolicyDocument"]
        assert granted(role["Statement"], "ssm:GetParameter") == [
            (ACCOUNT % "ssm") + ":parameter/outpost/stage1/vigilmon-api-key"
        ]
        assert granted(iam_statements(settings), "lambda:InvokeFunction") == []
    else:
        variables = terraform_variables(settings, "../../build/x.zip", "0" * 64)
        assert variables["inhibitor"]["schedule"] == "* * * * *"
        assert variables["inhibitor_secrets"] == ["projects/p/secrets/key"]
