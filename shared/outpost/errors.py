"""The exception tree of Outpost.

Exceptions mean "could not observe" (or "could not report"); problems a check *observed* are data
in its `Result`, never exceptions. Every message is one line a person can act on, and never
contains a secret: heartbeat URLs, tokens and API keys are redacted before an exception is built.

    OutpostError
    ├── ConfigError            bad configuration (exit 64, refused at validate/packaging/cold start)
    ├── SecretError            a secret reference could not be resolved
    ├── ClusterError           the API server could not be observed
    │   ├── ClusterAuthError       401/403, or credentials could not be obtained
    │   ├── ClusterTimeout         connect/read timeout or the check's deadline ran out
    │   ├── ClusterUnreachable     DNS, TCP or TLS failure
    │   ├── ClusterResponseError   unexpected status code
    │   │   └── ClusterRequestRefused  431/413/414/411/415: our own request was refused, nothing observed
    │   ├── MalformedResponse      body is not the JSON shape we expected (or an encoding we refuse)
    │   └── ResponseTooLarge       body exceeds cluster.max_response_bytes, or the run cluster.max_run_bytes
    ├── ReportError            the heartbeat could not be delivered
    ├── InvocationError        a runtime event/request is malformed (HTTP 400)
    └── PackagingError         a bundle or a dependency lock could not be built or read (missing or stale lock)
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
    """The API server refused our identity (401/403) or credentials could not be obtained."""


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


class InvocationError(OutpostError):
    """A runtime invocation (event or HTTP request) is malformed; maps to HTTP 400."""


class PackagingError(OutpostError):
    """The bundle could not be built (pip failed, wrong architecture, an entry module is missing), or the
    dependency lock it installs from is missing, stale or malformed (the message names the file and `make lock`)."""
