"""The example environments (dev, staging, prod) as a user deploys them: `outpost package` builds each with its
real Lambda wheels, the Serverless Framework v3 packages it offline (`serverless package`), cfn-lint lints the
CloudFormation it generates; serverless.yml refuses, before anything is packaged or uploaded, a missing stage,
`local`, a stale build and a bundle that is not the one built; two builds of the same inputs are byte-identical.

Every assertion on the template iterates over the checks the example files enable (whatever the registry
holds), never a list of names. The builds and Serverless runs are started concurrently (they wait on pip and
node more than on the CPU), once per module.
"""

from __future__ import annotations

import concurrent.futures
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from outpost import cli
from outpost.config import Settings, environment_file
from outpost.deploy import (
    ALARM_RULES,
    alarm_name,
    check_secret_references,
    deploys_inhibitor,
    deploys_notifier,
    function_name,
    function_timeout_seconds,
    held_parents,
    inhibitor_timeout_seconds,
    lambda_architecture,
    notifier_timeout_seconds,
    schedule_minutes,
    secret_store_name,
)
from outpost.settings import load_settings
from outpost.tooling import alerting
from outpost.tooling.alerting import HELD_RULES
from outpost.tooling.packaging.aws import logical_id
from outpost.tooling.packaging.command import build
from outpost.tooling.packaging.platforms import entry_functions
from outpost.tooling.packaging.records import DEPLOYMENT_FILE, inputs_digest, source_inputs

REPO = Path(__file__).resolve().parents[2]
SERVERLESS = REPO / ".tools" / "node_modules" / ".bin" / "serverless"
EXAMPLES = ("dev", "staging", "prod")
SLS_ENV = {**os.environ, "SLS_TELEMETRY_DISABLED": "1", "SLS_NOTIFICATIONS_MODE": "off", "CI": "true"}
ELF_MACHINES = {62: "x86_64", 183: "arm64"}
T = TypeVar("T")


