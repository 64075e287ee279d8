"""Configuration: one YAML file per environment, validated and defaulted by pydantic.

Every problem is reported at once as `path.to.field: reason`. Unknown and duplicate keys are refused (a typo must
not fall back to a default), secret references are checked for form only (validate needs no credentials),
the file is read bounded with alias bombs and deep nesting refused, a `server` with `user:password@` is refused
(httpx would send Basic auth), and an environment name is validated before it becomes a path. Check parameters
are validated by `outpost.settings`, which sits above the registry.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    ValidationError,
)

from outpost import local_files
from outpost.errors import ConfigError
from outpost.secrets import parse_secret_ref
from outpost.strict import StrictScalars

try:  # libyaml's parser: about 10x faster than PyYAML's own (a 1 MiB kubeconfig: 24 ms instead of 360 ms)
    from yaml import CSafeLoader as _SafeLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _SafeLoader  # type: ignore[assignment]

CHECK_NAME_PATTERN = r"^[a-z][a-z0-9-]*$"


def _secret_reference(value: str) -> str:
    parse_secret_ref(value)
    return value


SecretReference = Annotated[str, AfterValidator(_secret_reference)]
"""A reference such as `env:NAME` or `ssm:/outpost/prod/heartbeat`; never the secret itself."""


def _https_url(value: str) -> str:
    if not value.startswith("https://"):
        raise ValueError("must be an https:// URL (TLS verification is never turned off)")
    if has_userinfo(value):
        raise ValueError(
            f"must not carry user information (user:password@): {without_userinfo(value)} is "
            "what may be given; Outpost never sends a password (give a token)"
        )
    return value.rstrip("/")


HttpsServer = Annotated[str, AfterValidator(_https_url)]
"""An API server URL: https only, no user information, no trailing slash."""


class _Model(StrictScalars):
    model_config = ConfigDict(extra="forbid", frozen=True)


class KubeconfigAuth(_Model):
    """Credentials from a kubeconfig file (read by `outpost.cluster.auth`; exec plugins run under the deadline)."""

    mode: Literal["kubeconfig"]
    path: str | None = Field(None, description="Kubeconfig path; default $KUBECONFIG or ~/.kube/config.")
    context: str | None = None


class TokenAuth(_Model):
    """A bearer token (e.g. a ServiceAccount token) and the cluster's CA."""

    mode: Literal["token"]
    server: HttpsServer
    token: SecretReference
    ca_file: str | None = None
    ca_data: str | None = Field(None, description="Base64 PEM of the cluster CA, as in a kubeconfig.")


class EksAuth(_Model):
    """Amazon EKS: a token presigned with STS exactly as `aws eks get-token` makes it."""

    mode: Literal["eks"]
    cluster_name: str
    region: str
    server: HttpsServer
    ca_data: str
    role_arn: str | None = Field(None, description="Role to assume before presigning, if any.")


class GkeAuth(_Model):
    """Google GKE: an OAuth2 access token from google-auth application default credentials."""

    mode: Literal["gke"]
    server: HttpsServer
    ca_data: str


def _authority(url: str) -> tuple[str, str, str] | None:
    """(scheme, authority, rest) of `url`, the authority ending at the first `/`, `?` or `#` (RFC 3986)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return None
    end = min((index for index in (rest.find(c) for c in "/?#") if index >= 0), default=len(rest))
    return scheme, rest[:end], rest[end:]


def has_userinfo(url: str) -> bool:
    """True when `url`'s authority holds `user[:password]@` (which httpx would send as Basic auth)."""
    parts = _authority(url)
    return parts is not None and "@" in parts[1]


def userinfo(url: str) -> str:
    """The `user[:password]` of `url`'s authority, or "" (to register with redaction, never to print)."""
    parts = _authority(url)
    return parts[1].rpartition("@")[0] if parts is not None else ""


def without_userinfo(url: str) -> str:
    """`url` with any `user[:password]@` removed, safe to print."""
    parts = _authority(url)
    if parts is None:
        return "(not a URL)"
    scheme, authority, rest = parts
    return f"{scheme}://{authority.rpartition('@')[2]}{rest}"


ClusterAuth = Annotated[KubeconfigAuth | TokenAuth | EksAuth | GkeAuth, Field(discriminator="mode")]


