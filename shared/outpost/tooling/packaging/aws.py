"""AWS Lambda: the Serverless sections `deployment.json` carries for serverless.yml (one hardened function per
enabled check, least-privilege IAM statements, the check's CloudWatch alarms on its run metrics, the stack's
tags).

Derived from the validated settings alone (names and timeouts from `outpost.deploy`), so two builds of one file
generate the same template, and a section cannot name a check the environment does not enable.
"""

from __future__ import annotations

from typing import Any, Final

from outpost.config import EksAuth, Settings
from outpost.deploy import (
    INHIBITOR,
    INHIBITOR_MAX_EVENT_AGE_SECONDS,
    NOTIFIER,
    NOTIFIER_MAX_EVENT_AGE_SECONDS,
    SERVICE,
    alarm_name,
    aws_partition,
    check_secret_references,
    deploys_inhibitor,
    deploys_notifier,
    function_name,
    function_timeout_seconds,
    held_parents,
    inhibitor_role_name,
    inhibitor_secret_references,
    inhibitor_timeout_seconds,
    lambda_architecture,
    log_group,
    notifier_role_name,
    notifier_timeout_seconds,
    runbook_path,
    schedule_minutes,
    secret_store_name,
    severity,
)
from outpost.recurring import TICK_MINUTES
from outpost.tooling import alerting
from outpost.tooling.packaging.platforms import entry_module

LAMBDA_RUNTIME: Final = "python3.11"

ALARM_TOPIC_PARAMETER: Final = "AlarmTopicArn"
NOTIFY_TOPIC_PARAMETER: Final = "NotifyTopicArn"
RUNBOOK_BASE_PARAMETER: Final = "RunbookBaseUrl"
MESSAGES_TOPIC_PARAMETER: Final = "MessagesTopicArn"
MESSAGES_TOPIC_CONDITION: Final = "HasMessagesTopic"
MAX_ALARM_ACTIONS: Final = 5
"""CloudWatch: an alarm has at most five actions per state (PutMetricAlarm and PutCompositeAlarm, `AlarmActions`,
`OKActions`): a topic and the notifier are two."""
TOPIC_PARAMETERS: Final = {"page": ALARM_TOPIC_PARAMETER, "notify": NOTIFY_TOPIC_PARAMETER}
TOPIC_CONDITIONS: Final = {"page": "HasAlarmTopic", "notify": "HasNotifyTopic"}
RUNBOOK_BASE_MAX_LENGTH: Final = 200
ALARM_DESCRIPTION_LIMIT: Final = 1024
"""CloudFormation's limit on AlarmDescription (characters), the runbook base URL included."""
_TOPIC_PATTERN: Final = r"^(arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_.-]+)?$"
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
    if deploys_inhibitor(settings):
        functions[INHIBITOR] = inhibitor_function(settings)
    if deploys_notifier(settings):
        functions[NOTIFIER] = notifier_function(settings)
    return functions


def logical_id(check: str) -> str:
    """Serverless's CloudFormation name of a function (`apiserver-health` -> `ApiserverDashhealth`)."""
    normalized = check.replace("-", "Dash").replace("_", "Underscore")
    return normalized[:1].upper() + normalized[1:]


_ACCOUNT: Final = "arn:${AWS::Partition}:%s:${AWS::Region}:${AWS::AccountId}"
INHIBITOR_ROLE: Final = "InhibitorIamRole"
"""The inhibitor function's own role (a resource of the stack; Serverless's `IamRoleLambdaExecution` is the
checks')."""


