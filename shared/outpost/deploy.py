"""What makes an environment deployable, and the numbers and names a deployment derives from it.

Only an environment with a `deploy` section is deployable. `deployment_problems` (applied by `load_settings`, so
validate, package and cold start agree) names every field that would leave a check unheard: generated names over
a provider's limit, an enabled check without heartbeat, monitor or alert channel, secrets the deployed function
cannot read (`env:`, another platform's store, outside the IAM scope), an auth mode the platform cannot use, a
derived timeout (deadline + heartbeat worst case + margin) over the platform's maximum. It refuses rather than
warns because Outpost's alarm is silence: a check that cannot ping is an outage nobody hears.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from outpost import registry
from outpost.config import CheckSettings, EksAuth, GkeAuth, KubeconfigAuth, Settings, TokenAuth
from outpost.heartbeat import worst_case_seconds
from outpost.secrets import parse_secret_ref

SERVICE: Final = "outpost"
"""The Serverless service name (serverless.yml `service:`): the first part of every generated AWS name."""

NOT_DEPLOYABLE: Final = frozenset({"local"})
"""Environment names reserved for local runs (the sandbox)."""

PLATFORM_MARGIN_SECONDS: Final = 5.0
"""Cold start, settings and the log line: what a run needs beyond its deadline and heartbeat budget."""

PLATFORM_MAX_TIMEOUT_SECONDS: Final = {"aws": 900, "gcf": 540}
"""The longest a function may run: Lambda's 15 minutes; Cloud Functions' 9 (1st gen and event-driven)."""

MONITOR_MARGIN_FLOOR_SECONDS: Final = 60
"""The smallest margin added to a monitor's grace (docs/contracts.md "Heartbeat contract")."""

ALERT_TARGET_SECONDS: Final = 300
"""Every critical check alerts within 5 minutes of its fault with the default schedule and grace (issue 23):
`alert_worst_case_seconds` of each, with the defaults, is at most this (tests/unit/test_alert_model.py)."""

SECRET_STORES: Final = {"aws": ("ssm", "secretsmanager"), "gcf": ("gcpsm",)}
AUTH_MODES: Final = {"aws": ("eks", "token"), "gcf": ("gke", "token")}

NAME_LIMITS: Final = {
    "Lambda function name": 64,
    "IAM role name": 64,
    "IAM policy name": 128,
    "CloudFormation stack name": 128,
    "CloudWatch alarm name": 255,
    "Cloud Functions function name": 63,
    "service account id": 30,
    "Cloud Scheduler job name": 500,
    "source bucket name": 63,
}
"""The provider's limit (characters) of each kind of name a deployment generates."""

_AWS_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")
_GCP_REGION = re.compile(r"^[a-z]+-[a-z]+\d+$")
_GCP_PROJECT = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):(?P<service>[a-z0-9-]+):(?P<region>[a-z0-9-]*):"
    r"(?P<account>\d{12})?:(?P<resource>.+)$"
)
_FAILURE_DESTINATIONS: Final = ("sqs", "sns", "lambda", "events")


def run_worst_case_seconds(settings: Settings) -> float:
    """The longest one run can take: the check's deadline plus the heartbeat's delivery budget."""
    beat = settings.heartbeat
    return settings.cluster.deadline_seconds + worst_case_seconds(
        beat.timeout_seconds, beat.retries, beat.backoff_seconds
    )


def function_timeout_seconds(settings: Settings) -> int:
    """The function timeout this environment deploys with: worst-case run + margin, in whole seconds."""
    return math.ceil(run_worst_case_seconds(settings) + PLATFORM_MARGIN_SECONDS)


INHIBITOR: Final = "inhibitor"
"""The inhibitor's function name within a stage (`outpost-<env>-inhibitor`; `outpost.holdback.decision`'s too)."""

INHIBITOR_MAX_EVENT_AGE_SECONDS: Final = 60
"""A hold request older than this is dropped by Lambda: the parent's next failing run asks again (Lambda's
minimum; a stale request would only renew windows late)."""


