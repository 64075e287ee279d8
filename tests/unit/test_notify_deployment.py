"""The notifier is deployed with `messages.enabled` only, beside every acting alarm's own actions, under an identity
that reads the checks' run lines and publishes to the messages topic, nothing else (docs/contracts.md "Cloud alarms").

AWS: the Serverless sections (`outpost.tooling.packaging.aws`): a function of its own (no schedule, URL or retry),
its role, the resource policy CloudWatch alarms invoke it through, the notifier's ARN in the AlarmActions and
OKActions of every alarm that acts (the plain ones and, held back, the composite ones) after the tier's topic, and
the `MessagesTopic` rule; cfn-lint (informational rules included) on them. Google Cloud: infra/gcp's `notifier`
variable and the generated main.py's entry point. The deploy rules name `messages.*` by path.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from cfnlint.api import ManualArgs, lint

from outpost.config import Settings
from outpost.deploy import notifier_service_account, notifier_timeout_seconds
from outpost.errors import ConfigError
from outpost.settings import load_settings
from outpost.tooling.packaging.aws import (
    ALARMS_PRINCIPAL,
    MAX_ALARM_ACTIONS,
    NOTIFIER_PERMISSION,
    NOTIFIER_ROLE,
    function_definitions,
    resources,
)
from outpost.tooling.packaging.cloudfunctions import cloud_functions_main, terraform_variables
from outpost.tooling.packaging.platforms import entry_functions

CHECKS = ("apiserver-health", "koord-manager-health", "koord-webhook", "koordlet-coverage", "nodemetric-freshness")
"""Checks that need no params, several depending on others (held back, their composite alarms act)."""
AWS: dict[str, Any] = {
    "environment": "stage1",
    "deploy": {"platform": "aws", "region": "eu-west-1"},
    "cluster": {
        "name": "c",
        "auth": {"mode": "token", "server": "https://k8s.example.test", "token": "ssm:/outpost/stage1/cluster"},
    },
    "vigilmon": {"api_key": "ssm:/outpost/stage1/vigilmon", "channels": {"page": ["pagerduty"], "notify": ["slack"]}},
    "messages": {"enabled": True},
    "checks": {
        name: {"heartbeat": f"ssm:/outpost/stage1/heartbeat/{name}", "monitor_id": str(index)}
        for index, name in enumerate(CHECKS)
    },
}
GCP: dict[str, Any] = {
    **AWS,
    "deploy": {"platform": "gcf", "region": "europe-west1", "project": "outpost-example"},
    "cluster": {"name": "c", "auth": {"mode": "gke", "server": "https://k", "ca_data": "Q0E="}},
    "vigilmon": {"api_key": "gcpsm:projects/p/secrets/key", "channels": {"page": ["pagerduty"], "notify": ["slack"]}},
    "checks": {
        name: {"heartbeat": f"gcpsm:projects/p/secrets/hb-{name}", "monitor_id": str(index)}
        for index, name in enumerate(CHECKS)
    },
}
ACCOUNT = "arn:${AWS::Partition}:%s:${AWS::Region}:${AWS::AccountId}"
NOTIFIER_ARN = {"Fn::GetAtt": ["NotifierLambdaFunction", "Arn"]}


def load(tmp_path: Path, document: dict[str, Any], **changes: Any) -> Settings:
    changed = copy.deepcopy(document)
    changed.update(changes)
    path = tmp_path / f"{changed['environment']}.yaml"
    path.write_text(yaml.safe_dump(changed))
    return load_settings(path)


def test_the_notifier_has_a_function_of_its_own_invoked_by_alarms_only(tmp_path: Path) -> None:
    settings = load(tmp_path, AWS)
    functions = function_definitions(settings)
    assert list(functions)[-1] == "notifier"
    notifier = functions["notifier"]
    assert notifier["handler"] == "functions/notifier/main.handler"
    assert not {"events", "url", "reservedConcurrency"} & set(notifier)  # no schedule, no Function URL
    assert (notifier["maximumRetryAttempts"], notifier["maximumEventAge"]) == (0, 900)
    assert notifier["role"] == {"Fn::Sub": "${NotifierIamRole.Arn}"}
    assert notifier["timeout"] == notifier_timeout_seconds(settings) == 25  # read 10 s + publish 10 s + 5 s
    assert notifier["environment"] == {
        "OUTPOST_MESSAGES_TOPIC": {"Ref": "MessagesTopicArn"},
        "OUTPOST_RUNBOOK_BASE_URL": {"Ref": "RunbookBaseUrl"},
    }
    assert "notifier" in entry_functions(settings)
    off = load(tmp_path, AWS, messages={"enabled": False})
    assert "notifier" not in function_definitions(off)
    assert "notifier" not in entry_functions(off)


def test_the_notifiers_role_reads_the_checks_log_groups_and_publishes_to_the_messages_topic_only(
    tmp_path: Path,
) -> None:
    settings = load(tmp_path, AWS)
    stack = resources(settings)
    role = stack["Resources"][NOTIFIER_ROLE]["Properties"]
    assert role["RoleName"] == "outpost-stage1-eu-west-1-notifierRole"
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": ["lambda.amazonaws.com"]}
    (policy,) = role["Policies"]
    statements = policy["PolicyDocument"]["Statement"]
    own = (ACCOUNT % "logs") + ":log-group:/aws/lambda/outpost-stage1-notifier"
    assert statements[:2] == [
        {
            "Effect": "Allow",
            "Action": ["logs:CreateLogStream", "logs:CreateLogGroup"],
            "Resource": {"Fn::Sub": f"{own}:*"},
        },
        {"Effect": "Allow", "Action": ["logs:PutLogEvents"], "Resource": {"Fn::Sub": f"{own}:*:*"}},
    ]
    assert statements[2] == {
        "Effect": "Allow",
        "Action": ["logs:FilterLogEvents"],
        "Resource": [
            {"Fn::Sub": (ACCOUNT % "logs") + f":log-group:/aws/lambda/outpost-stage1-{name}:*"}
            for name in settings.enabled_checks()
        ],
    }
    assert statements[3] == {
        "Fn::If": [
            "HasMessagesTopic",
            {"Effect": "Allow", "Action": ["sns:Publish"], "Resource": {"Ref": "MessagesTopicArn"}},
            {"Ref": "AWS::NoValue"},
        ]
    }
    assert len(statements) == 4  # no secret, no KMS, no other topic
    assert "secretsmanager" not in json.dumps(role)
    assert "ssm:" not in json.dumps(role)


def test_cloudwatch_alarms_of_the_stage_alone_may_invoke_the_notifier(tmp_path: Path) -> None:
    permission = resources(load(tmp_path, AWS))["Resources"][NOTIFIER_PERMISSION]
    assert permission == {
        "Type": "AWS::Lambda::Permission",
        "Properties": {
            "Action": "lambda:InvokeFunction",
            "FunctionName": NOTIFIER_ARN,
            "Principal": ALARMS_PRINCIPAL,
            "SourceAccount": {"Ref": "AWS::AccountId"},
            "SourceArn": {"Fn::Sub": (ACCOUNT % "cloudwatch") + ":alarm:outpost-stage1-*"},
        },
    }
    assert ALARMS_PRINCIPAL == "lambda.alarms.cloudwatch.amazonaws.com"


@pytest.mark.parametrize("hold_back", [False, True], ids=["plain alarms", "held back: composite alarms act"])
def test_every_acting_alarm_calls_the_notifier_beside_its_topic(tmp_path: Path, hold_back: bool) -> None:
    settings = load(tmp_path, AWS, hold_back={"enabled": hold_back})
    stack = resources(settings)["Resources"]
    alarms = {
        key: body["Properties"]
        for key, body in stack.items()
        if body["Type"] in ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm")
    }
    acting = {key: props for key, props in alarms.items() if props.get("AlarmActions")}
    silent = {key: props for key, props in alarms.items() if not props.get("AlarmActions")}
    # Every rule of every check acts exactly once: through its own alarm, or its held-back composite alarm.
    assert len(acting) == 4 * len(settings.enabled_checks())
    composite = [key for key, props in acting.items() if "ActionsSuppressor" in props]
    assert bool(composite) is hold_back
    for key, props in acting.items():
        for actions in (props["AlarmActions"], props["OKActions"]):
            assert len(actions) == 2 <= MAX_ALARM_ACTIONS
            topic, notifier = actions
            # The tier's topic first, as without messages; the notifier beside it, never instead of it.
            assert topic["Fn::If"][0] in ("HasAlarmTopic", "HasNotifyTopic"), key
            assert topic["Fn::If"][1] in ({"Ref": "AlarmTopicArn"}, {"Ref": "NotifyTopicArn"}), key
            assert notifier == NOTIFIER_ARN, key
    for props in silent.values():  # a held rule's metric alarm, the suppressor: no action, the notifier's neither
        assert NOTIFIER_ARN not in props.get("AlarmActions", []) + props.get("OKActions", [])


def test_without_messages_the_alarms_act_as_before_and_no_topic_may_be_given(tmp_path: Path) -> None:
    generated = resources(load(tmp_path, AWS, messages={"enabled": False}))
    stack = generated["Resources"]
    assert NOTIFIER_ROLE not in stack
    assert NOTIFIER_PERMISSION not in stack
    assert "NotifierLambdaFunction" not in json.dumps(stack)
    alarm = stack["ApiserverDashhealthFailedAlarm"]["Properties"]
    assert alarm["AlarmActions"] == {"Fn::If": ["HasAlarmTopic", [{"Ref": "AlarmTopicArn"}], {"Ref": "AWS::NoValue"}]}
    # serverless.yml passes MessagesTopicArn to every stage: empty here, required with messages.
    (assertion,) = generated["Rules"]["MessagesTopic"]["Assertions"]
    assert assertion["Assert"] == {"Fn::Equals": [{"Ref": "MessagesTopicArn"}, ""]}
    (required,) = resources(load(tmp_path, AWS))["Rules"]["MessagesTopic"]["Assertions"]
    assert required["Assert"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "MessagesTopicArn"}, ""]}]}


@pytest.mark.parametrize("hold_back", [False, True], ids=["plain", "held back"])
def test_cfn_lint_finds_nothing_in_the_notifiers_resources(tmp_path: Path, hold_back: bool) -> None:
    generated = resources(load(tmp_path, AWS, hold_back={"enabled": hold_back}))
    # The function itself is Serverless's (tests/functional/test_deployment.py lints the whole stack): a stand-in.
    stand_in = {
        "Type": "AWS::Lambda::Function",
        "Properties": {
            "Role": {"Fn::GetAtt": [NOTIFIER_ROLE, "Arn"]},
            "Code": {"ZipFile": "handler = None"},
            "Handler": "index.handler",
            "Runtime": "python3.11",
        },
    }
    template = {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Parameters": generated["Parameters"],
        "Conditions": generated["Conditions"],
        "Rules": generated["Rules"],
        "Resources": {**generated["Resources"], "NotifierLambdaFunction": stand_in},
    }
    findings = lint(json.dumps(template), config=ManualArgs(regions=["eu-west-1"], include_checks=["I"]))
    assert [f"{f.rule.id} {f.path} {f.message}" for f in findings] == []


def test_google_cloud_gets_the_notifier_variable_and_its_entry_point(tmp_path: Path) -> None:
    settings = load(tmp_path, GCP)
    variables = terraform_variables(settings, "../../build/x.zip", "0" * 64)
    assert variables["notifier"] == {
        "function_name": "outpost-stage1-notifier",
        "description": "Outpost notifier (stage1): what to do, on each alert policy's incident",
        "entry_point": "notifier",
        "account_id": notifier_service_account("stage1"),
        "timeout_seconds": 25,
        "incidents_topic": "outpost-stage1-incidents",
    }
    assert len(variables["notifier"]["account_id"]) <= 30
    assert '"notifier": "functions.notifier.main"' in cloud_functions_main(settings)
    off = load(tmp_path, GCP, messages={"enabled": False})
    assert terraform_variables(off, "../../build/x.zip", "0" * 64)["notifier"] is None
    assert '"notifier"' not in cloud_functions_main(off)


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ({"max_bytes": 100}, "messages.max_bytes: Input should be greater than or equal to 512"),
        ({"max_bytes": 1 << 20}, "messages.max_bytes: Input should be less than or equal to 65536"),
        ({"enabled": "yes"}, "messages.enabled: Input should be a valid boolean"),
        ({"topic": "arn:aws:sns:eu-west-1:123456789012:t"}, "messages.topic: Extra inputs are not permitted"),
    ],
    ids=["too-small", "too-large", "not-a-bool", "topic-is-the-deployments"],
)
def test_a_bad_messages_section_is_refused_naming_the_field(
    tmp_path: Path, messages: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, AWS, messages=messages)
    assert expected in raised.value.problems


def test_a_notifier_name_over_its_providers_limit_is_refused_at_messages_enabled(tmp_path: Path) -> None:
    # 34 characters: every other generated name of this stage fits (hold-back off: no inhibitor role); the notifier's
    # role, `outpost-<env>-eu-west-1-notifierRole`, is 65 characters: IAM's limit is 64.
    environment = "a" * 34
    document = copy.deepcopy(AWS)
    document["vigilmon"].pop("api_key")
    for name, check in document["checks"].items():
        check["heartbeat"] = f"ssm:/outpost/{environment}/heartbeat/{name}"
    document["cluster"]["auth"]["token"] = f"ssm:/outpost/{environment}/cluster"
    with pytest.raises(ConfigError) as raised:
        load(tmp_path, document, environment=environment)
    assert raised.value.problems == [
        f"messages.enabled: the IAM role name 'outpost-{environment}-eu-west-1-notifierRole' would be 65 characters "
        "(limit 64); environment names of at most 33 characters fit"
    ]
    load(tmp_path, document, environment=environment, messages={"enabled": False})


def test_the_notifiers_google_service_account_fits_wherever_the_invokers_does() -> None:
    # outpost-<env>-invoke (30 characters at most) is longer than outpost-<env>-note for every environment name.
    for length in range(1, 64):
        environment = "a" * length
        if len(f"outpost-{environment}-invoke") <= 30:
            assert len(notifier_service_account(environment)) <= 30