def secret_statements(settings: Settings, references: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Read access to exactly the secrets `references` name, one statement per store, plus `kms:Decrypt` on the
    file's key through those stores: an SSM parameter by its ARN; a Secrets Manager secret by its name and the
    six characters Secrets Manager appends (`-??????`), or, given as an ARN, by that ARN and a wildcard."""
    assert settings.deploy is not None
    ssm: list[str] = []
    secrets: list[str] = []
    for _path, text in references:
        read = secret_store_name(text)
        if read is None:
            continue  # env: or gcpsm:, refused for a deployed AWS function by outpost.deploy
        scheme, name = read
        if scheme == "ssm":
            ssm.append((_ACCOUNT % "ssm") + f":parameter{name}")
        elif scheme == "secretsmanager":
            given_as_arn = text.partition(":")[2].startswith("arn:")
            secrets.append((_ACCOUNT % "secretsmanager") + f":secret:{name}" + ("*" if given_as_arn else "-??????"))
    statements: list[dict[str, Any]] = []
    if ssm:
        resources = [{"Fn::Sub": arn} for arn in sorted(set(ssm))]
        statements.append({"Effect": "Allow", "Action": ["ssm:GetParameter"], "Resource": resources})
    if secrets:
        resources = [{"Fn::Sub": arn} for arn in sorted(set(secrets))]
        statements.append({"Effect": "Allow", "Action": ["secretsmanager:GetSecretValue"], "Resource": resources})
    if (ssm or secrets) and settings.deploy.kms_key_arn:
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
    return statements


def iam_statements(settings: Settings) -> list[dict[str, Any]]:
    """The checks' role, least privilege: exactly the secrets the checks read (never the Vigilmon API key: the
    inhibitor's role alone reads it), its KMS key, its EKS role, and with hold-back the invocation of the stage's
    inhibitor function, nothing else."""
    assert settings.deploy is not None
    statements = secret_statements(settings, check_secret_references(settings))
    auth = settings.cluster.auth
    if isinstance(auth, EksAuth) and auth.role_arn:
        statements.append({"Effect": "Allow", "Action": ["sts:AssumeRole"], "Resource": auth.role_arn})
    if settings.hold_back.enabled:
        statements.append(
            {
                "Effect": "Allow",
                "Action": ["lambda:InvokeFunction"],
                "Resource": {
                    "Fn::Sub": (_ACCOUNT % "lambda") + f":function:{function_name(settings.environment, INHIBITOR)}"
                },
            }
        )
    return statements


def inhibitor_function(settings: Settings) -> dict[str, Any]:
    """The inhibitor's Lambda function: invoked asynchronously by a failing parent's run, never by URL, under its
    own role; a failed request is not retried (the parent's next failing run asks again) and one older than a
    minute is dropped. Its timeout covers opening the windows and rolling them back
    (`outpost.deploy.inhibitor_timeout_seconds`). With recurring maintenance windows, an EventBridge schedule
    ticks it every `recurring.TICK_MINUTES` to open those that are due; without, it has no schedule."""
    function: dict[str, Any] = {
        "handler": f"functions/{INHIBITOR}/main.handler",
        "description": f"Outpost inhibitor ({settings.environment}): holds back the dependants of a failing check",
        "timeout": inhibitor_timeout_seconds(settings),
        # By its ARN (an implicit dependency): Serverless adds a DependsOn to a role named by its logical id, which
        # cfn-lint flags (W3005) as redundant.
        "role": {"Fn::Sub": f"${{{INHIBITOR_ROLE}.Arn}}"},
        "maximumRetryAttempts": 0,
        "maximumEventAge": INHIBITOR_MAX_EVENT_AGE_SECONDS,
        "tags": {"function": INHIBITOR},
    }
    if settings.maintenance_windows:
        function["events"] = [{"schedule": {"rate": [schedule_expression(TICK_MINUTES)]}}]
    return function


def _function_role(
    settings: Settings, function: str, role_name: str, description: str, statements: list[Any]
) -> dict[str, Any]:
    """The role of one of the stage's own functions (the inhibitor, the notifier): written to its own log group,
    allowed `statements` besides, nothing else."""
    env = settings.environment
    group = (_ACCOUNT % "logs") + f":log-group:{log_group(env, function)}"
    own_log = [
        {
            "Effect": "Allow",
            "Action": ["logs:CreateLogStream", "logs:CreateLogGroup"],
            "Resource": {"Fn::Sub": f"{group}:*"},
        },
        {"Effect": "Allow", "Action": ["logs:PutLogEvents"], "Resource": {"Fn::Sub": f"{group}:*:*"}},
    ]
    return {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "RoleName": role_name,
            "Description": description,
            "AssumeRolePolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": ["lambda.amazonaws.com"]},
                        "Action": ["sts:AssumeRole"],
                    }
                ],
            },
            "Policies": [
                {
                    "PolicyName": f"{SERVICE}-{env}-{function}",
                    "PolicyDocument": {"Version": "2012-10-17", "Statement": [*own_log, *statements]},
                }
            ],
            "Tags": [{"Key": "service", "Value": SERVICE}, {"Key": "environment", "Value": env}],
        },
    }


def inhibitor_role(settings: Settings) -> dict[str, Any]:
    """The inhibitor's role: its own log group, the Vigilmon API key (and its KMS key), nothing else."""
    assert settings.deploy is not None
    env = settings.environment
    return _function_role(
        settings,
        INHIBITOR,
        inhibitor_role_name(env, settings.deploy.region),
        f"Outpost {env} inhibitor: the one identity that reads the Vigilmon API key",
        secret_statements(settings, inhibitor_secret_references(settings)),
    )


NOTIFIER_ROLE: Final = "NotifierIamRole"
NOTIFIER_PERMISSION: Final = "NotifierAlarmPermission"
ALARMS_PRINCIPAL: Final = "lambda.alarms.cloudwatch.amazonaws.com"
"""The service principal a CloudWatch alarm's Lambda action invokes as (docs.aws.amazon.com/AmazonCloudWatch/latest/
monitoring/alarms-and-actions-Lambda.html: `aws lambda add-permission ... --principal
lambda.alarms.cloudwatch.amazonaws.com --source-account ACCOUNT --source-arn
arn:aws:cloudwatch:REGION:ACCOUNT:alarm:NAME`). Composite alarms take Lambda actions too (API_PutCompositeAlarm:
"Composite alarms can take the following actions: Notify Amazon SNS topics. Invoke Lambda functions. ...")."""


def notifier_arn() -> dict[str, Any]:
    """The notifier function's ARN (Serverless's logical id of the `notifier` function)."""
    return {"Fn::GetAtt": [f"{logical_id(NOTIFIER)}LambdaFunction", "Arn"]}


def notifier_function(settings: Settings) -> dict[str, Any]:
    """The notifier's Lambda function (`outpost.notify`): invoked by the stage's alarms' Lambda actions (an
    asynchronous invocation per state change), never by URL or schedule, under its own role; not retried (a late
    message tells a state the alarm may have left) and dropped after `NOTIFIER_MAX_EVENT_AGE_SECONDS`. It publishes
    to the `MessagesTopicArn` stack parameter's topic, with the `RunbookBaseUrl` prefix on the runbook link."""
    return {
        "handler": f"functions/{NOTIFIER}/main.handler",
        "description": f"Outpost notifier ({settings.environment}): what to do, on each alarm state change",
        "timeout": notifier_timeout_seconds(settings),
        "role": {"Fn::Sub": f"${{{NOTIFIER_ROLE}.Arn}}"},
        "maximumRetryAttempts": 0,
        "maximumEventAge": NOTIFIER_MAX_EVENT_AGE_SECONDS,
        "environment": {
            "OUTPOST_MESSAGES_TOPIC": {"Ref": MESSAGES_TOPIC_PARAMETER},
            "OUTPOST_RUNBOOK_BASE_URL": {"Ref": RUNBOOK_BASE_PARAMETER},
        },
        "tags": {"function": NOTIFIER},
    }


def notifier_role(settings: Settings) -> dict[str, Any]:
    """The notifier's role: its own log group; `logs:FilterLogEvents` on the log groups of the stage's enabled
    checks only (the run lines it reads), each as `log-group:NAME:*`, the form IAM policies name a log group by for
    every action but the tagging ones (docs.aws.amazon.com/AmazonCloudWatch/latest/logs/iam-access-control-overview-
    cwl.html); `sns:Publish` on the messages topic only. No secret, no other topic."""
    assert settings.deploy is not None
    env = settings.environment
    checks = [
        {"Fn::Sub": (_ACCOUNT % "logs") + f":log-group:{log_group(env, check)}:*"}
        for check in settings.enabled_checks()
    ]
    statements = [
        {"Effect": "Allow", "Action": ["logs:FilterLogEvents"], "Resource": checks},
        # Never empty when deployed (the template's rule `MessagesTopic` requires the parameter); the condition keeps
        # the empty default from being read as a resource.
        {
            "Fn::If": [
                MESSAGES_TOPIC_CONDITION,
                {"Effect": "Allow", "Action": ["sns:Publish"], "Resource": {"Ref": MESSAGES_TOPIC_PARAMETER}},
                {"Ref": "AWS::NoValue"},
            ]
        },
    ]
    return _function_role(
        settings,
        NOTIFIER,
        notifier_role_name(env, settings.deploy.region),
        f"Outpost {env} notifier: reads the checks' run lines, publishes to the messages topic",
        statements,
    )


def notifier_permission(settings: Settings) -> dict[str, Any]:
    """The notifier's resource policy: invoked by the CloudWatch alarms of this account whose names begin with the
    stage's prefix (`outpost-<env>-`), nothing else. A name of another stage that begins so (`outpost-prod-eu-...`
    for stage `prod`) is refused by the notifier itself (`outpost.deploy.alarm_of`)."""
    prefix = f"{SERVICE}-{settings.environment}-"
    return {
        "Type": "AWS::Lambda::Permission",
        "Properties": {
            "Action": "lambda:InvokeFunction",
            "FunctionName": notifier_arn(),
            "Principal": ALARMS_PRINCIPAL,
            "SourceAccount": {"Ref": "AWS::AccountId"},
            "SourceArn": {"Fn::Sub": (_ACCOUNT % "cloudwatch") + f":alarm:{prefix}*"},
        },
    }


def alarm_description(settings: Settings, rule: alerting.Rule, note: str = "") -> str:
    """What the alarm says (an `Fn::Sub` template: `${RunbookBaseUrl}` is the only substitution, a `${` in the
    file's free text is written `${!` and so shown as is): what held, the check's runbook section and the Logs
    Insights query of its latest run line."""
    env = settings.environment
    said = alerting.summary(settings, rule).replace("${", "${!")
    return (
        f"{said}. Runbook: ${{{RUNBOOK_BASE_PARAMETER}}}"
        f"{runbook_path(rule.check)} . Latest run: CloudWatch Logs Insights on "
        f"{log_group(env, rule.check)}: {alerting.logs_insights_query(rule.check)} . "
        "A check that stops running at all is its Vigilmon monitor's alarm, not this one."
        f"{note}"
    )


def _topic(rule: alerting.Rule) -> dict[str, Any]:
    return {"Fn::If": [TOPIC_CONDITIONS[rule.tier], [{"Ref": TOPIC_PARAMETERS[rule.tier]}], {"Ref": "AWS::NoValue"}]}


def _actions(settings: Settings, rule: alerting.Rule) -> Any:
    """An acting alarm's AlarmActions and OKActions: its tier's topic (when given) and, with messages, the notifier
    beside it: the topic's notification never waits for, nor depends on, the notifier."""
    if not deploys_notifier(settings):
        return _topic(rule)
    topic = {"Fn::If": [TOPIC_CONDITIONS[rule.tier], {"Ref": TOPIC_PARAMETERS[rule.tier]}, {"Ref": "AWS::NoValue"}]}
    actions = [topic, notifier_arn()]
    assert len(actions) <= MAX_ALARM_ACTIONS
    return actions


def alarm_logical_id(check: str, key: str) -> str:
    return f"{logical_id(check)}{key.capitalize()}Alarm"


def suppressor_logical_id(check: str) -> str:
    return f"{logical_id(check)}HeldAlarm"


def suppressor_name(environment: str, check: str) -> str:
    """The composite alarm in ALARM while a check `check` depends on fails or cannot observe."""
    return f"{function_name(environment, check)}-held"


def alert_name(environment: str, check: str, key: str) -> str:
    """The composite alarm carrying the actions of a held-back check's alarm `key` (`...-failed-alert`)."""
    return f"{alarm_name(environment, check, key)}-alert"


def held_alarms(settings: Settings, check: str) -> dict[str, Any]:
    """Hold-back of a dependant's cloud alarms (docs/contracts.md "Cloud alarms"): one composite alarm in ALARM
    while any enabled check it depends on has its `failed` or `error` alarm in ALARM (`ALARM()` is false in OK and
    INSUFFICIENT_DATA, so only a parent seen failing suppresses), and, per rule, a composite alarm wrapping the
    metric alarm that carries its actions with that one as ActionsSuppressor (its wait and extension periods:
    `alerting.suppression`), for each rule that is held (`alerting.HELD_RULES`). Empty when hold-back is off or
    the check depends on no enabled check."""
    env = settings.environment
    parents = held_parents(settings, check)
    if not parents:
        return {}
    rule_text = " OR ".join(
        f'ALARM("${{{alarm_logical_id(parent, key)}}}")' for parent in parents for key in alerting.SUPPRESSING_RULES
    )
    found: dict[str, Any] = {
        suppressor_logical_id(check): {
            "Type": "AWS::CloudWatch::CompositeAlarm",
            "Properties": {
                "AlarmName": suppressor_name(env, check),
                "AlarmRule": {"Fn::Sub": rule_text},
                "AlarmDescription": (
                    f"Outpost {env}: in ALARM while a check {check} depends on fails or cannot observe "
                    f"({', '.join(parents)}): {check}'s alarms notify nobody meanwhile. No action of its own."
                ),
            },
        }
    }
    for rule in alerting.rules(settings, check):
        held = alerting.suppression(settings, rule)
        if held is None:  # `flapping`: never held (alerting.HELD_RULES)
            continue
        said = alerting.held_note(held)
        note = f" {said[0].upper()}{said[1:]}."
        description = alarm_description(settings, rule, note)
        found[f"{logical_id(check)}{rule.key.capitalize()}AlertAlarm"] = {
            "Type": "AWS::CloudWatch::CompositeAlarm",
            "Properties": {
                "AlarmName": alert_name(env, check, rule.key),
                "AlarmDescription": {"Fn::Sub": description},
                "AlarmRule": {"Fn::Sub": f'ALARM("${{{alarm_logical_id(check, rule.key)}}}")'},
                "ActionsSuppressor": {"Ref": suppressor_logical_id(check)},
                "ActionsSuppressorWaitPeriod": held.wait_seconds,
                "ActionsSuppressorExtensionPeriod": held.extension_seconds,
                "AlarmActions": _actions(settings, rule),
                "OKActions": _actions(settings, rule),
            },
        }
    return found


def alarm(settings: Settings, rule: alerting.Rule, *, actions: bool = True) -> dict[str, Any]:
    """One AWS::CloudWatch::Alarm of `rule` on the run metric the check's log lines publish (EMF); `actions`:
    off when a composite alarm carries them (`held_alarms`)."""
    env = settings.environment
    topic = _actions(settings, rule) if actions else []
    evaluated = alerting.CloudWatchAlarm.of(rule)
    return {
        "Type": "AWS::CloudWatch::Alarm",
        "Properties": {
            "AlarmName": alarm_name(env, rule.check, rule.key),
            "AlarmDescription": {"Fn::Sub": alarm_description(settings, rule)},
            "Namespace": alerting.NAMESPACE,
            "MetricName": evaluated.metric,
            "Dimensions": [{"Name": "environment", "Value": env}, {"Name": "check", "Value": rule.check}],
            # One run per period: a period's datapoint is 1 when a run of that outcome ended in it.
            "Statistic": evaluated.statistic,
            "Period": evaluated.period_seconds,
            "EvaluationPeriods": evaluated.evaluation_periods,
            "DatapointsToAlarm": evaluated.datapoints_to_alarm,
            "Threshold": evaluated.threshold,
            "ComparisonOperator": evaluated.comparison,
            # A period without a run line is neither a failure nor a pass here: the function did not run, or died
            # before its line. Silence is the heartbeat monitor's alarm (Vigilmon alerts once the tolerated
            # misses have passed); breaching would page twice for one outage, and ignore would hold an alarm up
            # after the check stopped running. Missing periods count as not breaching, and an alarm whose check
            # went silent clears once its window holds no failed run.
            "TreatMissingData": evaluated.treat_missing_data,
            "AlarmActions": topic,
            "OKActions": topic,
            "Tags": [
                {"Key": "service", "Value": SERVICE},
                {"Key": "environment", "Value": env},
                {"Key": "check", "Value": rule.check},
                {"Key": "tier", "Value": rule.tier},
            ],
        },
    }


def _topic_parameter(what: str) -> dict[str, Any]:
    return {"Type": "String", "Default": "", "Description": what, "AllowedPattern": _TOPIC_PATTERN}


def resources(settings: Settings) -> dict[str, Any]:
    """CloudFormation added to the stack: the topic and runbook parameters, each check's alarms
    (`outpost.tooling.alerting.rules`: failed, flapping, error, degraded) on the run metrics its log lines publish,
    and the log groups Serverless creates kept when the stack removes or replaces them: the run history outlives
    `serverless remove` (and still expires after serverless.yml's `logRetentionInDays`). Redeploying a removed
    stage needs its old groups deleted first (docs/deploying-aws.md "Removing a stage").

    Lambda's own `Errors` metric gets no alarm any more: every failed or error scheduled run raises (so it counts
    there), which the `failed` and `error` alarms tell apart with the monitor's tolerance; a run that crashed
    (a timeout, out of memory, a failed cold start) writes no line and sends no ping, which the monitor alerts on.
    """
    alarms: dict[str, Any] = {}
    extensions: dict[str, Any] = {}
    for name in settings.enabled_checks():
        held = held_alarms(settings, name)
        for rule in alerting.rules(settings, name):
            acts = alerting.suppression(settings, rule) is None  # else its held composite alarm carries them
            alarms[alarm_logical_id(name, rule.key)] = alarm(settings, rule, actions=acts)
        alarms.update(held)
        extensions[f"{logical_id(name)}LogGroup"] = {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}
    if deploys_inhibitor(settings):
        alarms[INHIBITOR_ROLE] = inhibitor_role(settings)
        extensions[f"{logical_id(INHIBITOR)}LogGroup"] = {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}
    if deploys_notifier(settings):
        alarms[NOTIFIER_ROLE] = notifier_role(settings)
        alarms[NOTIFIER_PERMISSION] = notifier_permission(settings)
        extensions[f"{logical_id(NOTIFIER)}LogGroup"] = {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}
    given = {"Fn::Not": [{"Fn::Equals": [{"Ref": MESSAGES_TOPIC_PARAMETER}, ""]}]}
    # serverless.yml passes the parameter to every stage: required with messages, refused without (a topic given to a
    # stage that sends no messages would wait for messages that never come).
    rules = {
        "MessagesTopic": {
            "Assertions": [
                {
                    "Assert": (
                        given if deploys_notifier(settings) else {"Fn::Equals": [{"Ref": MESSAGES_TOPIC_PARAMETER}, ""]}
                    ),
                    "AssertDescription": (
                        "messages.enabled: give the SNS topic the notifier publishes to "
                        '(--param="messagesTopicArn=arn:aws:sns:...")'
                        if deploys_notifier(settings)
                        else "messages.enabled is off in this stage's environment file: no messagesTopicArn"
                    ),
                }
            ]
        }
    }
    sections = {
        "Parameters": {
            ALARM_TOPIC_PARAMETER: _topic_parameter(
                "SNS topic ARN that pages: the failed alarm of critical checks (empty: those alarms have no action)"
            ),
            NOTIFY_TOPIC_PARAMETER: _topic_parameter(
                "SNS topic ARN that notifies: flapping, error, degraded, and failed of warning checks (empty: those "
                "alarms have no action)"
            ),
            RUNBOOK_BASE_PARAMETER: {
                "Type": "String",
                "Default": "",
                "Description": "Prefix of the runbook link in every alarm description, e.g. where the repository's "
                "files are browsed (https://.../blob/main/); empty: the link is the path in the repository",
                "AllowedPattern": r"^(https://[^\s$]*)?$",
                "MaxLength": RUNBOOK_BASE_MAX_LENGTH,
            },
            MESSAGES_TOPIC_PARAMETER: _topic_parameter(
                "SNS topic ARN the notifier publishes each alarm state change's message to (summary, next steps, run "
                "id, runbook link; messages.enabled, where it is required); unused otherwise"
            ),
        },
        "Conditions": {
            **{
                condition: {"Fn::Not": [{"Fn::Equals": [{"Ref": TOPIC_PARAMETERS[tier]}, ""]}]}
                for tier, condition in TOPIC_CONDITIONS.items()
            },
            **({MESSAGES_TOPIC_CONDITION: given} if deploys_notifier(settings) else {}),
        },
        "Resources": alarms,
        "Rules": rules,
        "extensions": extensions,
    }
    return sections


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
