"""infra/gcp (Terraform) against the example Google Cloud environment, without the provider.

`terraform validate` needs the google provider, which cannot be downloaded here, so `terraform fmt -check` runs
and the parsed files (python-hcl2) are checked against the provider's documented schema (PROVIDER_SCHEMA) and
what `outpost package --platform gcp` writes: declared references and variables; one function and one scheduler
job per enabled check (one instance, derived timeout, no retries, OIDC to its own URI); least-privilege IAM,
nothing for allUsers; an archive whose main.py serves `OUTPOST_CHECK`; the run-count metric and one alert policy per
enabled check and alarm rule, as outpost.tooling.alerting derives them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hcl2
import pytest

from outpost import cli, registry
from outpost.config import environment_file
from outpost.deploy import (
    ALARM_RULES,
    cron_schedule,
    function_name,
    function_timeout_seconds,
    inhibitor_service_account,
    inhibitor_timeout_seconds,
    notifier_service_account,
    notifier_timeout_seconds,
    schedule_minutes,
    service_accounts,
)
from outpost.settings import load_settings
from outpost.tooling import alerting
from outpost.tooling.packaging.records import file_sha256

REPO = Path(__file__).resolve().parents[2]
TERRAFORM_DIR = REPO / "infra" / "gcp"
EXAMPLE = "gcp-dev"
TERRAFORM = shutil.which("terraform") or "/usr/local/bin/terraform"

# hashicorp/google 7.x registry docs (resources/<type> without the google_ prefix): arguments marked Required,
# nested blocks as `block.sub` paths (required where we rely on them), and the attributes the configuration reads.
PROVIDER_SCHEMA: dict[str, dict[str, tuple[str, ...]]] = {
    "google_service_account": {"required": ("account_id",), "attributes": ("email", "name", "member")},
    "google_secret_manager_secret_iam_member": {"required": ("secret_id", "role", "member"), "attributes": ()},
    "google_project_iam_member": {"required": ("project", "role", "member"), "attributes": ()},
    "google_storage_bucket": {"required": ("name", "location"), "attributes": ("name", "url")},
    "google_storage_bucket_object": {"required": ("name", "bucket"), "attributes": ("name", "md5hash")},
    "google_cloudfunctions2_function": {
        "required": (
            "name",
            "location",
            "build_config.runtime",
            "build_config.entry_point",
            "build_config.source.storage_source.bucket",
            "build_config.source.storage_source.object",
        ),
        "attributes": ("name", "location", "url", "service_config"),
    },
    "google_cloud_run_service_iam_member": {"required": ("service", "role", "member"), "attributes": ()},
    "google_cloud_scheduler_job": {
        "required": ("name", "http_target.uri", "http_target.oidc_token.service_account_email"),
        "attributes": (),
    },
    "google_logging_metric": {
        "required": ("name", "filter", "metric_descriptor.metric_kind", "metric_descriptor.value_type"),
        "attributes": ("name", "id"),
    },
    "google_pubsub_topic": {"required": ("name",), "attributes": ("id", "name")},
    "google_pubsub_topic_iam_member": {"required": ("topic", "role", "member"), "attributes": ()},
    "google_monitoring_notification_channel": {"required": ("type",), "attributes": ("id", "name")},
    "google_monitoring_alert_policy": {
        "required": (
            "display_name",
            "combiner",
            "conditions.display_name",
            "conditions.condition_threshold.comparison",
            "conditions.condition_threshold.duration",
        ),
        "attributes": ("name",),
    },
}
# Data sources (data/<type>): its arguments marked Required, and the attributes read.
DATA_SCHEMA: dict[str, dict[str, tuple[str, ...]]] = {
    "google_project": {"required": (), "attributes": ("number", "project_id")},
}
# Attribute paths read from a nested block (`service_config[0].uri`): computed outputs the provider documents.
NESTED_ATTRIBUTES = {("google_cloudfunctions2_function", "service_config"): ("uri", "service")}
PUBLIC_MEMBERS = ("allUsers", "allAuthenticatedUsers")
REFERENCE = re.compile(r"(?<![\w.\"])(google_[a-z0-9_]+)\.([a-z0-9_]+)((?:\[[^\]]*\])?(?:\.[a-z0-9_]+(?:\[\d+\])?)*)")


def unquoted(value: Any) -> Any:
    """python-hcl2 keeps literal strings and block labels quoted ("\"x\""): strip that, recursively."""
    if isinstance(value, str):
        return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value
    if isinstance(value, list):
        return [unquoted(item) for item in value]
    if isinstance(value, dict):
        return {
            unquoted(key): unquoted(item)
            for key, item in value.items()
            if key not in ("__is_block__", "__comments__", "__inline_comments__")
        }
    return value


@pytest.fixture(scope="module")
def terraform() -> dict[str, Any]:
    """All blocks of infra/gcp: {"resource": {type: {name: body}}, "variable": {...}, "locals": {...}, ...}."""
    merged: dict[str, Any] = {"resource": {}, "variable": {}, "locals": {}, "output": {}, "data": {}}
    for path in sorted(TERRAFORM_DIR.glob("*.tf")):
        with path.open() as stream:
            document = unquoted(hcl2.load(stream))
        for kind in ("resource", "data"):
            for block in document.get(kind, []):
                for rtype, named in block.items():
                    merged[kind].setdefault(rtype, {}).update(named)
        for kind in ("variable", "output"):
            for block in document.get(kind, []):
                merged[kind].update(block)
        for block in document.get("locals", []):
            merged["locals"].update(block)
        merged.setdefault("text", "")
        merged["text"] += path.read_text()
    return merged


@pytest.fixture(scope="module")
def packaged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """`outpost package --env gcp-dev --platform gcp` in a copy of the project; (build dir, variables)."""
    root = tmp_path_factory.mktemp("gcp") / "project"
    shutil.copytree(
        REPO / "shared" / "outpost", root / "shared" / "outpost", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    shutil.copytree(REPO / "functions", root / "functions", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "infra" / "environments", root / "infra" / "environments")
    shutil.copytree(TERRAFORM_DIR, root / "infra" / "gcp")
    shutil.copytree(REPO / "infra" / "locks", root / "infra" / "locks")
    shutil.copy2(REPO / "pyproject.toml", root / "pyproject.toml")
    assert cli.main(["package", "--env", EXAMPLE, "--platform", "gcp", "--root", str(root)]) == 0
    target = root / "build" / EXAMPLE
    return target, json.loads((target / "terraform.tfvars.json").read_text())


def test_terraform_fmt_check_passes() -> None:
    # The CLI comes with the machine image (/usr/local/bin/terraform); without it this fails, never skips.
    assert Path(TERRAFORM).is_file(), (
        "terraform CLI not found (expected on PATH or /usr/local/bin/terraform, part of the machine image): "
        "infra/gcp cannot be format-checked"
    )
    process = subprocess.run(
        [TERRAFORM, "fmt", "-check", "-recursive", "-diff", str(TERRAFORM_DIR)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={**os.environ, "TF_CLI_CONFIG_FILE": os.devnull, "CHECKPOINT_DISABLE": "1"},
    )
    assert process.returncode == 0, f"terraform fmt -check -recursive infra/gcp:\n{process.stdout}{process.stderr}"


def nested(body: dict[str, Any], path: str) -> list[Any]:
    """Values at a dotted path through nested blocks (each a list of bodies in python-hcl2's output)."""
    head, _, rest = path.partition(".")
    value = body.get(head)
    if value is None:
        return []
    if not rest:
        return [value]
    blocks = value if isinstance(value, list) else [value]
    return [found for block in blocks if isinstance(block, dict) for found in nested(block, rest)]


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings(key)
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def test_resource_types_and_required_arguments_are_as_the_provider_documents(terraform: dict[str, Any]) -> None:
    resources = terraform["resource"]
    undocumented = set(resources) - set(PROVIDER_SCHEMA)
    assert not undocumented, f"resource types outside the documented table: {undocumented}"
    assert set(terraform["data"]) <= set(DATA_SCHEMA), f"data sources outside the table: {set(terraform['data'])}"
    for dtype, named in terraform["data"].items():
        for name, body in named.items():
            for argument in DATA_SCHEMA[dtype]["required"]:
                assert nested(body, argument), f"data.{dtype}.{name}: required argument {argument} missing"
    for rtype, named in resources.items():
        for name, body in named.items():
            for argument in PROVIDER_SCHEMA[rtype]["required"]:
                assert nested(body, argument), f"{rtype}.{name}: required argument {argument} missing"


def test_every_reference_resolves_to_something_declared(terraform: dict[str, Any]) -> None:
    declared = {(rtype, name) for rtype, named in terraform["resource"].items() for name in named}
    expressions = list(strings({kind: terraform[kind] for kind in ("resource", "locals", "output", "variable")}))
    seen = set()
    for text in expressions:
        for variable in re.findall(r"\bvar\.([a-z0-9_]+)", text):
            assert variable in terraform["variable"], f"var.{variable} is not declared ({text})"
            seen.add(f"var.{variable}")
        for local in re.findall(r"\blocal\.([a-z0-9_]+)", text):
            assert local in terraform["locals"], f"local.{local} is not declared ({text})"
        for rtype, name, tail in REFERENCE.findall(text):
            assert (rtype, name) in declared, f"{rtype}.{name} is not declared ({text})"
            attribute = re.sub(r"^\[[^\]]*\]", "", tail).lstrip(".")
            if not attribute:
                continue  # a whole resource (depends_on, for_each over its instances)
            first, *more = attribute.split(".")
            first_name = first.split("[")[0]
            assert first_name in PROVIDER_SCHEMA[rtype]["attributes"], f"{rtype} exports no {first_name} ({text})"
            if more:
                assert more[0] in NESTED_ATTRIBUTES[(rtype, first_name)], f"{rtype}.{first_name} has no {more[0]}"
    for dtype, name, attribute in re.findall(
        r"\bdata\.([a-z0-9_]+)\.([a-z0-9_]+)(?:\[\d+\])?\.([a-z0-9_]+)", "".join(expressions)
    ):
        assert name in terraform["data"].get(dtype, {}), f"data.{dtype}.{name} is not declared"
        assert attribute in DATA_SCHEMA[dtype]["attributes"], f"data.{dtype} exports no {attribute}"
    unused = set(f"var.{name}" for name in terraform["variable"]) - seen
    assert not unused, f"variables declared but never used: {sorted(unused)}"


def test_the_variables_file_sets_every_variable_the_configuration_needs(
    terraform: dict[str, Any], packaged: tuple[Path, dict[str, Any]]
) -> None:
    target, variables = packaged
    needed = {name for name, body in terraform["variable"].items() if "default" not in body}
    assert needed <= set(variables), f"missing from terraform.tfvars.json: {sorted(needed - set(variables))}"
    assert set(variables) <= set(terraform["variable"]), f"undeclared: {set(variables) - set(terraform['variable'])}"
    # The archive path is relative to infra/gcp (terraform -chdir=infra/gcp) and is the build's archive.
    archive = (target.parents[1] / "infra" / "gcp" / variables["source_archive"]).resolve()
    assert archive == (target / f"outpost-{EXAMPLE}-gcf.zip").resolve()
    assert variables["source_sha256"] == file_sha256(archive)
    deployment = json.loads((target / "deployment.json").read_text())
    assert deployment["terraform"] == {"directory": "infra/gcp", "variables": "terraform.tfvars.json"}


def test_one_function_and_one_schedule_per_enabled_check(
    terraform: dict[str, Any], packaged: tuple[Path, dict[str, Any]]
) -> None:
    _, variables = packaged
    settings = load_settings(environment_file(EXAMPLE, REPO))
    enabled = settings.enabled_checks()
    # The whole catalogue of checks (the opt-in writing job kwok-pod-reconciler aside), as dev/staging/prod do.
    assert set(enabled) == set(registry.names()) - {"kwok-pod-reconciler"}
    assert list(variables["checks"]) == enabled
    for name in enabled:
        entry = variables["checks"][name]
        assert entry["function_name"] == function_name(EXAMPLE, name)
        assert entry["schedule"] == cron_schedule(schedule_minutes(settings, name))
    assert variables["timeout_seconds"] == function_timeout_seconds(settings)
    assert variables["runtime"] == "python311"
    assert variables["entry_point"] == "http"
    assert variables["config_path"] == f"infra/environments/{EXAMPLE}.yaml"
    accounts = service_accounts(EXAMPLE)
    assert (variables["runtime_account_id"], variables["invoker_account_id"]) == (
        accounts["runtime"],
        accounts["invoker"],
    )
    # One function and one job resource, each instantiated once per entry of var.checks (and the inhibitor's).
    functions = terraform["resource"]["google_cloudfunctions2_function"]["check"]
    jobs = terraform["resource"]["google_cloud_scheduler_job"]["check"]
    assert functions["for_each"] == jobs["for_each"] == "${var.checks}"
    assert functions["name"] == jobs["name"] == "${each.value.function_name}"
    assert jobs["schedule"] == "${each.value.schedule}"


def test_one_alert_policy_per_enabled_check_and_rule_on_the_run_count_metric(
    terraform: dict[str, Any], packaged: tuple[Path, dict[str, Any]]
) -> None:
    """The policies count the run lines' outcomes (the log-based metric's `status` label, per `check`) over the
    window and threshold outpost.tooling.alerting derives; missing data never opens one (silence is Vigilmon's)."""
    _, variables = packaged
    settings = load_settings(environment_file(EXAMPLE, REPO))
    assert set(variables["alarms"]) == {f"{name}/{rule}" for name in settings.enabled_checks() for rule in ALARM_RULES}
    (metric,) = terraform["resource"]["google_logging_metric"].values()
    assert metric["label_extractors"] == {
        "check": "EXTRACT(jsonPayload.check)",
        "status": "EXTRACT(jsonPayload.status)",
    }
    (policy,) = terraform["resource"]["google_monitoring_alert_policy"].values()
    assert policy["for_each"] == "${var.alarms}"
    ((condition,),) = nested(policy, "conditions.condition_threshold")
    filters = " ".join(strings(condition["filter"]))
    for needed in ("google_logging_metric.runs.name", "each.value.check", "each.value.status"):
        assert needed in filters, needed
    assert (condition["comparison"], condition["threshold_value"], condition["duration"]) == (
        "COMPARISON_GT",
        "${each.value.threshold}",
        "${each.value.wait_seconds}s",
    )
    assert condition["evaluation_missing_data"] == "EVALUATION_MISSING_DATA_INACTIVE"
    (aggregation,) = condition["aggregations"]
    assert aggregation["alignment_period"] == "${each.value.window_seconds}s"
    assert aggregation["per_series_aligner"] == "ALIGN_SUM"
    (documentation,) = nested(policy, "documentation.content")
    assert "${var.runbook_base_url}${each.value.runbook_path}" in documentation
    assert "${each.value.logs_query}" in documentation


def test_a_dependants_policy_also_needs_its_parents_quiet(
    terraform: dict[str, Any], packaged: tuple[Path, dict[str, Any]]
) -> None:
    """Held back on Google Cloud as the composite alarms hold back on AWS: a dependant's policy is AND of its own
    condition (waiting the suppression's wait) and, per group of parents, "fewer than `runs` failed-or-error runs of
    each" (met on missing data, after the extension); a check depending on none has its own condition alone."""
    _, variables = packaged
    settings = load_settings(environment_file(EXAMPLE, REPO))
    assert settings.hold_back.enabled
    for key, policy in variables["alarms"].items():
        rule = next(r for r in alerting.rules(settings, policy["check"]) if f"{r.check}/{r.key}" == key)
        held = alerting.suppression(settings, rule)
        if held is None:
            assert (policy["quiet"], policy["wait_seconds"]) == ([], 0), key
            continue
        assert policy["wait_seconds"] == held.wait_seconds > 0, key
        assert sorted(c for quiet in policy["quiet"] for c in quiet["checks"]) == sorted(held.parents), key
        for quiet in policy["quiet"]:
            assert quiet["duration_seconds"] == held.extension_seconds, key
            assert quiet["runs"] * 60 <= quiet["window_seconds"], key
        assert "held back while" in policy["summary"], key
    assert any(policy["quiet"] for policy in variables["alarms"].values())
    (policy,) = terraform["resource"]["google_monitoring_alert_policy"].values()
    assert policy["combiner"] == '${length(each.value.quiet) > 0 ? "AND" : "OR"}'
    (dynamic,) = nested(policy, "dynamic.conditions")
    assert dynamic["for_each"] == "${each.value.quiet}"
    ((condition,),) = nested(dynamic, "content.condition_threshold")
    filters = " ".join(strings(condition["filter"]))
    for needed in (
        "google_logging_metric.runs.name",
        'monitoring.regex.full_match(\\"${join("|", conditions.value.checks)}\\")',
        'monitoring.regex.full_match(\\"failed|error\\")',
    ):
        assert needed in filters, (needed, filters)
    assert (condition["comparison"], condition["threshold_value"], condition["duration"]) == (
        "COMPARISON_LT",
        "${conditions.value.runs}",
        "${conditions.value.duration_seconds}s",
    )
    assert condition["evaluation_missing_data"] == "EVALUATION_MISSING_DATA_ACTIVE"
    (aggregation,) = condition["aggregations"]
    assert aggregation["alignment_period"] == "${conditions.value.window_seconds}s"
    assert aggregation["group_by_fields"] == ["metric.label.check"]
    (trigger,) = condition["trigger"]
    assert trigger == {"percent": 100}


def test_functions_run_one_instance_with_the_derived_timeout_as_the_runtime_account(terraform: dict[str, Any]) -> None:
    function = terraform["resource"]["google_cloudfunctions2_function"]["check"]
    (build,) = function["build_config"]
    assert (build["runtime"], build["entry_point"]) == ("${var.runtime}", "${var.entry_point}")
    (service,) = function["service_config"]
    assert service["max_instance_count"] == 1
    assert service["timeout_seconds"] == "${var.timeout_seconds}"
    assert service["service_account_email"] == "${google_service_account.runtime.email}"
    # With hold-back, the inhibitor's URI from the same apply (empty otherwise).
    assert re.sub(r"\s+", " ", service["environment_variables"]) == (
        "${merge({OUTPOST_CONFIG = var.config_path, OUTPOST_CHECK = each.key}, local.inhibitor_url)}"
    )
    assert terraform["locals"]["inhibitor_url"] == (
        "${{for uri in google_cloudfunctions2_function.inhibitor[*].service_config[0].uri : "
        '"OUTPOST_INHIBITOR_URL" => uri}}'
    )


def test_the_inhibitor_is_deployed_with_hold_back_under_its_own_account_reading_the_api_key_alone(
    terraform: dict[str, Any], packaged: tuple[Path, dict[str, Any]]
) -> None:
    _, variables = packaged
    settings = load_settings(environment_file(EXAMPLE, REPO))
    assert settings.hold_back.enabled
    assert variables["inhibitor"] == {
        "function_name": function_name(EXAMPLE, "inhibitor"),
        "description": f"Outpost inhibitor ({EXAMPLE}): holds back the dependants of a failing check",
        "entry_point": "inhibitor",
        "account_id": inhibitor_service_account(EXAMPLE),
        "timeout_seconds": inhibitor_timeout_seconds(settings),
        "schedule": "* * * * *",  # the example declares a recurring maintenance window: a tick every minute
        "attempt_deadline_seconds": inhibitor_timeout_seconds(settings) + 30,
        "tick_body": json.dumps({"environment": EXAMPLE, "tick": "maintenance-windows"}, sort_keys=True),
    }
    assert settings.maintenance_windows
    assert len(variables["inhibitor"]["account_id"]) <= 30
    key = (settings.vigilmon.api_key or "").removeprefix("gcpsm:").split("/versions/")[0]
    assert variables["inhibitor_secrets"] == [key]
    assert key not in variables["secrets"]
    resources = terraform["resource"]
    function = resources["google_cloudfunctions2_function"]["inhibitor"]
    assert function["count"] == "${var.inhibitor == null ? 0 : 1}"
    (build,) = function["build_config"]
    assert build["entry_point"] == "${var.inhibitor.entry_point}"
    (service,) = function["service_config"]
    assert service["service_account_email"] == "${google_service_account.inhibitor[0].email}"
    assert service["timeout_seconds"] == "${var.inhibitor.timeout_seconds}"
    assert service["environment_variables"] == {"OUTPOST_CONFIG": "${var.config_path}"}
    accessor = resources["google_secret_manager_secret_iam_member"]["inhibitor"]
    assert accessor["for_each"] == "${toset(var.inhibitor == null ? [] : var.inhibitor_secrets)}"
    assert accessor["role"] == "roles/secretmanager.secretAccessor"
    assert accessor["member"] == "serviceAccount:${google_service_account.inhibitor[0].email}"
    invoker = resources["google_cloud_run_service_iam_member"]["inhibitor"]
    assert (invoker["role"], invoker["member"]) == ("roles/run.invoker", "${local.runtime_member}")
    assert invoker["service"] == "${google_cloudfunctions2_function.inhibitor[0].name}"
    # The tick: a job of its own, as the invoker account, with the tick's body, only with recurring windows.
    tick = resources["google_cloud_scheduler_job"]["inhibitor"]
    assert tick["count"] == "${var.inhibitor == null ? 0 : (var.inhibitor.schedule == null ? 0 : 1)}"
    (target,) = tick["http_target"]
    assert target["body"] == "${base64encode(var.inhibitor.tick_body)}"
    (token,) = target["oidc_token"]
    assert token["service_account_email"] == "${google_service_account.invoker.email}"
    assert target["uri"] == token["audience"] == "${google_cloudfunctions2_function.inhibitor[0].service_config[0].uri}"
    (retry,) = tick["retry_config"]
    assert retry["retry_count"] == 0
    ticker = resources["google_cloud_run_service_iam_member"]["inhibitor_tick"]
    assert (ticker["role"], ticker["member"]) == ("roles/run.invoker", "${local.invoker_member}")


def test_the_notifier_is_deployed_with_messages_on_the_incidents_channel_beside_every_policys_channels(
    terraform: dict[str, Any], packaged: tuple[Path, dict[str, Any]]
) -> None:
    _, variables = packaged
    settings = load_settings(environment_file(EXAMPLE, REPO))
    assert settings.messages.enabled
    assert variables["notifier"] == {
        "function_name": function_name(EXAMPLE, "notifier"),
        "description": f"Outpost notifier ({EXAMPLE}): what to do, on each alert policy's incident",
        "entry_point": "notifier",
        "account_id": notifier_service_account(EXAMPLE),
        "timeout_seconds": notifier_timeout_seconds(settings),
        "incidents_topic": f"outpost-{EXAMPLE}-incidents",
    }
    assert "messages_topic" not in variables  # the deployer's: -var messages_topic=projects/P/topics/T
    messages_topic = terraform["variable"]["messages_topic"]
    assert messages_topic["default"] == ""
    resources = terraform["resource"]
    off = "${var.notifier == null ? 0 : 1}"
    for rtype, name in (
        ("google_pubsub_topic", "incidents"),
        ("google_pubsub_topic_iam_member", "incidents_monitoring"),
        ("google_monitoring_notification_channel", "incidents"),
        ("google_service_account", "notifier"),
        ("google_project_iam_member", "notifier_logs"),
        ("google_pubsub_topic_iam_member", "notifier_publish"),
        ("google_cloudfunctions2_function", "notifier"),
        ("google_cloud_run_service_iam_member", "notifier"),
    ):
        assert resources[rtype][name]["count"] == off, (rtype, name)
    assert terraform["data"]["google_project"]["this"]["count"] == off
    channel = resources["google_monitoring_notification_channel"]["incidents"]
    assert channel["type"] == "pubsub"
    assert channel["labels"] == {"topic": "${google_pubsub_topic.incidents[0].id}"}
    # Cloud Monitoring's notification service agent publishes the incidents, nothing more.
    agent = resources["google_pubsub_topic_iam_member"]["incidents_monitoring"]
    assert (agent["topic"], agent["role"]) == ("${google_pubsub_topic.incidents[0].id}", "roles/pubsub.publisher")
    assert agent["member"].endswith("@gcp-sa-monitoring-notification.iam.gserviceaccount.com")
    # Every policy: its tier's channels, and the incidents channel beside them (none without messages).
    policy = resources["google_monitoring_alert_policy"]["check"]
    channels = policy["notification_channels"]
    assert "var.page_notification_channels : var.notify_notification_channels" in channels
    assert "google_monitoring_notification_channel.incidents[*].id" in channels
    assert channels.startswith("${concat(")
    # The notifier's account: read log entries, publish to the messages topic; nothing else.
    member = "serviceAccount:${google_service_account.notifier[0].email}"
    grants = [
        (rtype, name, body["role"])
        for rtype, named in resources.items()
        if "_iam_" in rtype
        for name, body in named.items()
        if body["member"] == member
    ]
    assert sorted(grants) == [
        ("google_cloud_run_service_iam_member", "notifier", "roles/run.invoker"),
        ("google_project_iam_member", "notifier_logs", "roles/logging.viewer"),
        ("google_pubsub_topic_iam_member", "notifier_publish", "roles/pubsub.publisher"),
    ]
    assert resources["google_pubsub_topic_iam_member"]["notifier_publish"]["topic"] == "${var.messages_topic}"
    invoker = resources["google_cloud_run_service_iam_member"]["notifier"]
    assert invoker["service"] == "${google_cloudfunctions2_function.notifier[0].name}"
    function = resources["google_cloudfunctions2_function"]["notifier"]
    (build,) = function["build_config"]
    assert build["entry_point"] == "${var.notifier.entry_point}"
    (service,) = function["service_config"]
    assert service["service_account_email"] == "${google_service_account.notifier[0].email}"
    assert service["timeout_seconds"] == "${var.notifier.timeout_seconds}"
    assert service["ingress_settings"] == "ALLOW_INTERNAL_ONLY"
    assert service["environment_variables"] == {
        "OUTPOST_CONFIG": "${var.config_path}",
        "OUTPOST_MESSAGES_TOPIC": "${var.messages_topic}",
        "OUTPOST_RUNBOOK_BASE_URL": "${var.runbook_base_url}",
    }
    (trigger,) = function["event_trigger"]
    assert trigger["event_type"] == "google.cloud.pubsub.topic.v1.messagePublished"
    assert trigger["pubsub_topic"] == "${google_pubsub_topic.incidents[0].id}"
    assert trigger["retry_policy"] == "RETRY_POLICY_DO_NOT_RETRY"
    assert trigger["service_account_email"] == "${google_service_account.notifier[0].email}"
    (lifecycle,) = function["lifecycle"]
    (precondition,) = lifecycle["precondition"]
    assert precondition["condition"] == '${var.messages_topic != ""}'


def test_schedules_never_retry_and_call_with_the_invokers_oidc_token_for_the_function_uri(
    terraform: dict[str, Any],
) -> None:
    job = terraform["resource"]["google_cloud_scheduler_job"]["check"]
    (retry,) = job["retry_config"]
    assert retry["retry_count"] == 0
    (target,) = job["http_target"]
    (token,) = target["oidc_token"]
    uri = "${google_cloudfunctions2_function.check[each.key].service_config[0].uri}"
    assert target["uri"] == token["audience"] == uri
    assert target["http_method"] == "POST"
    assert token["service_account_email"] == "${google_service_account.invoker.email}"
    assert "oauth_token" not in target


def test_only_the_invoker_may_call_and_only_the_runtime_reads_exactly_the_environments_secrets(
    terraform: dict[str, Any], packaged: tuple[Path, dict[str, Any]]
) -> None:
    _, variables = packaged
    for public in PUBLIC_MEMBERS:
        assert public not in terraform["text"], f"{public} appears in infra/gcp"
    locals_ = terraform["locals"]
    resources = terraform["resource"]
    iam = {
        (rtype, name): body for rtype, named in resources.items() if "_iam_" in rtype for name, body in named.items()
    }
    assert not [key for key in iam if not key[0].endswith("_iam_member")], "only additive *_iam_member grants"
    invokers = [(key, body) for key, body in iam.items() if body["role"] == "roles/run.invoker"]
    assert [key for key, _ in invokers] == [
        ("google_cloud_run_service_iam_member", "invoker"),
        ("google_cloud_run_service_iam_member", "inhibitor"),  # the checks' runtime account, on the inhibitor
        ("google_cloud_run_service_iam_member", "inhibitor_tick"),  # the invoker, for the recurring windows' tick
        ("google_cloud_run_service_iam_member", "notifier"),  # the notifier's account, its trigger's identity
    ]
    invoker = iam[("google_cloud_run_service_iam_member", "invoker")]
    assert invoker["member"] == "${local.invoker_member}"
    assert locals_["invoker_member"] == "serviceAccount:${google_service_account.invoker.email}"
    assert invoker["for_each"] == "${google_cloudfunctions2_function.check}"
    assert invoker["service"] == "${each.value.name}"
    accessor = iam[("google_secret_manager_secret_iam_member", "runtime")]
    assert accessor["role"] == "roles/secretmanager.secretAccessor"
    assert accessor["for_each"] == "${toset(var.secrets)}"
    assert accessor["member"] == "${local.runtime_member}"
    assert locals_["runtime_member"] == "serviceAccount:${google_service_account.runtime.email}"
    settings = load_settings(environment_file(EXAMPLE, REPO))
    referenced = {
        ref.removeprefix("gcpsm:").split("/versions/")[0]
        for path, ref in settings.secret_references()
        if path != "vigilmon.api_key"  # the inhibitor's alone
    }
    assert variables["secrets"] == sorted(referenced)
    assert len(referenced) == len(settings.enabled_checks())  # every heartbeat, never the Vigilmon API key
    inhibitor_member = "serviceAccount:${google_service_account.inhibitor[0].email}"
    notifier_member = "serviceAccount:${google_service_account.notifier[0].email}"
    monitoring_agent = (
        "serviceAccount:service-${data.google_project.this[0].number}"
        "@gcp-sa-monitoring-notification.iam.gserviceaccount.com"
    )
    members = (
        "${local.runtime_member}",
        "${local.invoker_member}",
        inhibitor_member,
        notifier_member,
        monitoring_agent,
    )
    for (rtype, name), body in iam.items():
        assert body["member"] in members, (rtype, name)


def test_the_source_has_main_py_whose_http_target_serves_the_check_outpost_check_names(
    packaged: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    target, variables = packaged
    with zipfile.ZipFile(target / f"outpost-{EXAMPLE}-gcf.zip") as source:
        assert {"main.py", "requirements.txt", f"infra/environments/{EXAMPLE}.yaml"} <= set(source.namelist())
        source.extractall(tmp_path)
    probe = (
        "import sys; sys.path.insert(0, '.'); import functions_framework; "
        "app = functions_framework.create_app(target='http', source='main.py'); "
        "print(app.test_client().put('/').status_code)"
    )

    def serve(check: str) -> subprocess.CompletedProcess[str]:
        """The source's main.py started as functions-framework starts it, with OUTPOST_CHECK=check."""
        return subprocess.run(
            [sys.executable, "-c", probe],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={"OUTPOST_CONFIG": variables["config_path"], "PATH": os.environ["PATH"], "OUTPOST_CHECK": check},
            check=False,
            timeout=120,
        )

    served = serve("webhook-cert-expiry")
    assert (served.returncode, served.stdout.strip()) == (0, "405"), served.stderr
    refused = serve("no-such-check")
    assert refused.returncode != 0
    assert "$OUTPOST_CHECK='no-such-check': not an enabled check" in refused.stderr
