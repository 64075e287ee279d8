"""Contracts between the registry, the deployment files, the sandbox and the catalogue (docs/checks.md).

Each is a promise someone relies on: a registered check that is not enabled in the local environment is
never exercised by `outpost demo` or e2e; one without an entry module cannot be deployed; a fault that
claims to fail a check outside the catalogue tests nothing anyone agreed to. The files themselves are written
from the registry (`python -m outpost.tooling.catalogue`, held in step by tests/unit/test_generated.py); these
tests hold what they promise, with the registry as the only count.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import Field

from outpost.check import CheckSpec, Params
from outpost.registry import checks, jobs
from outpost.result import Result
from outpost.tooling import catalogue
from outpost_sandbox.faults import FAULTS, TARGET_CHECKS

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "docs" / "checks.md"
LOCAL = ROOT / "infra" / "environments" / "local.yaml"
CHECKS = checks()
REGISTERED = [check.name for check in CHECKS]
_ROW = re.compile(
    r"^\| `(?P<name>[a-z0-9-]+)` \| (?P<system>[^|]+) \| (?P<layer>[^|]+) "
    r"\| (?P<severity>critical|warning) \| (?P<fails>.+) \|$"
)


def table_lines() -> list[str]:
    """The rows of the catalogue's and the jobs' tables as the generator writes them (test_generated holds the page
    to that; each check's section below the tables has a table of parameters of its own)."""
    page = catalogue.catalogue_text(CATALOGUE.read_text(), CHECKS, jobs())
    tables = page.split("\n## Dependencies", 1)[0]  # the dependency table (its own region) follows them
    return [line for line in tables.splitlines() if line.startswith("| `")]


def test_the_catalogue_tables_are_the_registry_row_for_row() -> None:
    rows = [match.groupdict() for line in table_lines() if (match := _ROW.match(line))]
    assert len(rows) == len(table_lines()), "every table row must parse as `| `name` | system | layer | severity | ...`"
    assert [tuple(row[key].strip() for key in ("name", "system", "layer", "severity", "fails")) for row in rows] == [
        (c.name, c.system, c.layer, c.severity, c.fails_when) for c in [*CHECKS, *jobs()]
    ]


@pytest.mark.parametrize("name", REGISTERED)
def test_registered_check_is_enabled_locally(name: str) -> None:
    checks: dict[str, Any] = (yaml.safe_load(LOCAL.read_text()) or {}).get("checks") or {}
    assert name in checks, f"{name} is not listed in {LOCAL.relative_to(ROOT)}: run `{catalogue.COMMAND}`"
    assert (checks[name] or {}).get("enabled", True) is not False, f"{name} is disabled in the local environment"


@pytest.mark.parametrize("name", REGISTERED)
def test_registered_check_has_an_entry_module(name: str) -> None:
    main = ROOT / "functions" / name.replace("-", "_") / "main.py"
    assert main.is_file(), f"{name}: {main.relative_to(ROOT)} is missing: run `{catalogue.COMMAND}`"
    tree = ast.parse(main.read_text())
    assigned: dict[str, ast.expr] = {
        target.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    assert isinstance(assigned.get("CHECK"), ast.Constant), f"{main}: no CHECK = '<name>'"
    assert assigned["CHECK"].value == name  # type: ignore[attr-defined]
    for entry, factory in (("handler", "make_handler"), ("http", "make_target")):
        call = assigned.get(entry)
        assert isinstance(call, ast.Call), f"{main}: `{entry}` is not built by {factory}"
        assert isinstance(call.func, ast.Name)
        assert call.func.id == factory
        assert [ast.unparse(a) for a in call.args] == ["CHECK"]


def _fault_checks() -> list[tuple[str, str]]:
    named = {(fault.name, check) for fault in FAULTS.values() for check in fault.checks}
    named |= {(f"target {target}", check) for target, checks in TARGET_CHECKS.items() for check in checks}
    return sorted(named)


@pytest.mark.parametrize(("fault", "check"), _fault_checks())
def test_every_check_a_fault_names_is_in_the_catalogue(fault: str, check: str) -> None:
    assert check in REGISTERED, f"sandbox fault {fault} names {check}, which is not a check of the catalogue"


def test_every_fault_names_some_check_or_says_why_not() -> None:
    assert FAULTS, "the sandbox has no faults"
    assert all(fault.checks for fault in FAULTS.values())


class _ThresholdParams(Params):
    threshold_days: float = Field(21.0, gt=0)
    paths: list[str] = Field(default_factory=lambda: ["/readyz"])


def _spec(fails_when: str) -> CheckSpec[_ThresholdParams, None]:
    return CheckSpec(
        name="probe",
        system="any",
        layer="control plane",
        severity="critical",
        schedule_minutes=1,
        fails_when=fails_when,
        params=_ThresholdParams,
        fetch=lambda cluster, params: None,
        evaluate=lambda data, params, now: Result.ok("probe", "fine"),
        access=lambda params: (),
    )


def test_fails_when_states_the_defaults_the_parameters_have() -> None:
    spec = _spec("certificate expires within {threshold_days:g} days (asked at {paths[0]})")
    assert spec.fails_when == "certificate expires within 21 days (asked at /readyz)"


def test_fails_when_naming_no_parameter_is_refused_at_import() -> None:
    with pytest.raises(KeyError, match="threshold_seconds"):
        _spec("expires within {threshold_seconds} s")
