"""The result contract of every check (docs/contracts.md "Result contract").

Enforced by the model, not by convention: four statuses, `ok` never carries errors, only ok and degraded ping,
and summary, errors and details pass `outpost.redaction` when built, whatever a server put in them. `next_steps`
pair with `errors` line for line.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from outpost import redaction


class Status(enum.StrEnum):
    OK = "ok"
    DEGRADED = "degraded"
    FAILED = "failed"
    ERROR = "error"

    @property
    def healthy(self) -> bool:
        """Whether this status pings the heartbeat (silence is the alarm for the others)."""
        return self in (Status.OK, Status.DEGRADED)

    @property
    def exit_code(self) -> int:
        """The CLI exit status: 0 ok/degraded, 1 failed, 2 error."""
        return {Status.OK: 0, Status.DEGRADED: 0, Status.FAILED: 1, Status.ERROR: 2}[self]


class NextStep(BaseModel):
    """Where the person paged looks next about one error line: the likely cause, then a command with the real names
    (each check's failure classes are listed in docs/runbooks.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    failure: str = Field(description="The failure class; docs/runbooks.md has a section per check and class.")
    cause: str = Field(description="The likely cause, in a sentence.")
    command: str = Field(description="The next command to look further, with the real names, namespace and selector.")
    see: str = Field("", description="The log to read or the upstream page, when there is one.")

    @field_validator("*", mode="after")
    @classmethod
    def _redacted(cls, value: str) -> str:
        # Filled in with names the cluster gave: scrubbed as every other line of a result is.
        return redaction.redact(value)


class Finding(NamedTuple):
    """An error line and its next step, as a check writes them side by side."""

    line: str
    next: NextStep


class Result(BaseModel):
    """What one run of one check observed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    check: str
    status: Status
    summary: str = Field(description="One line a person reads in an alert.")
    errors: list[str] = Field(default_factory=list, description="One line per problem, naming the object.")
    next_steps: list[NextStep] = Field(
        default_factory=list, description="Each error line's likely cause and next command, in the same order."
    )
    details: dict[str, Any] = Field(default_factory=dict)
    duration_ms: int = 0
    reported: bool = False

    @field_validator("summary", "errors", "details", mode="after")
    @classmethod
    def _redacted(cls, value: Any) -> Any:
        # Results carry text from servers and libraries: scrub every credential the process knows of.
        return redaction.redact_any(value)

    @model_validator(mode="after")
    def _ok_has_no_errors(self) -> Result:
        if self.status is Status.OK and self.errors:
            raise ValueError("a result with errors cannot be ok")
        if "\n" in self.summary:
            raise ValueError("summary must be one line")
        if self.next_steps and len(self.next_steps) != len(self.errors):
            raise ValueError(
                f"next_steps pair with errors line for line ({len(self.next_steps)} steps, {len(self.errors)} lines)"
            )
        return self

    # A judgement names its verdict first: `Result.failed(NAME, summary, errors, details)` reads as what it is.
    @classmethod
    def ok(cls, check: str, summary: str, details: dict[str, Any] | None = None) -> Result:
        """Healthy, nothing to report beyond the summary."""
        return cls(check=check, status=Status.OK, summary=summary, details=details or {})

    @classmethod
    def degraded(
        cls, check: str, summary: str, errors: Sequence[str | Finding], details: dict[str, Any] | None = None
    ) -> Result:
        """Healthy enough to ping, with what is wrong named per line."""
        return cls._named_per_line(Status.DEGRADED, check, summary, errors, details)

    @classmethod
    def failed(
        cls, check: str, summary: str, errors: Sequence[Finding], details: dict[str, Any] | None = None
    ) -> Result:
        """Observed and unhealthy: one error line per problem, naming the object, each with its next step."""
        return cls._named_per_line(Status.FAILED, check, summary, errors, details)

    @classmethod
    def unobserved(
        cls, check: str, summary: str, errors: Sequence[Finding], details: dict[str, Any] | None = None
    ) -> Result:
        """Could not observe (`error`), with what was not observed named per line, each with its next step."""
        return cls._named_per_line(Status.ERROR, check, summary, errors, details)

    @classmethod
    def _named_per_line(
        cls,
        status: Status,
        check: str,
        summary: str,
        errors: Sequence[str | Finding],
        details: dict[str, Any] | None,
    ) -> Result:
        lines, steps = _lines_and_steps(errors)
        return cls(check=check, status=status, summary=summary, errors=lines, next_steps=steps, details=details or {})

    @classmethod
    def error(cls, check: str, cause: str, next_step: NextStep | None = None, **details: Any) -> Result:
        """The probe could not observe: `cause` names what and why, in one line (newlines are folded)."""
        cause = " ".join(cause.split())[:500] or "no cause given"
        steps = [next_step] if next_step is not None else []
        return cls(check=check, status=Status.ERROR, summary=cause, errors=[cause], next_steps=steps, details=details)


def _lines_and_steps(errors: Sequence[str | Finding]) -> tuple[list[str], list[NextStep]]:
    """Error lines as given, and their next steps when every line came with one."""
    findings = [error for error in errors if isinstance(error, Finding)]
    if findings and len(findings) != len(errors):
        raise ValueError("give every error line its next step, or none")
    return [error.line if isinstance(error, Finding) else error for error in errors], [f.next for f in findings]
