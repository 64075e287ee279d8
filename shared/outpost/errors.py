"""The exception tree of Outpost.

Exceptions mean "could not observe" (or "could not report"); what a check observed is data in its `Result`.
Every message is one actionable line without a secret. `ClusterRequestRefused` (411/413/414/415/431) is our own
request refused, so it is never read as the server's health.
"""

from __future__ import annotations


class OutpostError(Exception):
    """Base of every error Outpost raises on purpose."""


class ConfigError(OutpostError):
    """The configuration is invalid. `problems` holds one `path: reason` line per bad field."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        self.headline = message
        self.problems = problems or []
        detail = "; ".join(self.problems)
        super().__init__(f"{message}: {detail}" if detail else message)


class SecretError(OutpostError):
    """A secret reference (`env:`, `ssm:`, `secretsmanager:`, `gcpsm:`) could not be resolved."""


class ClusterError(OutpostError):
    """The Kubernetes API server could not be observed."""


class ClusterAuthError(ClusterError):
    """Credentials could not be obtained (a malformed kubeconfig or token, an exec plugin or cloud token call that
    failed or hung), or the API server refused them (`AuthRefused`)."""


class AuthRefused(ClusterAuthError):
    """The API server answered 401 or 403 to our identity: a credential expired or rotated, or RBAC too narrow."""


class ClusterTimeout(ClusterError):
    """A request timed out, or the check's deadline ran out."""


class ClusterUnreachable(ClusterError):
    """The API server could not be reached (DNS, TCP, TLS)."""


class ClusterResponseError(ClusterError):
    """The API server answered with a status code the caller did not expect."""

    def __init__(self, message: str, status_code: int) -> None:
        self.status_code = status_code
        super().__init__(message)


class ClusterRequestRefused(ClusterResponseError):
    """A server refused our own request as too large or malformed (431, 413, 414, 411, 415): the request's
    fault, not an observation of the server's health, so it is `error` wherever it comes from."""


class MalformedResponse(ClusterError):
    """The API server's body was not the JSON shape we expected."""


class ResponseTooLarge(ClusterError):
    """A body exceeded the per-response cap, or the run's bytes exceeded the per-run budget (the message names
    which setting to raise)."""


class ReportError(OutpostError):
    """The heartbeat could not be delivered (the URL itself is never part of the message)."""


class ReportRefused(ReportError):
    """Vigilmon answered and refused the request (3xx not followed, 4xx): it was not applied. Any other
    `ReportError` (a timeout, a dropped connection, a 5xx) leaves open whether the request took effect."""


class InvocationError(OutpostError):
    """A runtime invocation (event or HTTP request) is malformed; maps to HTTP 400."""


class PackagingError(OutpostError):
    """The bundle could not be built (pip failed, wrong architecture, an entry module is missing), or the
    dependency lock it installs from is missing, stale or malformed (the message names the file and `make lock`)."""