def deploys_inhibitor(settings: Settings) -> bool:
    """Whether a deployment of `settings` has the inhibitor function: hold-back on, or recurring maintenance
    windows declared (it opens them on its schedule): the one identity holding the Vigilmon API key."""
    return settings.hold_back.enabled or bool(settings.maintenance_windows)


def inhibitor_timeout_seconds(settings: Settings) -> int:
    """The inhibitor's function timeout: its windows are opened on one Vigilmon client and, when one fails, the
    opened ones are ended on a fresh client (`outpost.windows.start_windows`), each client bounded by the
    heartbeat's delivery budget; so two budgets plus the platform margin, in whole seconds."""
    beat = settings.heartbeat
    budget = worst_case_seconds(beat.timeout_seconds, beat.retries, beat.backoff_seconds)
    return math.ceil(2 * budget + PLATFORM_MARGIN_SECONDS)


NOTIFIER: Final = "notifier"
"""The notifier's function name within a stage (`outpost-<env>-notifier`): it turns a check's cloud alarm's state
changes into messages (`outpost.notify`), when `messages.enabled`."""

NOTIFIER_READ_SECONDS: Final = 10.0
"""The notifier's budget for reading the run line behind an alarm (one log query, its pages included)."""
NOTIFIER_PUBLISH_SECONDS: Final = 10.0
"""The notifier's budget for publishing the message (one SNS Publish or one Pub/Sub publish request)."""

NOTIFIER_MAX_EVENT_AGE_SECONDS: Final = 900
"""An alarm's state change older than this is dropped by Lambda: a message that late would tell a state the
alarm may have left (the alarm's own topic actions told it on time)."""


def deploys_notifier(settings: Settings) -> bool:
    """Whether a deployment of `settings` has the notifier function (`messages.enabled`)."""
    return settings.messages.enabled


def notifier_timeout_seconds(settings: Settings) -> int:
    """The notifier's function timeout: its read and its publish budgets plus the platform margin."""
    return math.ceil(NOTIFIER_READ_SECONDS + NOTIFIER_PUBLISH_SECONDS + PLATFORM_MARGIN_SECONDS)


def notifier_role_name(environment: str, region: str) -> str:
    """The IAM role of the notifier's Lambda function."""
    return f"{SERVICE}-{environment}-{region}-notifierRole"


def notifier_service_account(environment: str) -> str:
    """The Google service account id of the notifier function (infra/gcp creates it with `messages.enabled`):
    it reads the checks' log entries and publishes to the messages topic, nothing else. `-note` keeps it within 30
    characters for every environment name the runtime and invoker accounts allow."""
    return f"{SERVICE}-{environment}-note"


def log_group(environment: str, function: str) -> str:
    """The CloudWatch Logs group of a stage's function (Lambda's `/aws/lambda/<function name>`)."""
    return f"/aws/lambda/{function_name(environment, function)}"


RUNBOOKS_PAGE: Final = "docs/runbooks.md"


def runbook_path(check: str) -> str:
    """The check's section of the runbooks page (its `## \\`check\\`` heading's anchor), relative to the repo root."""
    return f"{RUNBOOKS_PAGE}#{check}"


def check_secret_references(settings: Settings) -> list[tuple[str, str]]:
    """The references the checks' functions read: every one but the Vigilmon API key, which the inhibitor alone
    reads (docs/contracts.md "Hold-back"), plus each check's own `cluster_auth` token."""
    found = [(path, ref) for path, ref in settings.secret_references() if path != "vigilmon.api_key"]
    for name, check in settings.checks.items():
        token = getattr(check.cluster_auth, "token", None) if check.cluster_auth is not None else None
        if isinstance(token, str):
            found.append((f"checks.{name}.cluster_auth.token", token))
    return found