class ClusterSettings(_Model):
    name: str = Field(description="A human name for the cluster, used in summaries.")
    auth: ClusterAuth
    connect_timeout_seconds: float = Field(5.0, gt=0, le=60)
    read_timeout_seconds: float = Field(10.0, gt=0, le=300)
    deadline_seconds: float = Field(
        45.0, gt=0, le=840, description="Budget for one whole check run, shared by all its requests."
    )
    # 250, not client-go's 500: a page is validated whole from its bytes, so its parse is a process's peak
    # memory; measured at 5,000 nodes (koordlet-coverage 75 -> 65 MB, node-utilization 70 -> 62 MB peak RSS)
    # at no cost in wall time, for twice the (cheap, paginated) requests.
    page_size: int = Field(250, ge=1, le=5000, description="`limit` used for paginated LISTs.")
    max_response_bytes: int = Field(
        32 * 1024 * 1024,
        ge=1024,
        le=128 * 1024 * 1024,
        description="Largest response body accepted from the API server; a larger one is an error naming the path.",
    )
    # 256 MiB, 8x the per-response cap: every page of every LIST and every request of one run, counted decoded
    # as the bytes arrive. Far above what a check reads at 5,000 nodes (its pages are tens of MB in all), far
    # below what an endless LIST (continue tokens forever) or a gzip bomb would make a function read.
    max_run_bytes: int = Field(
        256 * 1024 * 1024,
        ge=1024 * 1024,
        le=4 * 1024 * 1024 * 1024,
        description="Most response bytes (decoded) one check run reads from the cluster, all requests and LIST "
        "pages together; past it the run is an error naming the path.",
    )
    # A warm instance follows a collection's changes with a watch instead of listing it again
    # (outpost.cluster.incremental); any doubt falls back to the LIST, so turning it off changes cost, never verdicts.
    incremental: bool = Field(
        True,
        description="Let a warm function instance follow the collections it reads with a watch from their last "
        "resourceVersion instead of listing them every run.",
    )
    incremental_max_age_seconds: float = Field(
        900.0,
        ge=60,
        le=3600,
        description="State a warm instance keeps older than this is not followed but read again in full.",
    )


class HeartbeatSettings(_Model):
    timeout_seconds: float = Field(10.0, gt=0, le=60)
    retries: int = Field(3, ge=0, le=10, description="Extra attempts after the first, on timeout/5xx only.")
    backoff_seconds: float = Field(0.5, ge=0, le=30, description="First backoff; doubles each retry.")


class AlertChannels(_Model):
    """Vigilmon alert channels by tier (their names in Vigilmon): critical monitors page, every monitor notifies."""

    page: list[str] = Field(default_factory=list, description="Channels that page (e.g. PagerDuty): critical checks.")
    notify: list[str] = Field(default_factory=list, description="Channels that notify (e.g. Slack): every check.")


class VigilmonSettings(_Model):
    api_url: str = "https://vigilmon.online/api"
    api_key: SecretReference | None = None
    channels: AlertChannels = AlertChannels()
    status_page: str | None = Field(None, description="Status page name; default `Outpost <environment>`.")
    # 240 minutes by default: a few hours covers an upgrade or a node drain, and a window forgotten at the end of
    # one silences nothing overnight. A longer window is asked for here, in the reviewed file, not typed as
    # --minutes. A week at most: a monitor silent for longer is not in maintenance but switched off, which is a
    # decision about the monitor, not a window.
    maintenance_max_minutes: int = Field(
        240,
        ge=1,
        le=7 * 24 * 60,
        description="Longest window `outpost maintenance start --minutes` may open (1 to 10080); a longer one is "
        "refused before any request.",
    )


def _inhibitor_url(value: str) -> str:
    if not value.startswith("https://") or has_userinfo(value):
        raise ValueError("must be the inhibitor function's https:// URI, without user information")
    return value


class HoldBackSettings(_Model):
    """Paging that knows dependencies (docs/contracts.md "Hold-back"): while a check fails, the monitors of the
    checks that depend on it (`outpost.registry.DEPENDS_ON`) are put in short maintenance windows by the
    inhibitor, the one deployed identity holding the Vigilmon API key."""

    enabled: bool = Field(
        False,
        description="Hold back the dependants' notifications while a check they depend on fails (needs "
        "vigilmon.api_key and, deployed, the inhibitor function).",
    )
    margin_minutes: int = Field(
        2,
        ge=0,
        le=60,
        description="Added to each window beyond the parent's and the dependant's schedule and two runs, so a "
        "window outlives the next renewal and the dependant's first run after the parent recovers.",
    )
    inhibitor_url: Annotated[str, AfterValidator(_inhibitor_url)] | None = Field(
        None,
        description="Cloud Functions only, optional: the inhibitor function's URI, called with the runtime "
        "identity's ID token. Default: the one infra/gcp deploys ($OUTPOST_INHIBITOR_URL on every check function); "
        "on AWS the inhibitor is invoked by its function name.",
    )


