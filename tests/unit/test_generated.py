"""Every file that lists checks is what `python -m outpost.tooling.catalogue` writes from the registry, now.

The catalogue in docs/checks.md, functions/<check>/main.py, the example environments' entries and the RBAC golden
file are derived from the checks (their `CheckSpec`s, docstrings, `Params`), so adding or changing a check is its
own files and this one command. One test compares the repository with what the generator would write, in memory,
and names the command; the others prove the generator does what a new check needs of it, on copies.
"""

from __future__ import annotations

import ast
import difflib
import re
import shutil
from pathlib import Path

import pytest
import yaml

from outpost import registry
from outpost.tooling import catalogue

ROOT = Path(__file__).resolve().parents[2]


def _diff(path: str, want: str | None) -> str:
    current = (ROOT / path).read_text() if (ROOT / path).is_file() else ""
    lines = difflib.unified_diff(
        current.splitlines(), (want or "").splitlines(), f"{path} (repository)", f"{path} (generated)", lineterm=""
    )
    return "\n".join(list(lines)[:40])


def test_every_generated_file_is_in_step_with_the_checks() -> None:
    wanted = catalogue.wanted(ROOT)
    out_of_step = catalogue.stale(ROOT)
    assert not out_of_step, (
        f"out of step with the checks: {', '.join(out_of_step)}; run `{catalogue.COMMAND}` to rewrite them\n"
        + "\n".join(_diff(path, wanted[path]) for path in out_of_step[:3])
    )


@pytest.mark.parametrize("environment", sorted(catalogue.ENTRY_PATTERNS))
def test_each_example_environment_entry_follows_its_pattern(environment: str) -> None:
    """A generated entry must look like its neighbours, so every entry already there follows the pattern too."""
    checks = yaml.safe_load((ROOT / catalogue.ENVIRONMENTS / f"{environment}.yaml").read_text())["checks"]
    for name in (spec.name for spec in registry.checks() if spec.name in checks):  # a missing one: the test above
        generated = yaml.safe_load("".join(catalogue.entry_lines(environment, name)))[name]
        written = {key: checks[name].get(key) for key in generated}
        assert written == generated, (
            f"{environment}.yaml: {name} does not follow {catalogue.ENTRY_PATTERNS[environment]}"
        )


LOCAL = """\
environment: local
checks:
  alpha:
    heartbeat: env:OUTPOST_HEARTBEAT_ALPHA
    params:
      x: 1   # kept as written
  # gamma's own comment
  gamma:
    schedule_minutes: 5
    heartbeat: env:OUTPOST_HEARTBEAT_GAMMA
heartbeat:
  timeout_seconds: 5
"""


def test_a_missing_check_is_inserted_after_its_predecessor_and_nothing_else_changes() -> None:
    text = catalogue.environment_text(LOCAL, "local", ["zeta", "alpha", "beta", "gamma", "delta"], "local.yaml")
    assert text == (
        "environment: local\n"
        "checks:\n"
        "  zeta:\n"
        "    heartbeat: env:OUTPOST_HEARTBEAT_ZETA\n"
        "  alpha:\n"
        "    heartbeat: env:OUTPOST_HEARTBEAT_ALPHA\n"
        "    params:\n"
        "      x: 1   # kept as written\n"
        "  beta:\n"
        "    heartbeat: env:OUTPOST_HEARTBEAT_BETA\n"
        "  # gamma's own comment\n"
        "  gamma:\n"
        "    schedule_minutes: 5\n"
        "    heartbeat: env:OUTPOST_HEARTBEAT_GAMMA\n"
        "  delta:\n"
        "    heartbeat: env:OUTPOST_HEARTBEAT_DELTA\n"
        "heartbeat:\n"
        "  timeout_seconds: 5\n"
    )
    assert catalogue.environment_text(text, "local", ["alpha", "beta"], "local.yaml") == text


