"""AWS Lambda: the Serverless sections `deployment.json` carries for serverless.yml (one hardened function per
enabled check, least-privilege IAM statements, an Errors alarm per function, the stack's tags).

Derived from the validated settings alone (names and timeouts from `outpost.deploy`), so two builds of one file
generate the same template, and a section cannot name a check the environment does not enable.
"""

from __future__ import annotations

from typing import Any, Final

from outpost.config import EksAuth, Settings
from outpost.deploy import (
    SERVICE,
    alarm_name,
    aws_partition,
    function_name,
    function_timeout_seconds,
    lambda_architecture,
    schedule_minutes,
    secretsmanager_scope,
    severity,
    ssm_scope,
)
from outpost.secrets import parse_secret_ref
from outpost.tooling.packaging.platforms import entry_module

LAMBDA_RUNTIME: Final = "python3.11"

ALARM_TOPIC_PARAMETER: Final = "AlarmTopicArn"
MAX_EVENT_AGE_RANGE: Final = (60, 21_600)


def schedule_expression(minutes: int) -> str:
    return "rate(1 minute)" if minutes == 1 else f"rate({minutes} minutes)"


def function_definitions(settings: Settings) -> dict[str, Any]:
    """The serverless.yml `functions:` mapping: one hardened Lambda function per enabled check."""
    assert settings.deploy is not None
    timeout = function_timeout_seconds(settings)
    functions: dict[str, Any] = {}
    for name in settings.enabled_checks():
        minutes = schedule_minutes(settings, name)
        low, high = MAX_EVENT_AGE_RANGE
        function: dict[str, Any] = {
            "handler": entry_module(name).removesuffix(".py") + ".handler",
            "description": f"Outpost check {name} ({settings.environment}, {severity(settings, name)})",
            "timeout": timeout,
            # One run at a time: a slow run makes the next scheduled one wait (throttled), never overlap.
            "reservedConcurrency": 1,
            # A failed run is counted (Errors, the alarm, the destination), never re-run by Lambda itself.
            "maximumRetryAttempts": 0,
            # A run that could not start within one period is superseded by the next one.
            "maximumEventAge": min(max(minutes * 60, low), high),
            "url": {"authorizer": "aws_iam"},
            "events": [{"schedule": {"rate": [schedule_expression(minutes)]}}],
            "tags": {"check": name},
        }
        if settings.deploy.failure_destination:
            function["destinations"] = {"onFailure": settings.deploy.failure_destination}
        functions[name] = function
    return functions


def logical_id(check: str) -> str:
    """Serverless's CloudFormation name of a function (`apiserver-health` -> `ApiserverDashhealth`)."""
    normalized = check.replace("-", "Dash").replace("_", "Underscore")
    return normalized[:1].upper() + normalized[1:]


def iam_statements(settings: Settings) -> list[dict[str, Any]]:
    """Least privilege: the secret stores the file references, in the stage's scope; its KMS key; its EKS role."""
    assert settings.deploy is not None
    env = settings.environment
    schemes = {parse_secret_ref(ref).scheme for _path, ref in settings.secret_references()}
    account = "arn:${AWS::Partition}:%s:${AWS::Region}:${AWS::AccountId}"
    statements: list[dict[str, Any]] = []
    if "ssm" in schemes:
        statements.append(
            {
                "Effect": "Allow",
                "Action": ["ssm:GetParameter"],
                "Resource": {"Fn::Sub": (account % "ssm") + f":parameter{ssm_scope(env)}*"},
            }
        )
    if "secretsmanager" in schemes:
        scope = f":secret:{secretsmanager_scope(env)}*"
        statements.append(
            {
                "Effect": "Allow",
                "Action": ["secretsmanager:GetSecretValue"],
                "Resource": {"Fn::Sub": (account % "secretsmanager") + scope},
            }
        )
    if settings.deploy.kms_key_arn:
        region = settings.deploy.region
        statements.append(
            {
                "Effect": "Allow",
                "Action": ["kms:Decrypt"],
                "Resource": settings.deploy.kms_key_arn,
                "Condition": {
                    "StringEquals": {
                        "kms:ViaService": [f"ssm.{region}.amazonaws.com", f"secretsmanager.{region}.amazonaws.com"]
                    }
                },
            }
        )
    auth = settings.cluster.auth
    if isinstance(auth, EksAuth) and auth.role_arn:
        statements.append({"Effect": "Allow", "Action": ["sts:AssumeRole"], "Resource": auth.role_arn})
    return statements