def inhibitor_secret_references(settings: Settings) -> list[tuple[str, str]]:
    """What the inhibitor's function reads: the Vigilmon API key, when it is deployed (`deploys_inhibitor`)."""
    key = settings.vigilmon.api_key
    return [("vigilmon.api_key", key)] if deploys_inhibitor(settings) and key is not None else []


def secret_store_name(text: str) -> tuple[str, str] | None:
    """(scheme, the store's own name of the secret) a reference reads: an SSM parameter name, a Secrets Manager
    secret name (its JSON key dropped), a Secret Manager secret (its version dropped); None for `env:` or a
    malformed reference. ARNs are reduced to the name."""
    try:
        ref = parse_secret_ref(text)
    except ValueError:
        return None
    if ref.scheme == "ssm":
        return "ssm", _ssm_name(ref.name)[0]
    if ref.scheme == "secretsmanager":
        return "secretsmanager", _secretsmanager_name(ref.name)[0]
    if ref.scheme == "gcpsm":
        return "gcpsm", ref.name.partition("/versions/")[0]
    return None


def platform_max_timeout(settings: Settings) -> int:
    """The platform's maximum; a file that deploys nowhere is held to Lambda's (the CLI's default target)."""
    return PLATFORM_MAX_TIMEOUT_SECONDS[settings.deploy.platform if settings.deploy else "aws"]


def timeout_problems(settings: Settings) -> list[str]:
    """A problem line when the derived function timeout exceeds what the platform allows."""
    worst = run_worst_case_seconds(settings)
    limit = platform_max_timeout(settings)
    if worst + PLATFORM_MARGIN_SECONDS <= limit:
        return []
    where = settings.deploy.platform if settings.deploy else "aws"
    return [
        f"cluster.deadline_seconds: deadline + heartbeat worst case (timeout x (1 + retries) + backoffs) = "
        f"{worst:g} s; with a {PLATFORM_MARGIN_SECONDS:g} s margin it must fit in the function timeout, at "
        f"most {limit} s on {where} (a run killed by the platform reports nothing)"
    ]


def schedule_minutes(settings: Settings, name: str) -> int:
    configured = settings.checks.get(name)
    if configured is not None and configured.schedule_minutes:
        return configured.schedule_minutes
    return registry.get(name).schedule_minutes


def max_window_seconds(period_seconds: int) -> int:
    """CloudWatch: Period x EvaluationPeriods may span at most a day, or seven for periods of an hour or more
    (PutMetricAlarm, `EvaluationPeriods`)."""
    return 86_400 if period_seconds < 3600 else 604_800


