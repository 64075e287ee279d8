"""Contracts between the registry, the deployment files, the sandbox and the catalogue (docs/checks.md).

Each is a promise someone relies on: a registered check that is not enabled in the local environment is
never exercised by `outpost demo` or e2e; one without an entry module cannot be deployed; a fault that
claims to fail a check outside the catalogue tests nothing anyone agreed to.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from outpost.registry import checks
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


def catalogue() -> dict[str, dict[str, str]]:
    """The rows of the catalogue table, by check name."""
    rows = {}
    for line in CATALOGUE.read_text().splitlines():
        match = _ROW.match(line)
        if match:
            rows[match["name"]] = {k: v.strip() for k, v in match.groupdict().items()}
    return rows


def test_catalogue_table_is_complete() -> None:
    rows = catalogue()
    table_lines = [line for line in CATALOGUE.read_text().splitlines() if line.startswith("| `")]
    assert len(rows) == len(table_lines) == 20, "every table row must parse"
    assert "`kwok-pod-reconciler`" in CATALOGUE.read_text()


@pytest.mark.parametrize("name", REGISTERED)
def test_registered_check_is_in_the_catalogue_with_its_metadata(name: str) -> None:
    row = catalogue().get(name)
    assert row is not None, f"{name} is registered but not in docs/checks.md"
    check = next(c for c in CHECKS if c.name == name)
    assert (check.system, check.layer, check.severity) == (row["system"], row["layer"], row["severity"])


@pytest.mark.parametrize("name", REGISTERED)
def test_registered_check_is_enabled_locally(name: str) -> None:
    checks: dict[str, Any] = (yaml.safe_load(LOCAL.read_text()) or {}).get("checks") or {}
    assert name in checks, f"{name} is not listed in {LOCAL.relative_to(ROOT)}"
    assert (checks[name] or {}).get("enabled", True) is not False, f"{name} is disabled in the local environment"


@pytest.mark.parametrize("name", REGISTERED)
def test_registered_check_has_an_entry_module(name: str) -> None:
    main = ROOT / "functions" / name.replace("-", "_") / "main.py"
    assert main.is_file(), f"{name}: {main.relative_to(ROOT)} is missing"
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
    assert check in catalogue(), f"sandbox fault {fault} names {check}, which is not in docs/checks.md"


def test_every_fault_names_some_check_or_says_why_not() -> None:
    assert FAULTS, "the sandbox has no faults"
    assert all(fault.checks for fault in FAULTS.values())
