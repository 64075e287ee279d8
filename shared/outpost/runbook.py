"""Runbook entries: for each way a check fails, the likely cause and the next command, filled in with real names.

A check declares its failure classes once (`Runbook`, with `{placeholders}`) and, next to each judgement, fills one
in with the object the line names (`Runbook.at`): the result then carries the step beside its line, and
docs/runbooks.md is generated from the declarations, so the page and the pages a person gets cannot disagree.
When the probe could not observe at all, the runner gives the step of the error's class (`for_error`).
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from outpost.errors import (
    AuthRefused,
    ClusterAuthError,
    ClusterError,
    ClusterTimeout,
    ClusterUnreachable,
    ConfigError,
    OutpostError,
    ReportError,
    ResponseTooLarge,
    SecretError,
)
from outpost.result import Finding, NextStep


@dataclass(frozen=True)
class Runbook:
    """One failure class of a check: what usually causes it and where to look next, as templates over the names
    the check's line carries (`{namespace}`, `{name}`, `{selector}`, `{node}`, ...)."""

    failure: str
    title: str
    cause: str
    command: str
    see: str = ""

    @property
    def placeholders(self) -> frozenset[str]:
        """Every name the templates ask for (what `at` must be given)."""
        fields = (self.cause, self.command, self.see)
        return frozenset(name for text in fields for _, name, _, _ in string.Formatter().parse(text) if name)

    def step(self, **names: object) -> NextStep:
        """This class's step with the real names filled in; a name missing is a bug in the check (KeyError)."""
        return NextStep(
            failure=self.failure,
            cause=self.cause.format_map(names),
            command=self.command.format_map(names),
            see=self.see.format_map(names),
        )

    def at(self, line: str, **names: object) -> Finding:
        """`line` with this class's step, filled in with `names`."""
        return Finding(line, self.step(**names))


# What a run that could not observe says next, by the error's class. `{check}` and `{environment}` are filled in
# by the runner; the commands are what the person paged can run from where they deploy (`outpost`, `kubectl`).
AUTH_REFUSED = Runbook(
    "auth-refused",
    "The API server refused the probe's credential",
    "a 401 is an expired or rotated token or kubeconfig; a 403 is a ClusterRole without the verb the check needs",
    "outpost rbac --env {environment} | kubectl auth reconcile --dry-run=server -f -",
    "docs/rbac.md",
)
NO_CREDENTIAL = Runbook(
    "no-credential",
    "The probe could not obtain its credential",
    "the kubeconfig or token is malformed or unreadable, or the exec plugin or cloud token call (aws eks get-token, "
    "gke-gcloud-auth-plugin, the function's own identity) failed, hung or was refused: the line names which",
    "outpost run {check} --env {environment} --json",
    "docs/configuration.md (cluster.auth)",
)
TIMED_OUT = Runbook(
    "timed-out",
    "The API server answered too slowly for the run's deadline",
    "the API server or etcd is overloaded, or a proxied backend hangs",
    "outpost run apiserver-triage --env {environment}",
    "kubectl get --raw '/readyz?verbose'",
)
UNREACHABLE = Runbook(
    "unreachable",
    "The API server could not be reached",
    "the API server is down, or the network path to it (DNS, endpoint, firewall, TLS) is broken",
    "outpost run apiserver-triage --env {environment}",
    "kubectl cluster-info",
)
UNEXPECTED_ANSWER = Runbook(
    "unexpected-answer",
    "The API server answered with a status or body the check cannot read",
    "a resource or proxied endpoint is missing or changed (an upgrade, an API version removed), or a proxy in between "
    "answered instead",
    "outpost run {check} --env {environment} --json",
    "docs/reliability.md",
)
TOO_LARGE = Runbook(
    "too-large",
    "An answer exceeded the size the run may read",
    "the cluster grew past cluster.max_response_bytes or cluster.max_run_bytes, or an endpoint returns far more "
    "than it should",
    "outpost run {check} --env {environment} --json",
    "docs/configuration.md",
)
SETUP = Runbook(
    "setup",
    "The check's configuration or a secret it references could not be used",
    "a secret reference points at nothing (or the function's role cannot read it), or a setting is invalid",
    "outpost validate --env {environment}",
    "docs/configuration.md",
)
NOT_DELIVERED = Runbook(
    "not-delivered",
    "The check was healthy but its heartbeat was not delivered",
    "Vigilmon was unreachable from the function, or the heartbeat URL stored at the reference is wrong",
    "outpost monitors --env {environment}",
    "docs/monitors.md",
)
STOPPED = Runbook(
    "stopped",
    "The run was stopped before it finished",
    "the platform's function timeout is shorter than the run's deadline, or the instance was shut down",
    "outpost validate --env {environment}",
    "docs/reliability.md",
)
INTERNAL = Runbook(
    "internal",
    "Outpost failed on what it observed",
    "a bug in Outpost: the line names the exception; the cluster may be healthy",
    "outpost run {check} --env {environment} --json",
    "CONTRIBUTING.md",
)

COULD_NOT_OBSERVE: tuple[Runbook, ...] = (
    AUTH_REFUSED,
    NO_CREDENTIAL,
    TIMED_OUT,
    UNREACHABLE,
    UNEXPECTED_ANSWER,
    TOO_LARGE,
    SETUP,
    NOT_DELIVERED,
    STOPPED,
    INTERNAL,
)


def for_error(error: BaseException | None) -> Runbook:
    """The class of a run that raised `error` (None: stopped before it observed)."""
    if error is None:
        return STOPPED
    if isinstance(error, AuthRefused):
        return AUTH_REFUSED
    if isinstance(error, ClusterAuthError):
        return NO_CREDENTIAL
    if isinstance(error, ClusterTimeout):
        return TIMED_OUT
    if isinstance(error, ClusterUnreachable):
        return UNREACHABLE
    if isinstance(error, ResponseTooLarge):
        return TOO_LARGE
    if isinstance(error, ClusterError):  # an unexpected status, a malformed body, a request refused as malformed
        return UNEXPECTED_ANSWER
    if isinstance(error, ConfigError | SecretError):
        return SETUP
    if isinstance(error, ReportError):
        return NOT_DELIVERED
    if isinstance(error, OutpostError):
        return SETUP
    return INTERNAL
