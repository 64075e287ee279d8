"""Status conditions (`status.conditions[]`): find one by type, ask whether it is True.

Guarantees: an absent condition is None (not False), so callers can tell "not Ready" from "never
reported"; `is_true` is True only for the exact status "True" ("Unknown" is not true).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

READY = "Ready"
ESTABLISHED = "Established"
AVAILABLE = "Available"
PROGRESSING = "Progressing"


class Condition(BaseModel):
    """One condition; timestamps are optional because not every kind sets them."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    type: str
    status: str = "Unknown"
    reason: str = ""
    message: str = ""
    last_transition_time: datetime | None = Field(None, alias="lastTransitionTime")
    last_heartbeat_time: datetime | None = Field(None, alias="lastHeartbeatTime")
    last_update_time: datetime | None = Field(None, alias="lastUpdateTime")
    observed_generation: int = Field(0, alias="observedGeneration")

    @property
    def true(self) -> bool:
        return self.status == "True"

    def describe(self) -> str:
        """`Ready=False (KubeletNotReady: ...)`, for messages."""
        why = ": ".join(part for part in (self.reason, self.message) if part)
        return f"{self.type}={self.status}" + (f" ({why})" if why else "")


class ConditionLike(Protocol):
    """A condition as `Condition` and its msgspec mirror both read it."""

    @property
    def type(self) -> str: ...
    @property
    def true(self) -> bool: ...


C = TypeVar("C", bound=ConditionLike)


def find_condition(conditions: Iterable[C], type_: str) -> C | None:
    """The condition of `type_`, or None when the object does not report it."""
    return next((condition for condition in conditions if condition.type == type_), None)


def is_true(conditions: Iterable[ConditionLike], type_: str) -> bool:
    """True only when the condition is present with status "True"."""
    condition = find_condition(conditions, type_)
    return condition is not None and condition.true