def tolerance_runs(settings: Settings, name: str) -> int:
    """Runs in a row the monitor's tolerance covers plus the one it alerts on: `tolerated_misses + 1`, within the
    longest window CloudWatch allows."""
    configured = settings.checks.get(name) or CheckSettings()
    period = schedule_minutes(settings, name) * 60
    return max(1, min(configured.tolerated_misses + 1, max_window_seconds(period) // period))


MAX_POLICY_CONDITIONS: Final = 6
"""Cloud Monitoring: an alert policy has one to six conditions (AlertPolicy `conditions`). A held-back policy has
its own condition and one per group of parents sharing a schedule and a tolerance (`parent_groups`)."""


def held_parents(settings: Settings, name: str) -> list[str]:
    """The enabled checks that hold back check `name`'s alerts: every enabled check it depends on, directly or
    through others (`registry.dependants` is transitive), in catalogue order; none when hold-back is off."""
    if not settings.hold_back.enabled:
        return []
    enabled = set(settings.enabled_checks())
    return [parent for parent in registry.names() if parent in enabled and name in registry.dependants(parent)]


def parent_groups(settings: Settings, parents: Sequence[str]) -> dict[tuple[int, int], list[str]]:
    """`parents` grouped by (schedule in seconds, `tolerance_runs`): one Cloud Monitoring condition each."""
    groups: dict[tuple[int, int], list[str]] = {}
    for parent in parents:
        groups.setdefault((schedule_minutes(settings, parent) * 60, tolerance_runs(settings, parent)), []).append(
            parent
        )
    return groups


def severity(settings: Settings, name: str) -> str:
    configured = settings.checks.get(name)
    if configured is not None and configured.severity:
        return configured.severity
    return registry.get(name).severity


def run_seconds(settings: Settings) -> float:
    """How long a run takes before its ping leaves: the check's deadline plus the platform margin (cold start,
    settings, the log line). A ping's retries are not in it: they happen only while Vigilmon itself fails."""
    return settings.cluster.deadline_seconds + PLATFORM_MARGIN_SECONDS


def monitor_margin_seconds(settings: Settings) -> int:
    """Grace margin: a healthy run's ping comes up to a run later than its schedule; whole minutes, >= 60 s."""
    return max(MONITOR_MARGIN_FLOOR_SECONDS, 60 * math.ceil(run_seconds(settings) / 60))


def alert_worst_case_seconds(settings: Settings, name: str) -> int:
    """The longest from a fault to Vigilmon's alert, by the model: the fault comes right after a healthy run
    observed the cluster, that run's ping still arrives (a run later), and the monitor alerts once the last ping
    is older than interval + grace: schedule + run + grace."""
    configured = settings.checks.get(name) or CheckSettings()
    minutes = schedule_minutes(settings, name)
    grace = configured.grace_seconds(minutes, monitor_margin_seconds(settings))
    return math.ceil(minutes * 60 + run_seconds(settings) + grace)


def function_name(environment: str, check: str) -> str:
    """The deployed function's name (Serverless: `<service>-<stage>-<function>`), also the monitor's name."""
    return f"{SERVICE}-{environment}-{check}"


def lambda_architecture(settings: Settings) -> str:
    """The Lambda architecture (`arm64` unless the file says `x86_64`)."""
    return (settings.deploy.architecture if settings.deploy else None) or "arm64"


def aws_partition(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def ssm_scope(environment: str) -> str:
    """The SSM parameter names the stage may read (its IAM statement's resource)."""
    return f"/outpost/{environment}/"


def secretsmanager_scope(environment: str) -> str:
    """The Secrets Manager names the stage may read (its IAM statement's resource)."""
    return f"outpost/{environment}/"


def generated_names(settings: Settings) -> list[tuple[str, str, str, int]]:
    """(path, what, name, limit) of every name a deployment of `settings` generates."""
    assert settings.deploy is not None
    env = settings.environment
    names: list[tuple[str, str, str, int]] = []

    def generates(path: str, what: str, name: str, kind: str | None = None) -> None:
        names.append((path, what, name, NAME_LIMITS[kind or what]))

    if settings.deploy.platform == "aws":
        region = settings.deploy.region
        generates("environment", "CloudFormation stack name", f"{SERVICE}-{env}")
        generates("environment", "IAM role name", f"{SERVICE}-{env}-{region}-lambdaRole")
        generates("environment", "IAM policy name", f"{SERVICE}-{env}-lambda")
        for check in settings.enabled_checks():
            generates(f"checks.{check}", "Lambda function name", function_name(env, check))
            for rule in ALARM_RULES:
                generates(f"checks.{check}", "CloudWatch alarm name", alarm_name(env, check, rule))
        if deploys_inhibitor(settings):
            generates("environment", "Lambda function name", function_name(env, INHIBITOR))
            generates("environment", "IAM role name", inhibitor_role_name(env, region))
            generates("environment", "IAM policy name", f"{SERVICE}-{env}-{INHIBITOR}")
        if deploys_notifier(settings):
            generates("messages.enabled", "Lambda function name", function_name(env, NOTIFIER))
            generates("messages.enabled", "IAM role name", notifier_role_name(env, region))
            generates("messages.enabled", "IAM policy name", f"{SERVICE}-{env}-{NOTIFIER}")
    else:
        for role, account in service_accounts(env).items():
            generates("environment", f"{role} service account id", account, kind="service account id")
        if deploys_inhibitor(settings):
            account = inhibitor_service_account(env)
            generates("environment", "inhibitor service account id", account, kind="service account id")
            generates("environment", "Cloud Functions function name", function_name(env, INHIBITOR))
            generates("environment", "Cloud Scheduler job name", function_name(env, INHIBITOR))
        if deploys_notifier(settings):
            account = notifier_service_account(env)
            generates("messages.enabled", "notifier service account id", account, kind="service account id")
            generates("messages.enabled", "Cloud Functions function name", function_name(env, NOTIFIER))
        if settings.deploy.project is not None:
            generates("environment", "source bucket name", source_bucket(settings.deploy.project, env))
        for check in settings.enabled_checks():
            generates(f"checks.{check}", "Cloud Functions function name", function_name(env, check))
            generates(f"checks.{check}", "Cloud Scheduler job name", function_name(env, check))
    return names


def _name_problems(settings: Settings) -> list[str]:
    """A line per generated name over its provider's limit, saying how long an environment name may be."""
    env = settings.environment
    problems: list[str] = []
    for path, what, name, limit in generated_names(settings):
        if len(name) > limit:
            fits = limit - (len(name) - len(env))
            problems.append(
                f"{path}: the {what} {name!r} would be {len(name)} characters (limit {limit}); "
                f"environment names of at most {max(fits, 0)} characters fit"
            )
    return problems


def service_accounts(environment: str) -> dict[str, str]:
    """The Google service account ids of a Cloud Functions environment (infra/gcp creates them): `runtime`, the
    functions' identity (its secrets, the cluster), and `invoker`, the only identity allowed to call them (Cloud
    Scheduler's OIDC token)."""
    return {"runtime": f"{SERVICE}-{environment}-run", "invoker": f"{SERVICE}-{environment}-invoke"}


def inhibitor_service_account(environment: str) -> str:
    """The Google service account id of the inhibitor function (infra/gcp creates it when hold-back is on): the
    one identity that may read the Vigilmon API key. `-hold` keeps it within 30 characters for every environment
    name the runtime and invoker accounts allow."""
    return f"{SERVICE}-{environment}-hold"


def inhibitor_role_name(environment: str, region: str) -> str:
    """The IAM role of the inhibitor's Lambda function (the checks' role is Serverless's `...-lambdaRole`)."""
    return f"{SERVICE}-{environment}-{region}-inhibitorRole"


def source_bucket(project: str, environment: str) -> str:
    """The Cloud Storage bucket infra/gcp keeps the function source in (main.tf builds the same name)."""
    return f"{project}-{SERVICE}-{environment}-source"


def cron_schedule(minutes: int) -> str | None:
    """The Cloud Scheduler (unix-cron) expression running every `minutes`, or None when cron cannot say it
    evenly (a period that divides neither the hour nor the day would run at uneven intervals)."""
    if minutes == 1:
        return "* * * * *"
    if minutes < 60 and 60 % minutes == 0:
        return f"*/{minutes} * * * *"
    if minutes % 60 == 0 and 1440 % minutes == 0:
        hours = minutes // 60
        return "0 0 * * *" if hours == 24 else ("0 * * * *" if hours == 1 else f"0 */{hours} * * *")
    return None


ALARM_RULES: Final = ("failed", "flapping", "error", "degraded")
"""The cloud alarms of every check, on both clouds (`outpost.tooling.alerting.rules` says what each means)."""

RULE_OUTCOMES: Final = {"failed": "failed", "flapping": "failed", "error": "error", "degraded": "degraded"}
"""The run outcome (a run line's `status`) each of `ALARM_RULES` counts."""

ALERT_SUFFIX: Final = "-alert"
"""The composite alarm carrying a held-back rule's actions on AWS is its alarm's name plus this."""


def alarm_name(environment: str, check: str, rule: str) -> str:
    """The CloudWatch alarm (and Cloud Monitoring policy display name) of one of a check's `ALARM_RULES`."""
    return f"{function_name(environment, check)}-{rule}"


def alarm_of(environment: str, name: str) -> tuple[str, str] | None:
    """(check, rule) of one of `environment`'s alarm names (`alarm_name`, or its held-back composite's, ending
    in `ALERT_SUFFIX`), or None when it is not one (another stage's, another kind, a check not in the catalogue)."""
    prefix = f"{SERVICE}-{environment}-"
    if not name.startswith(prefix):
        return None
    rest = name.removeprefix(prefix).removesuffix(ALERT_SUFFIX)
    check, _, rule = rest.rpartition("-")
    if rule not in ALARM_RULES or check not in registry.names():
        return None
    return check, rule


def alarm_window_seconds(settings: Settings, check: str) -> int:
    """How far back the runs any of a check's alarms counts can lie: its longest rule's window (`flapping`'s, of
    at least 3 runs, or the tolerance's) plus a run's length and two minutes of CloudWatch's evaluation and of
    delivery; what the notifier searches for the run line behind a state change."""
    period = schedule_minutes(settings, check) * 60
    runs = min(max(3, tolerance_runs(settings, check)), max(1, max_window_seconds(period) // period))
    return runs * period + math.ceil(run_seconds(settings)) + 120


def deployment_problems(settings: Settings, source: Path | None = None, only: str | None = None) -> list[str]:
    """Every reason `settings` cannot be deployed, as `path: reason` lines (empty: deployable or local-only);
    `only`: the per-check rules of that check alone (a function's cold start, `settings.load_settings`)."""
    deploy = settings.deploy
    if deploy is None:
        return []
    env = settings.environment
    problems: list[str] = []
    if env in NOT_DEPLOYABLE:
        problems.append(
            f"deploy: environment {env!r} is for local runs only (the sandbox) and is never deployed; "
            "remove the deploy section"
        )
    if source is not None and source.suffix in (".yaml", ".yml") and source.stem != env:
        problems.append(
            f"environment: {env!r} must match its file name {source.name!r} (a stage deploys "
            "infra/environments/<stage>.yaml)"
        )
    problems += _region_problems(settings)
    problems += _check_problems(settings, only)
    problems += _secret_problems(settings)
    problems += _auth_problems(settings)
    problems += _arn_problems(settings)
    problems += _cloud_functions_problems(settings, only)
    problems += _name_problems(settings)
    return problems


def _region_problems(settings: Settings) -> list[str]:
    assert settings.deploy is not None
    pattern = _AWS_REGION if settings.deploy.platform == "aws" else _GCP_REGION
    example = "eu-west-1" if settings.deploy.platform == "aws" else "europe-west1"
    if pattern.fullmatch(settings.deploy.region):
        return []
    return [f"deploy.region: not a {settings.deploy.platform} region name (e.g. {example})"]


def _check_problems(settings: Settings, only: str | None = None) -> list[str]:
    enabled = [name for name in settings.enabled_checks() if name in registry.names() and only in (None, name)]
    if not settings.enabled_checks():
        return ["checks: a deployable environment enables at least one check"]
    problems: list[str] = []
    tiers: dict[str, list[str]] = {}
    for name in enabled:
        check = settings.checks[name]
        if check.heartbeat is None:
            problems.append(
                f"checks.{name}.heartbeat: required for a deployed check (a secret reference to its "
                "Vigilmon heartbeat URL): without it the check can never ping, and never alert"
            )
        if not check.monitor_id:
            problems.append(
                f"checks.{name}.monitor_id: required for a deployed check: the id of the Vigilmon monitor "
                f"watching its heartbeat (create it from `outpost monitors --env {settings.environment}`)"
            )
        tiers.setdefault(severity(settings, name), []).append(name)
    channels = settings.vigilmon.channels
    if tiers.get("critical") and not channels.page:
        problems.append(
            f"vigilmon.channels.page: required: critical checks ({', '.join(tiers['critical'])}) must "
            "page (e.g. a PagerDuty channel)"
        )
    if enabled and not channels.notify:
        problems.append(
            f"vigilmon.channels.notify: required: every monitor notifies (e.g. a Slack channel); "
            f"enabled: {', '.join(enabled)}"
        )
    return problems


def _secret_problems(settings: Settings) -> list[str]:
    assert settings.deploy is not None
    platform, env, region = settings.deploy.platform, settings.environment, settings.deploy.region
    stores = SECRET_STORES[platform]
    problems: list[str] = []
    key = settings.vigilmon.api_key
    references = check_secret_references(settings) + ([("vigilmon.api_key", key)] if key is not None else [])
    problems += _key_sharing_problems(settings)
    for path, text in references:
        try:
            ref = parse_secret_ref(text)
        except ValueError:
            continue  # the shape validation already named it
        if ref.scheme not in stores:
            why = (
                "a deployed function has no such variable"
                if ref.scheme == "env"
                else f"{platform} functions have no credentials for that store"
            )
            problems.append(
                f"{path}: {ref.scheme}: references cannot be read on {platform} ({why}); use "
                f"{' or '.join(s + ':' for s in stores)}"
            )
            continue
        if ref.scheme == "ssm":
            name, arn_region = _ssm_name(ref.name)
            scope = ssm_scope(env)
        elif ref.scheme == "secretsmanager":
            name, arn_region = _secretsmanager_name(ref.name)
            scope = secretsmanager_scope(env)
        else:
            continue
        if not name.startswith(scope):
            problems.append(
                f"{path}: {ref.scheme}: name is outside the stage's IAM scope: it must start with "
                f"{scope} (the stage's secrets; each function is granted exactly the names it reads)"
            )
        if arn_region is not None and arn_region != region:
            problems.append(
                f"{path}: {ref.scheme}: ARN is in region {arn_region}, the stage deploys to {region} "
                "(the IAM statement covers the stage's region)"
            )
    return problems


def _key_sharing_problems(settings: Settings) -> list[str]:
    """A line per check secret that is the Vigilmon API key's own secret: granting it to the checks' identity
    would let every check read the key, which the inhibitor alone may (docs/contracts.md "Hold-back"). A Secrets
    Manager name the key's begins with counts too: that grant ends in a wildcard (the secret's ARN suffix)."""
    key = settings.vigilmon.api_key
    held = secret_store_name(key) if key is not None else None
    if held is None:
        return []
    scheme, name = held
    problems = []
    for path, text in check_secret_references(settings):
        read = secret_store_name(text)
        if read is None or read[0] != scheme:
            continue
        if read[1] == name or (scheme == "secretsmanager" and name.startswith(read[1])):
            problems.append(
                f"{path}: the same {scheme} secret as vigilmon.api_key (or a name it begins with): the checks' "
                "identity would read the API key, which only the inhibitor may; keep the key in a secret of its own"
            )
    return problems


def _ssm_name(name: str) -> tuple[str, str | None]:
    match = _ARN.fullmatch(name)
    if match and match["resource"].startswith("parameter/"):
        return "/" + match["resource"].removeprefix("parameter/"), match["region"]
    return name, None


def _secretsmanager_name(name: str) -> tuple[str, str | None]:
    match = _ARN.fullmatch(name)
    if match and match["resource"].startswith("secret:"):
        return match["resource"].removeprefix("secret:"), match["region"]
    return name, None


def _auth_problems(settings: Settings) -> list[str]:
    assert settings.deploy is not None
    platform = settings.deploy.platform
    auth = settings.cluster.auth
    problems: list[str] = []
    if auth.mode not in AUTH_MODES[platform]:
        why = {
            KubeconfigAuth: "a kubeconfig file and its exec credential plugins are not in the bundle",
            EksAuth: "eks needs AWS credentials, which Cloud Functions do not have",
            GkeAuth: "gke needs Google application default credentials, which Lambda does not have",
        }.get(type(auth), "not supported there")
        problems.append(
            f"cluster.auth.mode: {auth.mode} cannot authenticate on {platform} ({why}); use "
            f"{' or '.join(AUTH_MODES[platform])}"
        )
    if isinstance(auth, TokenAuth) and auth.ca_file:
        problems.append(
            "cluster.auth.ca_file: a file on this machine is not in the bundle; give the CA as ca_data (base64 PEM)"
        )
    if isinstance(auth, EksAuth) and auth.role_arn is not None:
        match = _ARN.fullmatch(auth.role_arn)
        if not match or match["service"] != "iam" or not match["resource"].startswith("role/"):
            problems.append("cluster.auth.role_arn: not an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)")
    return problems


def _arn_problems(settings: Settings) -> list[str]:
    deploy = settings.deploy
    assert deploy is not None
    problems: list[str] = []
    if deploy.kms_key_arn is not None:
        match = _ARN.fullmatch(deploy.kms_key_arn)
        if deploy.platform != "aws":
            problems.append("deploy.kms_key_arn: AWS only")
        elif not match or match["service"] != "kms" or not match["resource"].startswith("key/"):
            problems.append(
                "deploy.kms_key_arn: not a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID; an alias "
                "cannot be granted kms:Decrypt)"
            )
        elif match["region"] != deploy.region:
            problems.append(
                f"deploy.kms_key_arn: key is in region {match['region']}, the stage deploys to {deploy.region}"
            )
    if deploy.failure_destination is not None:
        match = _ARN.fullmatch(deploy.failure_destination)
        if deploy.platform != "aws":
            problems.append("deploy.failure_destination: AWS only")
        elif not match or match["service"] not in _FAILURE_DESTINATIONS:
            problems.append(
                f"deploy.failure_destination: not the ARN of a {', '.join(_FAILURE_DESTINATIONS)} destination"
            )
    if deploy.platform != "aws" and deploy.architecture is not None:
        problems.append("deploy.architecture: AWS only")
    return problems


def _cloud_functions_problems(settings: Settings, only: str | None = None) -> list[str]:
    """Cloud Functions (infra/gcp): the project to deploy into, and schedules Cloud Scheduler's cron can keep."""
    deploy = settings.deploy
    assert deploy is not None
    if deploy.platform != "gcf":
        return ["deploy.project: Cloud Functions only"] if deploy.project is not None else []
    problems: list[str] = []
    if deploy.project is None:
        problems.append("deploy.project: required on gcf: the Google Cloud project id the functions deploy into")
    elif not _GCP_PROJECT.fullmatch(deploy.project):
        problems.append(
            "deploy.project: not a Google Cloud project id (6 to 30 characters: lower-case letters, "
            "digits, hyphens; starts with a letter)"
        )
    for name in settings.enabled_checks():
        if only not in (None, name):
            continue
        if name in registry.names() and cron_schedule(schedule_minutes(settings, name)) is None:
            problems.append(
                f"checks.{name}.schedule_minutes: {schedule_minutes(settings, name)} cannot be a Cloud "
                "Scheduler cron period (it must divide 60, or be whole hours dividing 24)"
            )
        groups = parent_groups(settings, held_parents(settings, name)) if name in registry.names() else {}
        if 1 + len(groups) > MAX_POLICY_CONDITIONS:
            described = "; ".join(
                f"every {period // 60} min, {runs} runs: {', '.join(parents)}"
                for (period, runs), parents in sorted(groups.items())
            )
            problems.append(
                f"checks.{name}: held back by checks with {len(groups)} different schedule and tolerance pairs "
                f"({described}); its Google Cloud alert policies take one condition per pair beside their own, "
                f"at most {MAX_POLICY_CONDITIONS} in all: give some of them the same schedule_minutes and "
                "tolerated_misses"
            )
    return problems