def project(destination: Path) -> Path:
    """What a user's checkout holds for a deployment: sources, entry modules, environments, dependency locks,
    serverless.yml."""
    shutil.copytree(
        REPO / "shared" / "outpost",
        destination / "shared" / "outpost",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    shutil.copytree(REPO / "functions", destination / "functions", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "infra" / "environments", destination / "infra" / "environments")
    shutil.copytree(REPO / "infra" / "aws", destination / "infra" / "aws")
    shutil.copytree(REPO / "infra" / "locks", destination / "infra" / "locks")
    for name in ("pyproject.toml", "serverless.yml"):
        shutil.copy2(REPO / name, destination / name)
    return destination


def serverless(root: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    assert SERVERLESS.exists(), "Serverless Framework v3 is not installed; run `make setup` (it installs .tools)"
    return subprocess.run(
        [str(SERVERLESS), "package", *arguments],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env=SLS_ENV,
    )


def concurrently(jobs: dict[str, Callable[[], T]]) -> dict[str, T]:
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
        return {name: future.result() for name, future in futures.items()}


@dataclass(frozen=True)
class Stage:
    name: str
    root: Path
    settings: Settings
    deployment: dict[str, Any]
    archive: Path
    template: dict[str, Any]
    packaged: subprocess.CompletedProcess[str]

    def resources(self, kind: str) -> dict[str, dict[str, Any]]:
        return {key: value for key, value in self.template["Resources"].items() if value["Type"] == kind}


@pytest.fixture(scope="module")
def stages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Stage]:
    base = tmp_path_factory.mktemp("deploy")
    roots = {name: project(base / name) for name in (*EXAMPLES, "prod-again")}

    def package(name: str) -> Path:
        environment = name.removesuffix("-again")
        return build(environment, roots[name] / "build", roots[name])

    concurrently({name: functools.partial(package, name) for name in roots})
    packaged = concurrently({name: functools.partial(serverless, roots[name], "--stage", name) for name in EXAMPLES})
    result = {}
    for name in EXAMPLES:
        root = roots[name]
        deployment = json.loads((root / "build" / name / DEPLOYMENT_FILE).read_text())
        template_file = root / ".serverless" / "cloudformation-template-update-stack.json"
        template = json.loads(template_file.read_text()) if template_file.exists() else {}
        result[name] = Stage(
            name,
            root,
            load_settings(environment_file(name, root)),
            deployment,
            root / "build" / name / deployment["build"]["artifact"],
            template,
            packaged[name],
        )
    result["prod-again"] = Stage(
        "prod",
        roots["prod-again"],
        result["prod"].settings,
        json.loads((roots["prod-again"] / "build" / "prod" / DEPLOYMENT_FILE).read_text()),
        roots["prod-again"] / "build" / "prod" / "outpost-prod.zip",
        {},
        packaged["prod"],
    )
    return result


def key_only_schemes(settings: Settings) -> set[str]:
    """The secret stores only the Vigilmon API key is read from (the checks' role gets no statement for them)."""
    checks = {ref.partition(":")[0] for _path, ref in check_secret_references(settings)}
    key = settings.vigilmon.api_key
    return {key.partition(":")[0]} - checks if key else set()


def enabled(stage: Stage) -> Iterator[str]:
    checks = stage.settings.enabled_checks()
    assert checks, f"example {stage.name} enables no check"
    yield from checks


@pytest.mark.parametrize("name", EXAMPLES)
def test_outpost_validate_accepts_every_example_as_deployable(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["validate", "--env", name]) == 0
    assert "deployable to aws" in capsys.readouterr().out


def test_two_builds_of_the_same_inputs_are_byte_identical(stages: dict[str, Stage]) -> None:
    first, second = stages["prod"], stages["prod-again"]
    assert first.root != second.root  # built in different directories, at different times
    assert first.archive.read_bytes() == second.archive.read_bytes()
    assert first.deployment == second.deployment


@pytest.mark.parametrize("name", EXAMPLES)
def test_serverless_packages_every_example(stages: dict[str, Stage], name: str) -> None:
    stage = stages[name]
    assert stage.packaged.returncode == 0, stage.packaged.stdout + stage.packaged.stderr
    print(f"{name}: {stage.archive.name} {stage.archive.stat().st_size / 1e6:.1f} MB")


@pytest.mark.parametrize("name", EXAMPLES)
def test_bundle_has_byte_code_for_the_runtime_and_wheels_for_the_architecture(
    stages: dict[str, Stage], name: str
) -> None:
    stage = stages[name]
    architecture = lambda_architecture(stage.settings)
    with zipfile.ZipFile(stage.archive) as bundle:
        entries = bundle.infolist()
        names = {entry.filename for entry in entries}
        machines = {}
        for entry in entries:
            if entry.filename.endswith(".so") or ".so." in entry.filename:
                header = bundle.read(entry)[:20]
                if header[:4] == b"\x7fELF":
                    machines[entry.filename] = ELF_MACHINES.get(int.from_bytes(header[18:20], "little"))
    assert machines, "the bundle holds compiled extensions (pydantic_core, yaml)"
    assert set(machines.values()) == {architecture}, machines
    assert [entry.filename for entry in entries] == sorted(names)
    assert {entry.date_time for entry in entries} == {(1980, 1, 1, 0, 0, 0)}
    sources = [n for n in names if n.startswith(("outpost/", "functions/")) and n.endswith(".py")]
    for source in sources:
        folder, _, module = source.rpartition("/")
        assert f"{folder}/__pycache__/{module.removesuffix('.py')}.cpython-311.pyc" in names, source
    for check in enabled(stage):
        assert f"functions/{check.replace('-', '_')}/main.py" in names
    assert f"infra/environments/{name}.yaml" in names
    assert not [n for n in names if n.startswith(("bin/", "outpost_sandbox", "outpost/sandbox", "tests/"))]


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_template_runs_every_enabled_check_hardened(stages: dict[str, Stage], name: str) -> None:
    stage = stages[name]
    settings = stage.settings
    assert settings.deploy is not None
    functions = stage.resources("AWS::Lambda::Function")
    configs = {
        value["Properties"]["FunctionName"]["Ref"]: value["Properties"]
        for value in stage.resources("AWS::Lambda::EventInvokeConfig").values()
    }
    rules = {
        value["Properties"]["Targets"][0]["Arn"]["Fn::GetAtt"][0]: value["Properties"]
        for value in stage.resources("AWS::Events::Rule").values()
    }
    alarms = {
        value["Properties"]["AlarmName"]: value["Properties"]
        for value in stage.resources("AWS::CloudWatch::Alarm").values()
    }
    composites = {
        value["Properties"]["AlarmName"]: value["Properties"]
        for value in stage.resources("AWS::CloudWatch::CompositeAlarm").values()
    }
    dependants = [check for check in settings.enabled_checks() if held_parents(settings, check)]
    # An -alert per held alarm (every rule but flapping: alerting.HELD_RULES), and a -held suppressor.
    assert len(composites) == (len(HELD_RULES) + 1) * len(dependants)
    assert bool(dependants) == settings.hold_back.enabled
    assert len(stage.template["Resources"]) <= 500  # CloudFormation's limit per stack
    assert len(alarms) == len(ALARM_RULES) * len(settings.enabled_checks())
    assert len(functions) == len(settings.enabled_checks()) + deploys_inhibitor(settings) + deploys_notifier(settings)
    for check in enabled(stage):
        key = f"{logical_id(check)}LambdaFunction"
        function = functions[key]["Properties"]
        minutes = schedule_minutes(settings, check)
        assert function["FunctionName"] == function_name(name, check)
        assert function["Timeout"] == function_timeout_seconds(settings)
        assert function["Architectures"] == [lambda_architecture(settings)]
        assert function["ReservedConcurrentExecutions"] == 1
        assert function["Environment"]["Variables"]["OUTPOST_CONFIG"] == f"infra/environments/{name}.yaml"
        tags = {tag["Key"]: tag["Value"] for tag in function["Tags"]}
        assert tags == {"service": "outpost", "environment": name, "check": check}
        assert configs[key]["MaximumRetryAttempts"] == 0
        assert configs[key]["MaximumEventAgeInSeconds"] == min(max(minutes * 60, 60), 21_600)
        destination = settings.deploy.failure_destination
        assert (configs[key].get("DestinationConfig") or None) == (  # Serverless writes {} for none
            {"OnFailure": {"Destination": destination}} if destination else None
        )
        expected_rate = "rate(1 minute)" if minutes == 1 else f"rate({minutes} minutes)"
        assert rules[key]["ScheduleExpression"] == expected_rate
        # The check's alarms count its run lines' EMF metrics with the monitor's tolerance (outpost.tooling.alerting).
        for rule in alerting.rules(settings, check):
            alarm = alarms[alarm_name(name, check, rule.key)]
            assert (alarm["Namespace"], alarm["MetricName"], alarm["Threshold"]) == ("Outpost", rule.metric, 1)
            assert alarm["Dimensions"] == [{"Name": "environment", "Value": name}, {"Name": "check", "Value": check}]
            assert (alarm["Period"], alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]) == (
                minutes * 60,
                rule.periods,
                rule.datapoints,
            )
            assert alarm["TreatMissingData"] == "notBreaching"
            topic, condition = (
                ("AlarmTopicArn", "HasAlarmTopic") if rule.tier == "page" else ("NotifyTopicArn", "HasNotifyTopic")
            )
            # With hold-back, a dependant's held alarm acts through a composite alarm its parents' alarms suppress.
            held = held_parents(settings, check) and rule.key in HELD_RULES
            acting = composites.get(f"{alarm_name(name, check, rule.key)}-alert") if held else alarm
            assert acting is not None, (check, rule.key)
            # With messages, the notifier beside the tier's topic (never instead of it).
            expected: Any = (
                [
                    {"Fn::If": [condition, {"Ref": topic}, {"Ref": "AWS::NoValue"}]},
                    {"Fn::GetAtt": ["NotifierLambdaFunction", "Arn"]},
                ]
                if deploys_notifier(settings)
                else {"Fn::If": [condition, [{"Ref": topic}], {"Ref": "AWS::NoValue"}]}
            )
            assert acting["AlarmActions"] == acting["OKActions"] == expected
            if acting is not alarm:
                assert alarm["AlarmActions"] == alarm["OKActions"] == []
                assert "ActionsSuppressor" in acting
    log_groups = stage.resources("AWS::Logs::LogGroup")
    assert set(log_groups) == {f"{logical_id(name)}LogGroup" for name in entry_functions(settings)}
    for group in log_groups.values():  # kept by `serverless remove`, expired by logRetentionInDays
        assert (group["DeletionPolicy"], group["UpdateReplacePolicy"]) == ("Retain", "Retain")
        assert group["Properties"]["RetentionInDays"] == 30
    assert stage.resources("AWS::Lambda::Version") == {}  # no version piles up per deploy
    urls = stage.resources("AWS::Lambda::Url")
    assert {value["Properties"]["AuthType"] for value in urls.values()} == {"AWS_IAM"}
    assert len(urls) == len(settings.enabled_checks())  # the inhibitor and the notifier have none


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_notifier_runs_with_messages_only_invoked_by_the_stages_alarms_under_its_own_role(
    stages: dict[str, Stage], name: str
) -> None:
    stage = stages[name]
    settings = stage.settings
    functions = stage.resources("AWS::Lambda::Function")
    archived = set(zipfile.ZipFile(stage.archive).namelist())
    parameters = stage.template["Parameters"]
    assert parameters["MessagesTopicArn"]["Default"] == ""  # serverless.yml passes it to every stage
    (assertion,) = stage.template["Rules"]["MessagesTopic"]["Assertions"]
    alarm_permissions = [  # the schedules' own permissions (events.amazonaws.com) are Serverless's
        value
        for value in stage.resources("AWS::Lambda::Permission").values()
        if value["Properties"]["Principal"] != "events.amazonaws.com"
    ]
    if not deploys_notifier(settings):
        assert "NotifierLambdaFunction" not in functions
        assert "functions/notifier/main.py" not in archived
        assert assertion["Assert"] == {"Fn::Equals": [{"Ref": "MessagesTopicArn"}, ""]}
        assert not alarm_permissions
        return
    assert assertion["Assert"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "MessagesTopicArn"}, ""]}]}
    assert "functions/notifier/main.py" in archived
    notifier = functions["NotifierLambdaFunction"]["Properties"]
    assert notifier["FunctionName"] == function_name(name, "notifier")
    assert notifier["Handler"] == "functions/notifier/main.handler"
    assert notifier["Timeout"] == notifier_timeout_seconds(settings)
    assert notifier["Role"] == {"Fn::Sub": "${NotifierIamRole.Arn}"}
    assert notifier["Environment"]["Variables"] == {
        "OUTPOST_CONFIG": f"infra/environments/{name}.yaml",
        "OUTPOST_MESSAGES_TOPIC": {"Ref": "MessagesTopicArn"},
        "OUTPOST_RUNBOOK_BASE_URL": {"Ref": "RunbookBaseUrl"},
    }
    (config,) = [
        value["Properties"]
        for value in stage.resources("AWS::Lambda::EventInvokeConfig").values()
        if value["Properties"]["FunctionName"]["Ref"] == "NotifierLambdaFunction"
    ]
    assert (config["MaximumRetryAttempts"], config["MaximumEventAgeInSeconds"]) == (0, 900)
    rules = stage.resources("AWS::Events::Rule").values()
    assert not [r for r in rules if r["Properties"]["Targets"][0]["Arn"]["Fn::GetAtt"][0] == "NotifierLambdaFunction"]
    (permission,) = alarm_permissions
    account = "arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}"
    assert permission["Properties"] == {
        "Action": "lambda:InvokeFunction",
        "FunctionName": {"Fn::GetAtt": ["NotifierLambdaFunction", "Arn"]},
        "Principal": "lambda.alarms.cloudwatch.amazonaws.com",
        "SourceAccount": {"Ref": "AWS::AccountId"},
        "SourceArn": {"Fn::Sub": f"{account}:alarm:outpost-{name}-*"},
    }
    roles = stage.resources("AWS::IAM::Role")
    statements = roles["NotifierIamRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    logs = "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:/aws/lambda/"
    (read,) = [s for s in statements if s.get("Action") == ["logs:FilterLogEvents"]]
    assert read["Resource"] == [
        {"Fn::Sub": f"{logs}{function_name(name, check)}:*"} for check in settings.enabled_checks()
    ]
    (publish,) = [s for s in statements if "Fn::If" in s]
    assert publish["Fn::If"][1] == {
        "Effect": "Allow",
        "Action": ["sns:Publish"],
        "Resource": {"Ref": "MessagesTopicArn"},
    }
    everything = json.dumps(statements)
    assert "secretsmanager" not in everything
    assert "ssm:" not in everything
    assert "kms:" not in everything
    # The checks' shared role gains nothing for the notifier (its sns:Publish, if any, is the failure destination's).
    checks_role = json.dumps(roles["IamRoleLambdaExecution"])
    assert "MessagesTopicArn" not in checks_role
    assert "logs:FilterLogEvents" not in checks_role


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_inhibitor_runs_with_hold_back_only_unscheduled_under_its_own_role(
    stages: dict[str, Stage], name: str
) -> None:
    stage = stages[name]
    settings = stage.settings
    functions = stage.resources("AWS::Lambda::Function")
    roles = stage.resources("AWS::IAM::Role")
    archived = set(zipfile.ZipFile(stage.archive).namelist())
    if not deploys_inhibitor(settings):
        assert "InhibitorLambdaFunction" not in functions
        assert set(roles) == {"IamRoleLambdaExecution"}
        assert "functions/inhibitor/main.py" not in archived
        return
    assert "functions/inhibitor/main.py" in archived
    inhibitor = functions["InhibitorLambdaFunction"]["Properties"]
    assert inhibitor["FunctionName"] == function_name(name, "inhibitor")
    assert inhibitor["Handler"] == "functions/inhibitor/main.handler"
    assert inhibitor["Timeout"] == inhibitor_timeout_seconds(settings)
    assert inhibitor["Role"] == {"Fn::Sub": "${InhibitorIamRole.Arn}"}
    (config,) = [
        value["Properties"]
        for value in stage.resources("AWS::Lambda::EventInvokeConfig").values()
        if value["Properties"]["FunctionName"]["Ref"] == "InhibitorLambdaFunction"
    ]
    assert (config["MaximumRetryAttempts"], config["MaximumEventAgeInSeconds"]) == (0, 60)
    schedules = {
        value["Properties"]["Targets"][0]["Arn"]["Fn::GetAtt"][0]: value["Properties"]["ScheduleExpression"]
        for value in stage.resources("AWS::Events::Rule").values()
    }
    # Scheduled only to open recurring maintenance windows (outpost.recurring), every minute.
    expected = "rate(1 minute)" if settings.maintenance_windows else None
    assert schedules.get("InhibitorLambdaFunction") == expected
    urls = {
        value["Properties"]["TargetFunctionArn"]["Fn::GetAtt"][0]
        for value in stage.resources("AWS::Lambda::Url").values()
    }
    assert "InhibitorLambdaFunction" not in urls
    assert set(roles) == {"IamRoleLambdaExecution", "InhibitorIamRole"} | (
        {"NotifierIamRole"} if deploys_notifier(settings) else set()
    )
    inhibitor_statements = roles["InhibitorIamRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    checks_statements = roles["IamRoleLambdaExecution"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    key = secret_store_name(settings.vigilmon.api_key or "")
    assert key is not None
    key_name = key[1].lstrip("/")

    def reads(statements: list[dict[str, Any]]) -> str:
        return json.dumps(
            [s for s in statements if set(s["Action"]) & {"ssm:GetParameter", "secretsmanager:GetSecretValue"}]
        )

    assert key_name in reads(inhibitor_statements)
    assert key_name not in reads(checks_statements)
    invoke = [s for s in checks_statements if "lambda:InvokeFunction" in s["Action"]]
    assert [s["Resource"]["Fn::Sub"].rsplit(":", 1)[1] for s in invoke] == [function_name(name, "inhibitor")]


@pytest.mark.parametrize("name", EXAMPLES)
def test_iam_grants_exactly_the_stage_scope_its_key_and_its_role(stages: dict[str, Stage], name: str) -> None:
    stage = stages[name]
    settings = stage.settings
    assert settings.deploy is not None
    role = stage.resources("AWS::IAM::Role")["IamRoleLambdaExecution"]
    statements = role["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    by_action = {json.dumps(s["Action"]): s for s in statements}
    schemes = {ref.partition(":")[0] for _path, ref in settings.secret_references()}
    # Exactly the secrets the checks read, each by its own name (never a prefix, never the Vigilmon API key).
    checks_read = [secret_store_name(ref) for _path, ref in check_secret_references(settings)]
    ssm = by_action.get('["ssm:GetParameter"]')
    assert (ssm is not None) == ("ssm" in schemes - key_only_schemes(settings))
    if ssm:
        assert sorted(r["Fn::Sub"].split(":parameter", 1)[1] for r in ssm["Resource"]) == sorted(
            {n for s_, n in filter(None, checks_read) if s_ == "ssm"}
        )
    secrets = by_action.get('["secretsmanager:GetSecretValue"]')
    assert (secrets is not None) == ("secretsmanager" in schemes - key_only_schemes(settings))
    if secrets:
        assert sorted(r["Fn::Sub"].split(":secret:", 1)[1] for r in secrets["Resource"]) == sorted(
            {f"{n}-??????" for s_, n in filter(None, checks_read) if s_ == "secretsmanager"}
        )
    kms = by_action.get('["kms:Decrypt"]') if ssm or secrets else None
    assert (kms["Resource"] if kms else None) == settings.deploy.kms_key_arn
    role_arn = getattr(settings.cluster.auth, "role_arn", None)
    assume = by_action.get('["sts:AssumeRole"]')
    assert (assume["Resource"] if assume else None) == role_arn
    role_name = f"outpost-{name}-{settings.deploy.region}-lambdaRole"
    assert len(role_name) <= 64


def test_cfn_lint_is_clean_and_informational_findings_are_the_reviewed_ones(stages: dict[str, Stage]) -> None:
    templates = [
        str(stages[name].root / ".serverless" / "cloudformation-template-update-stack.json") for name in EXAMPLES
    ]
    cfn_lint = Path(sys.executable).parent / "cfn-lint"  # installed by the dev extra beside this Python
    process = subprocess.run(
        [str(cfn_lint), "--include-checks", "I", "--format", "json", "--", *templates],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    findings = json.loads(process.stdout or "[]")
    # Reviewed: I1022 (prefer Fn::Sub over Fn::Join) is raised on the deployment bucket policy the Serverless
    # Framework itself generates; the Join is equivalent and not ours to rewrite. Anything else fails the test.
    reviewed = [
        f
        for f in findings
        if f["Rule"]["Id"] == "I1022" and f["Location"]["Path"][:2] == ["Resources", "ServerlessDeploymentBucketPolicy"]
    ]
    unreviewed = [f"{f['Rule']['Id']} {f['Location']['Path']} {f['Message']}" for f in findings if f not in reviewed]
    assert unreviewed == [], unreviewed
    # cfn-lint's exit status is a bit mask: 1 fatal, 2 error, 4 warning, 8 informational.
    assert process.returncode & 0b0111 == 0, process.stderr


@dataclass(frozen=True)
class Refusal:
    arguments: tuple[str, ...]
    expected: str
    change: Callable[[Path], object] | None = None


def rewrite(path: Path, change: Callable[[str], str]) -> None:
    text = path.read_text()
    changed = change(text)
    # A change that no longer matches (the example's value moved on) would leave the build fresh and the case moot.
    assert changed != text, f"the case's change does not apply to {path}"
    path.unlink()  # the copy may share the inode with the build it was copied from
    path.write_text(changed)


def _replace_bundle(path: Path) -> None:
    path.unlink()
    path.write_bytes(b"PK\x05\x06" + b"\x00" * 18)  # an empty, valid zip: whatever was left in build/


REFUSALS = {
    "no stage": Refusal((), 'Cannot resolve variable at "provider.stage"'),
    "local stage": Refusal(("--stage", "local"), "stage local is the local sandbox's environment"),
    "stage without a build": Refusal(("--stage", "qa"), "no build for stage qa: run `outpost package --env qa`"),
    "environment file edited after the build": Refusal(
        ("--stage", "dev"),
        "build/dev is stale: infra/environments/dev.yaml changed since it was built",
        lambda root: rewrite(
            root / "infra/environments/dev.yaml",
            lambda text: re.sub(r"deadline_seconds: *\d+", "deadline_seconds: 600", text),
        ),
    ),
    "source changed after the build": Refusal(
        ("--stage", "dev"),
        "build/dev is stale: shared/outpost/runner.py changed since it was built",
        lambda root: rewrite(root / "shared/outpost/runner.py", lambda text: text + "\n# changed\n"),
    ),
    "source added after the build": Refusal(
        ("--stage", "dev"),
        "build/dev is stale: shared/outpost/added.py changed since it was built",
        lambda root: (root / "shared/outpost/added.py").write_text("ADDED = 1\n"),
    ),
    "lock changed after the build": Refusal(
        ("--stage", "dev"),
        "build/dev is stale: infra/locks/lambda-x86_64.txt changed since it was built",
        lambda root: rewrite(root / "infra/locks/lambda-x86_64.txt", lambda text: text + "# changed\n"),
    ),
    "bundle replaced": Refusal(
        ("--stage", "dev"),
        "the bundle build/dev/outpost-dev.zip is not the one built for stage dev",
        lambda root: _replace_bundle(root / "build/dev/outpost-dev.zip"),
    ),
    "another region": Refusal(
        ("--stage", "dev", "--region", "us-east-1"),
        "--region us-east-1: infra/environments/dev.yaml deploys to eu-west-1",
    ),
}


@pytest.fixture(scope="module")
def refusals(
    stages: dict[str, Stage], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, subprocess.CompletedProcess[str]]:
    base = tmp_path_factory.mktemp("refusals")

    def attempt(case: str) -> subprocess.CompletedProcess[str]:
        root = base / case.replace(" ", "-")
        # Hard links: cheap copies of the dev build; `rewrite` unlinks before writing, so nothing is shared.
        shutil.copytree(stages["dev"].root, root, copy_function=os.link, ignore=shutil.ignore_patterns(".serverless"))
        refusal = REFUSALS[case]
        if refusal.change is not None:
            refusal.change(root)
        return serverless(root, *refusal.arguments)

    return concurrently({case: functools.partial(attempt, case) for case in REFUSALS})


@pytest.mark.parametrize("case", list(REFUSALS))
def test_serverless_refuses_before_packaging_anything(
    refusals: dict[str, subprocess.CompletedProcess[str]], tmp_path_factory: pytest.TempPathFactory, case: str
) -> None:
    process = refusals[case]
    output = process.stdout + process.stderr
    assert process.returncode != 0, output
    assert REFUSALS[case].expected in " ".join(output.split()), output
    assert "Packaging outpost" not in output


def test_the_build_record_and_the_guard_hash_the_same_files(stages: dict[str, Stage]) -> None:
    stage = stages["staging"]
    recorded = stage.deployment["build"]
    inputs = source_inputs(stage.root, environment_file("staging", stage.root))
    assert recorded["inputs"] == inputs
    assert recorded["inputs_sha256"] == inputs_digest(inputs)
    assert "infra/environments/staging.yaml" in inputs
    assert "pyproject.toml" in inputs
    assert {"infra/locks/lambda-arm64.txt", "infra/locks/lambda-x86_64.txt"} <= set(inputs)  # what bundles install
    assert not [name for name in inputs if "__pycache__" in name or name.endswith(".pyc")]
    # The guard accepted this very build (serverless package succeeded), so it computed the same digest.
    assert stage.packaged.returncode == 0


def test_outpost_package_refuses_local_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = project(tmp_path / "project")
    assert cli.main(["package", "--env", "local", "--root", str(root)]) == cli.EXIT_USAGE
    assert "deploy: missing: this environment runs locally only" in capsys.readouterr().err
    assert not (root / "build").exists()


def test_outpost_package_refuses_an_example_made_incomplete(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = project(tmp_path / "project")
    document = yaml.safe_load((root / "infra/environments/prod.yaml").read_text())
    for check in document["checks"].values():
        check.pop("heartbeat")
    document["vigilmon"]["api_key"] = "env:VIGILMON_API_KEY"
    (root / "infra/environments/prod.yaml").write_text(yaml.safe_dump(document))
    assert cli.main(["package", "--env", "prod", "--root", str(root)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    for check in document["checks"]:
        assert f"  checks.{check}.heartbeat: required for a deployed check" in err
    assert "  vigilmon.api_key: env: references cannot be read on aws" in err
    assert not (root / "build").exists()
