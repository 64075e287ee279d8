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
    │   ├── MalformedResponse      body is not the JSON shape we expected
    │   └── ResponseTooLarge       body exceeds cluster.max_response_bytes
    ├── ReportError            the heartbeat could not be delivered
    └── InvocationError        a runtime event/request is malformed (HTTP 400)
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


class MalformedResponse(ClusterError):
    """The API server's body was not the JSON shape we expected."""


class ResponseTooLarge(ClusterError):
    """The API server's body exceeded the configured per-response size cap."""


class ReportError(OutpostError):
    """The heartbeat could not be delivered (the URL itself is never part of the message)."""


class InvocationError(OutpostError):
    """A runtime invocation (event or HTTP request) is malformed; maps to HTTP 400."""
