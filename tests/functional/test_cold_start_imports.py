"""A function's cold start imports its own check and the core, not the catalogue, and refuses its own bad
params: the lazy registry (`outpost.registry`) and `load_settings(only=...)` at work, in fresh interpreters
exactly as the platform starts one (the entry module executed from its file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from outpost import registry

REPO = Path(__file__).resolve().parents[2]
LOCAL = REPO / "infra" / "environments" / "local.yaml"

_PROBE = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("entry", sys.argv[1])
module = importlib.util.module_from_spec(spec)
try:
    spec.loader.exec_module(module)
except Exception as error:
    print(json.dumps({"error": type(error).__name__, "message": str(error),
                      "problems": list(getattr(error, "problems", []))}))
    raise SystemExit(0)
print(json.dumps({"modules": sorted(m for m in sys.modules if m.startswith(("outpost.checks.", "outpost.families."))),
                  "top": sorted({m.split(".")[0] for m in sys.modules})}))
"""

# What each probed function's own module brings along: the shared body of its family (outpost.families).
_FAMILY = {
    "koordlet-coverage": {"daemon_coverage"},
    "kruise-manager-health": {"manager_pods"},
    "apiserver-health": set(),
}


def _cold_start(check: str, config: Path) -> dict[str, Any]:
    entry = REPO / "functions" / check.replace("-", "_") / "main.py"
    env = {**os.environ, "OUTPOST_CONFIG": str(config)}
    env.pop("OUTPOST_ENV", None)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(entry)], env=env, capture_output=True, text=True, timeout=120, check=True
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("check", sorted(_FAMILY))
def test_an_entry_module_imports_only_its_own_check(check: str) -> None:
    started = _cold_start(check, LOCAL)
    own = registry._MODULES[check]
    want = {f"outpost.checks.{own}"} | {f"outpost.families.{m}" for m in _FAMILY[check]}
    assert set(started["modules"]) == want, started
    # Neither the official client nor a cloud SDK on a kubeconfig environment's cold start.
    assert not {"kubernetes", "boto3", "botocore"} & set(started["top"]), started["top"]


def test_cold_start_still_refuses_its_own_bad_params_and_unknown_checks(tmp_path: Path) -> None:
    raw = yaml.safe_load(LOCAL.read_text())
    raw["checks"]["koordlet-coverage"]["params"] = {"namespace": 7, "no_such_param": 1}
    raw["checks"]["not-a-check"] = {"enabled": False}
    config = tmp_path / "local.yaml"
    config.write_text(yaml.safe_dump(raw))
    refused = _cold_start("koordlet-coverage", config)
    assert refused["error"] == "ConfigError", refused
    problems = refused["problems"]
    assert any(p.startswith("checks.koordlet-coverage.params.namespace") for p in problems), problems
    assert any(p.startswith("checks.koordlet-coverage.params.no_such_param") for p in problems), problems
    assert any(p.startswith("checks.not-a-check: unknown check") for p in problems), problems


def test_another_checks_bad_params_are_that_checks_cold_start_and_validate_still_refuses_them(tmp_path: Path) -> None:
    raw = yaml.safe_load(LOCAL.read_text())
    raw["checks"]["kruise-manager-replicas"]["params"] = {"min_ready": "many"}
    config = tmp_path / "local.yaml"
    config.write_text(yaml.safe_dump(raw))
    assert "modules" in _cold_start("koordlet-coverage", config)  # this function's check is fine: it starts
    assert _cold_start("kruise-manager-replicas", config)["error"] == "ConfigError"
    validate = subprocess.run(
        [str(Path(sys.executable).parent / "outpost"), "validate", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert validate.returncode != 0
    assert "checks.kruise-manager-replicas.params.min_ready" in validate.stdout + validate.stderr
