"""Counting and rendering of `outpost sandbox pages` over recorded event streams (no stand-in, no sandbox).

Each record is what a fault's run records: the monitors as `outpost monitors` defines them, the stand-in's alert
and resolve events, every run, the maintenance calls, the cloud alarms. The break is at 1000, the heal at 1600.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from outpost.config import environment_file
from outpost.settings import DEFAULT_ENVIRONMENT, load_settings
from outpost_sandbox import demo
from outpost_sandbox.pages import (
    Alerted,
    CloudAlarm,
    FaultRecord,
    Held,
    MonitorInfo,
    PatternOutcome,
    render,
    root_cause_check,
    tally,
    targets,
)
from outpost_sandbox.scheduler import Run
from outpost_sandbox.vigilmon import AlertEvent

BROKE, HEALED = 1000.0, 1600.0
PARENT = "apiserver-health"


def monitor(check: str, severity: str = "critical", worst: float = 275.0) -> MonitorInfo:
    return MonitorInfo(check, f"pages-{check}", severity, 60.0, 180.0, worst)


MONITORS = (
    monitor(PARENT),
    monitor("koord-manager-health"),
    monitor("koord-webhook"),
    monitor("node-utilization", "warning", 995.0),
)


def alert(check: str, at: float, kind: str = "alert") -> AlertEvent:
    return AlertEvent(f"pages-{check}", check, kind, at, None)  # type: ignore[arg-type]


def run(check: str, at: float, status: str = "error") -> Run:
    return Run(check, at, at + 2, status in ("ok", "degraded"), status, f"{check} {status}")


def record(**fields: object) -> FaultRecord:
    base = FaultRecord(
        fault="apiserver-down",
        target=None,
        named=(PARENT, "apiserver-triage"),
        hold_back=True,
        scale=10.0,
        monitors=MONITORS,
        broke_at=BROKE,
        break_seconds=5.0,
        healed_at=HEALED,
        ended_at=1700.0,
        evaluation_seconds=0.5,
        events=(),
        runs=tuple(run(PARENT, BROKE + 60 * i) for i in range(5)),  # the fault caught: the parent errs
        held=(),
        alarms=(),
    )
    return replace(base, **fields)  # type: ignore[arg-type]


HELD = record(
    events=(alert(PARENT, 1250.0), alert(PARENT, 1660.0, "resolve")),
    runs=tuple(run(c, BROKE + 60 * i) for c in ("koord-manager-health", "koord-webhook", PARENT) for i in range(9)),
    held=(Held("pages-koord-manager-health", 6), Held("pages-koord-webhook", 6), Held("pages-node-utilization", 8)),
    alarms=(
        CloudAlarm(PARENT, "error", "aws", "notify", 4),
        CloudAlarm(PARENT, "error", "gcp", "notify", 4),
        CloudAlarm("koord-webhook", "error", "aws", "notify", 4, held=True),
        CloudAlarm("koord-webhook", "error", "gcp", "notify", 4, held=True),
    ),
)
UNHELD = record(
    hold_back=False,
    events=(
        alert("koord-webhook", 1240.0),
        alert(PARENT, 1250.0),
        alert("koord-manager-health", 1255.0),
        alert("node-utilization", 1900.0),
        *(alert(c, 1670.0, "resolve") for c in ("koord-webhook", PARENT, "koord-manager-health", "node-utilization")),
    ),
)


@pytest.mark.parametrize(
    ("given", "pages", "notifications", "held", "first"),
    [
        pytest.param(HELD, [PARENT], [], ["koord-manager-health", "koord-webhook", "node-utilization"], 250, id="held"),
        pytest.param(
            UNHELD, ["koord-webhook", PARENT, "koord-manager-health"], ["node-utilization"], [], 240, id="unheld"
        ),
        pytest.param(
            record(events=(alert(PARENT, 900.0), alert(PARENT, 990.0, "resolve"))), [], [], [], None, id="warm-up"
        ),
    ],
)
def test_tally_counts_pages_notifications_and_holds(
    given: FaultRecord, pages: list[str], notifications: list[str], held: list[str], first: float | None
) -> None:
    counted = tally(given)
    assert [a.check for a in counted.pages] == pages
    assert [a.check for a in counted.notifications] == notifications
    assert list(counted.held_back) == held
    assert counted.first_page_seconds == first


def test_a_page_carries_its_time_after_the_break() -> None:
    assert tally(HELD).pages == (Alerted(PARENT, 250.0),)


@pytest.mark.parametrize(
    ("given", "model", "within"),
    [
        pytest.param(HELD, 275.0, True, id="within the model"),
        pytest.param(record(events=(alert(PARENT, 1280.0),)), 275.0, True, id="within the break and evaluation"),
        pytest.param(record(events=(alert(PARENT, 1281.0),)), 275.0, False, id="late"),
        pytest.param(record(), 275.0, False, id="no page at all"),
        pytest.param(record(named=("node-utilization",)), None, None, id="no critical check named"),
    ],
)
def test_first_page_against_todays_model(given: FaultRecord, model: float | None, within: bool | None) -> None:
    counted = tally(given)
    assert counted.model_seconds == model
    assert counted.first_page_within_model is within


def test_silent_and_unresolved_monitors_are_named() -> None:
    given = record(
        events=(alert(PARENT, 1250.0),),
        runs=(run("node-utilization", 900.0, "ok"), run("node-utilization", 1200.0), run("koord-webhook", 1010, "ok")),
    )
    counted = tally(given)
    assert counted.silent_at_heal == ("node-utilization",)  # failing since the break, never alerted, not held
    assert counted.unresolved == (PARENT,)


def test_cloud_alarms_are_counted_per_cloud_and_tier() -> None:
    counted = tally(HELD)
    for cloud in ("aws", "gcp"):
        assert counted.cloud[cloud] == {"page": (), "notify": (f"{PARENT} error",), "held": ("koord-webhook error",)}


def test_a_record_survives_its_json() -> None:
    assert FaultRecord.from_json(HELD.as_json()) == HELD


def pattern(check: str, name: str, vigilmon: float | None, aws: float | None, gcp: float | None) -> PatternOutcome:
    return PatternOutcome(check, name, ("failed",), vigilmon, {"aws": aws, "gcp": gcp}, 275.0)


GOOD_PATTERNS = [
    pattern(PARENT, "one transient failed run", None, None, None),
    pattern(PARENT, "two failed runs in three", None, 180.0, 180.0),
]


@pytest.mark.parametrize(
    ("records", "patterns", "holds"),
    [
        pytest.param([HELD], GOOD_PATTERNS, [True, True, True, True], id="every target holds"),
        pytest.param([UNHELD], GOOD_PATTERNS, [False, True, True, True], id="three pages for the API server"),
        pytest.param([], [], [None, None, None, None], id="nothing measured"),
        pytest.param(
            [HELD],
            [pattern(PARENT, "one transient failed run", None, 60.0, None), GOOD_PATTERNS[1]],
            [True, False, True, True],
            id="a transient raised an alarm",
        ),
        pytest.param(
            [HELD],
            [GOOD_PATTERNS[0], pattern(PARENT, "two failed runs in three", None, 180.0, 300.0)],
            [True, True, False, True],
            id="flapping alarmed late on one cloud",
        ),
        pytest.param(
            [record(events=(alert(PARENT, 1400.0),))], GOOD_PATTERNS, [True, True, True, False], id="late first page"
        ),
        pytest.param(
            [HELD, replace(UNHELD, fault="koord-manager-down", named=("koord-manager-health", "koord-webhook"))],
            GOOD_PATTERNS,
            [False, True, True, True],
            id="a manager outage paged for its dependants too",
        ),
        pytest.param(
            [HELD, replace(UNHELD, fault="webhook-config-deleted", named=("koord-webhook", "webhook-cert-expiry"))],
            GOOD_PATTERNS,
            [True, True, True, True],
            id="no one check names the root cause: not judged",
        ),
    ],
)
def test_targets(records: list[FaultRecord], patterns: list[PatternOutcome], holds: list[bool | None]) -> None:
    assert [t.holds for t in targets(records, patterns)] == holds


@pytest.mark.parametrize(
    ("named", "root"),
    [
        (("apiserver-health", "apiserver-triage"), "apiserver-health"),
        (("apiserver-triage", "apiserver-health"), "apiserver-health"),
        (("apiserver-triage",), "apiserver-triage"),
        (("admission-dry-run", "koord-manager-health", "koord-webhook", "leader-leases"), "koord-manager-health"),
        (("koordlet-coverage", "nodemetric-freshness"), "koordlet-coverage"),
        (("apiserver-cert-expiry", "apiserver-triage"), None),
        (("koord-webhook", "kruise-webhook", "admission-dry-run", "webhook-cert-expiry"), None),
        ((), None),
    ],
)
def test_the_root_cause_check_is_the_one_the_others_depend_on(named: tuple[str, ...], root: str | None) -> None:
    assert root_cause_check(named) == root


def test_the_page_says_how_it_was_made_and_holds_a_table_per_fault() -> None:
    page = render(
        [HELD, replace(UNHELD, fault="etcd-down")], GOOD_PATTERNS, command="outpost sandbox pages", generated_at="then"
    )
    assert page.startswith("# Pages and notifications per fault\n\nGenerated by `outpost sandbox pages` on then")
    assert (
        "| one page per incident wherever one check names its root cause (API server down: one page, not one per "
        "check) | measured, every fault whose checks all depend on one of them | **NO** | 1 of 2 at most one page, the "
        "root's; apiserver-down 1 page(s): `apiserver-health`; more: etcd-down: 3 page(s), `koord-webhook`, "
        "`apiserver-health`, `koord-manager-health` |" in page
    )
    assert "| apiserver-down |  | 1 | 0 | 3 | 250 | 275 | yes | 0 / 1 | 0 / 1 |" in page
    assert "| etcd-down |  | 3 | 1 | 0 | 240 | 275 | yes | 0 / 0 | 0 / 0 |" in page
    assert "### `apiserver-down`" in page
    assert "| pages | 1: `apiserver-health` (250 s) | 0 | 0 |" in page
    assert (
        "| held back | `koord-manager-health`, `koord-webhook`, `node-utilization` | 1: `koord-webhook error` "
        "| 1: `koord-webhook error` |" in page
    )
    assert "| notifications | 1: `node-utilization` (900 s) | 0 | 0 |" in page
    assert "| apiserver-health | two failed runs in three | - | 180 | 180 | 275 |" in page
    assert page.endswith("|\n")


def test_a_fault_the_shipped_parameters_do_not_catch_promises_no_page() -> None:
    """Its checks never failed between the break and the heal (an opt-in parameter catches it, as alert-times says):
    no model time, not judged late, and the page says why."""
    quiet = record(
        fault="backend-down",
        target="kruise-daemon",
        named=(PARENT,),
        runs=tuple(run(PARENT, BROKE + 60 * i, "ok") for i in range(9)),
    )
    counted = tally(quiet)
    assert (counted.model_seconds, counted.first_page_within_model, counted.uncaught) == (None, None, (PARENT,))
    [*_, first_page] = targets([quiet], GOOD_PATTERNS)
    assert first_page.holds is None
    assert "no failing run with the shipped parameters (no page promised): backend-down kruise-daemon" in (
        first_page.evidence
    )
    page = render([quiet], GOOD_PATTERNS, command="outpost sandbox pages", generated_at="then")
    assert f"No failing run of `{PARENT}` with the shipped `local` parameters" in page


# -- the demo's account of one fault ------------------------------------------------------------------------------


def test_the_demo_tells_the_one_page_what_it_says_and_the_next_step(tmp_path: Path) -> None:
    function_log = tmp_path / "runs.log"
    step = {
        "failure": "unreachable",
        "cause": "the API server does not answer",
        "command": "kubectl get --raw /readyz",
    }
    function_log.write_text(
        "not a run line\n"
        + json.dumps({"check": PARENT, "status": "ok", "summary": "healthy"})
        + "\n"
        + json.dumps({"check": PARENT, "status": "error", "summary": "connection refused", "next_steps": [step]})
        + "\n"
    )
    settings = load_settings(environment_file(DEFAULT_ENVIRONMENT))
    told = demo.tell(HELD, function_log, settings)
    shown = "\n".join(told.lines)
    assert told.one_page, shown
    assert f"PAGE           {PARENT} at 250 s (model worst case 275 s)" in shown
    assert "held back      3 dependant(s), their monitors in maintenance: koord-manager-health, koord-webhook" in shown
    assert f"docs/runbooks.md#{PARENT}" in shown  # the monitor's description, which the page carries
    assert "its run said   connection refused" in shown
    assert "next step      the API server does not answer; run: kubectl get --raw /readyz" in shown
    assert "AWS (CloudWatch): 0 paging and 1 notifying alarm(s) acted (apiserver-health error), 1 held back" in shown
    assert shown.endswith("resolved")


def test_the_demo_says_when_it_was_not_one_page(tmp_path: Path) -> None:
    settings = load_settings(environment_file(DEFAULT_ENVIRONMENT))
    told = demo.tell(UNHELD, tmp_path / "none.log", settings)
    assert not told.one_page
    assert told.lines[-1].strip() == "NOT the one page it should be"