def test_an_environment_without_a_checks_block_is_refused_by_name() -> None:
    with pytest.raises(catalogue.CatalogueError, match=re.escape("dev.yaml: no top-level `checks:` block")):
        catalogue.environment_text("environment: dev\n", "dev", ["alpha"], "dev.yaml")


def test_entries_written_another_way_are_refused_rather_than_added_again() -> None:
    with pytest.raises(catalogue.CatalogueError, match="entries of `checks:` are not all two-space"):
        catalogue.environment_text("checks:\n    alpha: {}\n", "dev", ["alpha"], "dev.yaml")
    with pytest.raises(catalogue.CatalogueError, match=re.escape("dev.yaml: no top-level `checks:` block")):
        catalogue.environment_text("checks: {alpha: {}}\n", "dev", ["alpha"], "dev.yaml")


def test_a_local_environment_that_would_not_load_is_refused_naming_the_field() -> None:
    """A check whose parameter has no default gets an entry without it: refused, naming the field to write."""
    local = (ROOT / catalogue.ENVIRONMENTS / "local.yaml").read_text()
    without = re.sub(r"(?ms)^  ls-latency:\n.*?(?=^  be-eviction-rate:)", "", local)
    assert "ls-latency" not in without
    written = catalogue.environment_text(without, "local", [spec.name for spec in registry.checks()], "local.yaml")
    with pytest.raises(
        catalogue.CatalogueError, match=r"is invalid: checks\.ls-latency\.params\.endpoints: Field required;"
    ):
        catalogue.rbac_golden_text(written)


def test_the_catalogue_page_without_its_markers_is_refused_naming_them() -> None:
    with pytest.raises(catalogue.CatalogueError, match="region 'catalogue' lost its markers"):
        catalogue.catalogue_text("# The check catalogue\n", registry.checks(), registry.jobs())


def test_an_entry_module_keeps_to_the_line_length_whatever_the_name() -> None:
    name = "a-check-with-a-name-long-enough-to-wrap-the-title"
    text = catalogue.entry_module_text(name)
    assert max(len(line) for line in text.splitlines()) <= 120
    (check,) = [
        node.value
        for node in ast.parse(text).body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "CHECK"
    ]
    assert ast.literal_eval(check) == name


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The generated files' part of the repository, copied and brought in step (whether or not the repository is)."""
    for part in ("docs", "functions", catalogue.ENVIRONMENTS, "tests/unit/golden"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    catalogue.write(tmp_path)
    return tmp_path


def test_write_restores_what_was_lost_and_removes_what_no_check_owns(project: Path) -> None:
    (project / "functions" / "leader_leases" / "main.py").unlink()
    (project / "functions" / "retired_check").mkdir()
    (project / "functions" / "retired_check" / "main.py").write_text('CHECK = "retired-check"\n')
    gcp = project / catalogue.ENVIRONMENTS / "gcp-dev.yaml"
    gcp.write_text(gcp.read_text().replace("  leader-leases:\n", "  leader-leases-gone:\n"))
    lost = sorted(catalogue.stale(project))
    assert lost == [
        "functions/leader_leases/main.py",
        "functions/retired_check/main.py",
        f"{catalogue.ENVIRONMENTS}/gcp-dev.yaml",
    ]
    assert sorted(catalogue.write(project)) == lost
    assert catalogue.stale(project) == []
    assert not (project / "functions" / "retired_check").exists()
    assert "  leader-leases:\n    heartbeat: gcpsm:" in gcp.read_text()


def test_check_mode_writes_nothing_and_names_each_file_and_the_command(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "functions" / "leader_leases" / "main.py").unlink()
    assert catalogue.main(["--check", "--root", str(project)]) == 1
    assert capsys.readouterr().err == (
        f"functions/leader_leases/main.py: out of step with the checks\nrun `{catalogue.COMMAND}` to write them\n"
    )
    assert not (project / "functions" / "leader_leases" / "main.py").exists()
    assert catalogue.main(["--root", str(project)]) == 0
    assert capsys.readouterr().out == "wrote functions/leader_leases/main.py\n"
    assert catalogue.main(["--check", "--root", str(project)]) == 0