class MessagesSettings(_Model):
    """What to do reaches the person (docs/contracts.md "Cloud alarms", "Messages"): on each state change of a
    check's cloud alarm, the notifier function reads that check's latest matching run line and publishes its
    summary and next steps, redacted and capped, to a topic of the deployment's (AWS: the `MessagesTopicArn`
    stack parameter, an SNS topic; Google Cloud: the `messages_topic` Terraform variable, a Pub/Sub topic). Off
    by default: the text leaves the alarm's account only when asked for."""

    enabled: bool = Field(
        False,
        description="Deploy the notifier and add it beside the existing actions of every acting alarm (AWS) or "
        "every alert policy's channels (Google Cloud); the page never depends on it.",
    )
    # 4 KiB: a summary and a handful of runbook lines; far below SNS's 256 KiB and Pub/Sub's 10 MB per message, and
    # small enough for an e-mail or a chat subscription to show whole.
    max_bytes: int = Field(
        4096,
        ge=512,
        le=65536,
        description="Largest message body in UTF-8 bytes (512 to 65536): next steps are dropped from the end, then "
        "the summary is cut with a visible marker.",
    )


class RecurringWindow(_Model):
    """A maintenance window that comes back (nightly node upgrades): opened by the inhibitor at each start of
    `cron` in `time_zone`, for `minutes`, on the monitors of `checks` (`outpost.recurring`; the cron, the zone,
    the checks and the length are checked by `outpost validate`, each by its path)."""

    name: str = Field(pattern=CHECK_NAME_PATTERN, max_length=63, description="What the window is for (a-z, 0-9, -).")
    cron: str = Field(description="5-field cron expression of its starts (minute hour day month weekday).")
    time_zone: str = Field("Etc/UTC", description="IANA time zone the cron expression is read in.")
    minutes: int = Field(ge=1, le=7 * 24 * 60, description="Length, at most vigilmon.maintenance_max_minutes.")
    checks: list[str] = Field(min_length=1, description="The checks whose monitors it silences.")


class DeploySettings(_Model):
    """Where and how this environment is deployed. An environment without it (`local`) runs locally only.

    The rules that make a deployable environment complete (heartbeats, monitors, secret scope, auth mode,
    resource names, timeouts) are in `outpost.deploy`; this is only the shape.
    """

    platform: Literal["aws", "gcf"]
    region: str = Field(description="AWS region (eu-west-1) or Google Cloud region (europe-west1).")
    project: str | None = Field(
        None, description="Google Cloud project id the functions deploy into (Cloud Functions only; required there)."
    )
    architecture: Literal["arm64", "x86_64"] | None = Field(
        None, description="Lambda architecture (AWS only; default arm64)."
    )
    kms_key_arn: str | None = Field(
        None, description="Customer-managed KMS key of the SecureString parameters / secrets (kms:Decrypt on it)."
    )
    failure_destination: str | None = Field(
        None, description="ARN (SQS, SNS, Lambda, EventBridge bus) receiving failed scheduled runs (AWS only)."
    )


class CheckSettings(_Model):
    enabled: bool = True
    schedule_minutes: int | None = Field(
        None, ge=1, le=1440, description="How often the check runs; default: the catalogue's schedule."
    )
    severity: Literal["critical", "warning"] | None = None
    tolerated_misses: int = Field(2, ge=1, le=100, description="Missed runs before Vigilmon alerts.")
    heartbeat: SecretReference | None = Field(None, description="Secret reference to the heartbeat URL.")
    monitor_id: str | None = Field(None, description="Vigilmon monitor id, for maintenance windows.")
    params: dict[str, Any] = Field(default_factory=dict)
    cluster_auth: ClusterAuth | None = Field(
        None,
        description="Replaces `cluster.auth` for this check only (same four modes, same validation): a job "
        "that writes (kwok-pod-reconciler) runs under a write identity of its own, never the probe's.",
    )

    def grace_seconds(self, schedule_minutes: int, margin_seconds: int = 60) -> int:
        """The monitor's grace: schedule x tolerated misses + margin (docs/contracts.md "Heartbeat contract")."""
        return schedule_minutes * 60 * self.tolerated_misses + margin_seconds