def resources(settings: Settings) -> dict[str, Any]:
    """CloudFormation added to the stack: the alarm topic parameter, an Errors alarm per function, and the log
    groups Serverless creates kept when the stack removes or replaces them: the run history outlives
    `serverless remove` (and still expires after serverless.yml's `logRetentionInDays`). Redeploying a removed
    stage needs its old groups deleted first (docs/deploying-aws.md "Removing a stage")."""
    env = settings.environment
    alarms: dict[str, Any] = {}
    extensions: dict[str, Any] = {}
    for name in settings.enabled_checks():
        minutes = schedule_minutes(settings, name)
        topic = {"Fn::If": ["HasAlarmTopic", [{"Ref": ALARM_TOPIC_PARAMETER}], {"Ref": "AWS::NoValue"}]}
        alarms[f"{logical_id(name)}ErrorsAlarm"] = {
            "Type": "AWS::CloudWatch::Alarm",
            "Properties": {
                "AlarmName": alarm_name(env, name),
                "AlarmDescription": f"Outpost check {name} ({env}) failed or could not observe; Vigilmon alerts "
                "on its silent heartbeat, this alarm on the failed invocations.",
                "Namespace": "AWS/Lambda",
                "MetricName": "Errors",
                "Dimensions": [{"Name": "FunctionName", "Value": {"Ref": f"{logical_id(name)}LambdaFunction"}}],
                "Statistic": "Sum",
                "Period": min(minutes * 60, 86_400),
                "EvaluationPeriods": 1,
                "Threshold": 1,
                "ComparisonOperator": "GreaterThanOrEqualToThreshold",
                # No data means no run finished; the heartbeat monitor covers silence.
                "TreatMissingData": "notBreaching",
                "AlarmActions": topic,
                "OKActions": topic,
                "Tags": [
                    {"Key": "service", "Value": SERVICE},
                    {"Key": "environment", "Value": env},
                    {"Key": "check", "Value": name},
                ],
            },
        }
        extensions[f"{logical_id(name)}LogGroup"] = {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}
    return {
        "Parameters": {
            ALARM_TOPIC_PARAMETER: {
                "Type": "String",
                "Default": "",
                "Description": "SNS topic ARN notified when a check's function fails (empty: alarms without actions)",
                "AllowedPattern": r"^(arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_.-]+)?$",
            }
        },
        "Conditions": {"HasAlarmTopic": {"Fn::Not": [{"Fn::Equals": [{"Ref": ALARM_TOPIC_PARAMETER}, ""]}]}},
        "Resources": alarms,
        "extensions": extensions,
    }


def serverless_sections(settings: Settings, artifact: str) -> dict[str, Any]:
    """What serverless.yml takes from the build (through infra/aws/verified-build.js)."""
    assert settings.deploy is not None
    return {
        "region": settings.deploy.region,
        "partition": aws_partition(settings.deploy.region),
        "architecture": lambda_architecture(settings),
        "runtime": LAMBDA_RUNTIME,
        "artifact": artifact,
        "tags": {"service": SERVICE, "environment": settings.environment},
        "functions": function_definitions(settings),
        "iamStatements": iam_statements(settings),
        "resources": resources(settings),
        "functionNames": {name: function_name(settings.environment, name) for name in settings.enabled_checks()},
    }
