"""What a check is: metadata, typed parameters, a read-only `fetch` and a pure `evaluate`.

Splitting observation (`fetch`, may raise: "could not observe") from judgement (`evaluate`, pure:
data in, `Result` out) is what lets every verdict be unit-tested over real captured API output,
and every fetch be tested against a real API server.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import ConfigDict

from outpost.cluster import Cluster
from outpost.kube.access import Access
from outpost.result import Result, Status
from outpost.runbook import COULD_NOT_OBSERVE, Runbook
from outpost.strict import StrictScalars

Severity = Literal["critical", "warning"]


class Params(StrictScalars):
    """Base of every check's parameters: unknown keys are refused, values are immutable, scalars as written."""

    model_config = ConfigDict(extra="forbid", frozen=True)


P = TypeVar("P", bound=Params)
D = TypeVar("D")


@dataclass(frozen=True)
class CheckSpec(Generic[P, D]):
    name: str
    system: str
    layer: str
    severity: Severity
    schedule_minutes: int
    fails_when: str
    """What fails the check, in one line; `{field}` placeholders are filled from the parameters' defaults, so the
    catalogue, the monitors and the docs cannot state a default the code does not use."""
    params: type[P]
    fetch: Callable[[Cluster, P], D]
    evaluate: Callable[[D, P, datetime], Result]
    access: Callable[[P], Sequence[Access]]
    """Every request `fetch` may send for these params, in RBAC's terms (`outpost.kube.access`): what
    `outpost rbac` grants the probe identity (or, for a job that writes, its own identity), and nothing more."""
    extras: tuple[str, ...] = ()
    """Optional dependency sets (pyproject.toml extras) the check needs beyond the core install, e.g.
    `certificates`; `outpost package` installs them only into bundles of environments that enable it."""
    writes: bool = False
    """A job that changes the cluster: the runner hands `fetch` a `ClusterWriter` (under the check's own
    `cluster_auth`, if configured) instead of the read-only `Cluster`."""
    opt_in: bool = False
    """Runs only where the configuration lists it enabled; run by name otherwise, it does nothing (`error`)."""
    runbooks: tuple[Runbook, ...] = ()
    """Every way `evaluate` can fail or degrade: each line it gives carries one of these, filled in with the
    object it names (`Runbook.at`); docs/runbooks.md is generated from them."""
    ships: Callable[[P], Sequence[dict[str, Any]]] | None = None
    """Objects the check needs in the cluster that no upstream install creates (admission-dry-run's
    ClusterColocationProfile), for these params: `outpost rbac` prints them after the grants, so the operator
    applies them together. Never written by the check itself (it only reads)."""

    def __post_init__(self) -> None:
        defaults = {
            name: field.get_default(call_default_factory=True) for name, field in self.params.model_fields.items()
        }
        object.__setattr__(self, "fails_when", self.fails_when.format_map(defaults))
        failures = [runbook.failure for runbook in self.runbooks]
        if len(set(failures)) != len(failures):
            raise ValueError(f"{self.name}: a failure class is declared twice in {failures}")
        taken = {runbook.failure for runbook in COULD_NOT_OBSERVE}.intersection(failures)
        if taken:
            raise ValueError(f"{self.name}: failure classes {sorted(taken)} are the runner's (outpost.runbook)")

    def judge(self, data: D, params: P, now: datetime) -> Result:
        """`evaluate`, held to the runbook contract: every line of a failed or error result carries a next step of
        one of this check's failure classes. A line without one is a bug in the check (`MissingRunbook`), which
        the runner turns into an `internal` error: still no ping, and the person paged is told it is Outpost's.
        (A degraded result pings all the same, so a line it gives without a step is let through.)"""
        result = self.evaluate(data, params, now)
        if result.status not in (Status.FAILED, Status.ERROR):
            return result
        declared = {runbook.failure for runbook in self.runbooks}
        if len(result.next_steps) != len(result.errors):
            raise MissingRunbook(f"{self.name}: {len(result.errors)} line(s) but {len(result.next_steps)} next step(s)")
        undeclared = sorted({step.failure for step in result.next_steps} - declared)
        if undeclared:
            raise MissingRunbook(f"{self.name}: next steps of undeclared failure classes {undeclared}")
        return result


class MissingRunbook(Exception):
    """A check gave a line without the next step of one of its declared failure classes."""