class Settings(_Model):
    environment: str = Field(pattern=r"^[a-z][a-z0-9-]*$", max_length=63)
    cluster: ClusterSettings
    heartbeat: HeartbeatSettings = HeartbeatSettings()
    vigilmon: VigilmonSettings = VigilmonSettings()
    hold_back: HoldBackSettings = HoldBackSettings()
    messages: MessagesSettings = MessagesSettings()
    maintenance_windows: list[RecurringWindow] = Field(
        default_factory=list, description="Recurring maintenance windows, opened by the inhibitor function."
    )
    deploy: DeploySettings | None = Field(None, description="Absent: local runs only (not deployable).")
    checks: dict[Annotated[str, Field(pattern=CHECK_NAME_PATTERN)], CheckSettings] = Field(default_factory=dict)

    def enabled_checks(self) -> list[str]:
        return [name for name, check in self.checks.items() if check.enabled]

    def secret_references(self) -> list[tuple[str, str]]:
        """Every secret reference in the file, as (path, reference): what the deployment must be able to read."""
        found: list[tuple[str, str]] = []
        token = getattr(self.cluster.auth, "token", None)
        if isinstance(token, str):
            found.append(("cluster.auth.token", token))
        if self.vigilmon.api_key is not None:
            found.append(("vigilmon.api_key", self.vigilmon.api_key))
        for name, check in self.checks.items():
            if check.heartbeat is not None:
                found.append((f"checks.{name}.heartbeat", check.heartbeat))
        return found


def format_validation_error(error: ValidationError, prefix: str = "") -> list[str]:
    """One `path: reason` line per problem; input values are left out (they may be secrets)."""
    problems = []
    for item in error.errors(include_url=False, include_input=False):
        loc = [str(part) for part in item["loc"]]
        # Union members keep their tag (cluster.auth.token.server): it says which auth mode was read.
        path = ".".join(([prefix] if prefix else []) + loc)
        message = item["msg"].removeprefix("Value error, ")
        problems.append(f"{path}: {message}")
    return problems


def parse_settings(raw: Any, source: str = "configuration") -> Settings:
    """Validate an already-parsed document; raises ConfigError listing every bad field."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source} is invalid", [f"(top level): expected a mapping, got {type(raw).__name__}"])
    try:
        return Settings.model_validate(raw)
    except ValidationError as error:
        raise ConfigError(f"{source} is invalid", format_validation_error(error)) from None


def read_settings_file(path: str | os.PathLike[str]) -> Any:
    """Read YAML; a missing or refused file (`outpost.local_files`), a YAML syntax error, an alias or a duplicate
    key is a ConfigError naming the file (and line)."""
    file = Path(path).expanduser()
    try:
        text = local_files.read_text(file, local_files.CONFIGURATION)
    except local_files.LocalFileError as error:
        raise ConfigError(f"cannot read configuration {file}: {error.reason}") from None
    try:
        return load_yaml(text, duplicate_keys=False)
    except (DuplicateKeyError, RefusedYamlError) as error:
        raise ConfigError(f"configuration {file} is invalid", [f"{file} {error}"]) from None
    except yaml.YAMLError as error:
        raise ConfigError(
            f"configuration {file} is not valid YAML", [f"{file}{yaml_error_where(error)}: {_problem(error)}"]
        ) from None


MAX_YAML_DEPTH = 64
"""Deepest nesting of mappings and sequences accepted, aliases expanded (configurations and kubeconfigs nest
fewer than 10)."""
MAX_YAML_EXPANDED = 16 * 1024 * 1024
"""The most a document may weigh with every alias expanded: one per node plus the characters of every scalar.
A document without aliases weighs about its own size, which the file limits keep far below this; an alias bomb
(each anchor a list of aliases of the one before) weighs 9**9 or more and is refused."""


class RefusedYamlError(yaml.YAMLError):
    """Valid YAML Outpost does not accept: aliases expanding past `MAX_YAML_EXPANDED`, an alias inside what it
    names, or nesting deeper than `MAX_YAML_DEPTH`."""


def load_yaml(text: str, *, duplicate_keys: bool) -> Any:
    """One YAML document with the safe loader, alias expansion and nesting bounded.

    Anchors and aliases are legitimate YAML (a shared block of params, written once), so they are not refused;
    what is refused is their expansion past `MAX_YAML_EXPANDED`: PyYAML builds an alias as a shared object, so
    loading a bomb costs nothing, but anything that then walks, validates or prints the value (pydantic, an
    exec plugin's argv, a log line) pays the expanded size. The weight and depth are computed on the composed
    node graph, each node once (memoised), before any Python object is built; the parse events are checked for
    nesting first, because the composer itself recurses. `duplicate_keys=False` refuses a repeated key
    (configuration); True keeps the last one, as client-go's non-strict kubeconfig decoding does.
    """
    depth = 0
    for event in yaml.parse(text, Loader=_SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise RefusedYamlError(f"{_where(event.start_mark)}: nested deeper than {MAX_YAML_DEPTH} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    loader = (_SafeLoader if duplicate_keys else _StrictLoader)(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_expansion(root: yaml.Node) -> None:
    """Refuse `root` if, aliases expanded, it weighs over `MAX_YAML_EXPANDED` or nests over `MAX_YAML_DEPTH`."""
    measured: dict[int, tuple[int, int]] = {}  # id(node) -> (weight, height), each node measured once
    open_nodes: set[int] = set()

    def measure(node: yaml.Node) -> tuple[int, int]:
        key = id(node)
        if key in measured:
            return measured[key]
        if key in open_nodes:  # an alias inside the very node it names: an endless document
            raise RefusedYamlError(f"{_where(node.start_mark)}: a YAML alias refers to a node that contains it")
        open_nodes.add(key)
        if isinstance(node, yaml.MappingNode):
            children = [child for pair in node.value for child in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        else:
            children = []
        weight, height = 1 + (len(node.value) if isinstance(node, yaml.ScalarNode) else 0), 1
        for child in children:
            child_weight, child_height = measure(child)
            weight += child_weight
            height = max(height, child_height + 1)
            if weight > MAX_YAML_EXPANDED:
                raise RefusedYamlError(
                    f"{_where(node.start_mark)}: YAML aliases expand this value past "
                    f"{MAX_YAML_EXPANDED} nodes and characters (an alias bomb?)"
                )
            if height > MAX_YAML_DEPTH:
                raise RefusedYamlError(
                    f"{_where(node.start_mark)}: nested deeper than {MAX_YAML_DEPTH} levels "
                    "once its aliases are expanded"
                )
        open_nodes.discard(key)
        measured[key] = (weight, height)
        return weight, height

    measure(root)


def _where(mark: Any) -> str:
    return f"line {mark.line + 1} column {mark.column + 1}" if mark is not None else "(somewhere)"


def yaml_error_where(error: yaml.YAMLError) -> str:
    """` line L column C` of a YAML syntax error, or nothing."""
    mark = getattr(error, "problem_mark", None)
    return f" {_where(mark)}" if mark is not None else ""


def _problem(error: yaml.YAMLError) -> str:
    return str(getattr(error, "problem", None) or "not valid YAML")


class DuplicateKeyError(yaml.YAMLError):
    """A mapping names the same key twice (YAML's own loader would silently keep the last one)."""


class _StrictLoader(_SafeLoader):
    """PyYAML's safe loader, refusing duplicate keys: a repeated `deadline_seconds` must not silently win."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, list | dict):
                continue  # unhashable keys are refused by the base constructor with its own message
            if key in seen:
                mark = key_node.start_mark
                raise DuplicateKeyError(f"line {mark.line + 1} column {mark.column + 1}: duplicate key {key!r}")
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _StrictLoader.construct_mapping)

ENVIRONMENT_NAME_PATTERN = r"^[a-z][a-z0-9-]*$"


def check_environment_name(environment: str) -> str:
    """`environment` if it is a plain name (no path parts: it becomes a file name); ConfigError otherwise."""
    if (
        not isinstance(environment, str)
        or not re.fullmatch(ENVIRONMENT_NAME_PATTERN, environment)
        or len(environment) > 63
    ):
        raise ConfigError(
            "invalid environment name",
            [
                f"environment {str(environment)[:40]!r}: must match {ENVIRONMENT_NAME_PATTERN} (lower-case letters, "
                "digits, '-'; no path components), at most 63 characters"
            ],
        )
    return environment


def environment_file(environment: str, root: str | os.PathLike[str] | None = None) -> Path:
    """`infra/environments/<env>.yaml` under the repository (or bundle) root; the name is validated first."""
    check_environment_name(environment)
    base = Path(root) if root is not None else _default_root()
    return base / "infra" / "environments" / f"{environment}.yaml"


def _default_root() -> Path:
    configured = os.environ.get("OUTPOST_ROOT")
    if configured:
        return Path(configured)
    # Source checkout: shared/outpost/config.py -> repository root. A deployed bundle sets
    # OUTPOST_CONFIG (or OUTPOST_ROOT) explicitly, so this guess only serves developers.
    return Path(__file__).resolve().parents[2]
