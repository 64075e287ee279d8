"""The whole catalogue on a healthy sandbox: `outpost run --all` with the embedded default environment
(`infra/environments/local.yaml`) is all ok, exits 0, and pings every check's heartbeat exactly once.

The environment file is used as shipped; only its sandbox paths (`~/.outpost/sandbox/...`, where `outpost sandbox
up` puts its kubeconfigs) are pointed at this session's sandbox, and every heartbeat reference at a real local
receiver. Every registered check must be enabled there (tests/unit/test_contracts.py), so this is every check.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from check_runs import LOCAL, Receiver

from outpost import registry
from outpost_sandbox.state import pointed_at

if TYPE_CHECKING:
    from conftest import SandboxInfo


def test_run_all_on_the_local_environment_is_all_ok(tmp_path: Path, sandbox: SandboxInfo, receiver: Receiver) -> None:
    environment = pointed_at(yaml.safe_load(LOCAL.read_text()), sandbox.state_dir)
    env = dict(os.environ)
    for name, check in environment["checks"].items():
        reference = (check or {}).get("heartbeat", "")
        assert reference.startswith("env:"), f"{name}: the local environment's heartbeat is {reference!r}"
        env[reference.removeprefix("env:")] = receiver.url_for(name)
    config = tmp_path / "local.yaml"
    config.write_text(yaml.safe_dump(environment))

    process = subprocess.run(
        [sys.executable, "-m", "outpost.cli", "run", "--all", "--config", str(config), "--json"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        env=env,
    )

    assert process.stdout.strip(), process.stderr
    results = {result["check"]: result for result in json.loads(process.stdout)}
    assert sorted(results) == sorted(registry.names()), "run --all on local must run the whole catalogue"
    not_ok = {
        name: (result["status"], result["summary"], result.get("errors"))
        for name, result in results.items()
        if result["status"] != "ok"
    }
    assert not not_ok, json.dumps(not_ok, indent=1)
    assert process.returncode == 0, process.stderr
    assert {name: receiver.pings_for(name) for name in results} == dict.fromkeys(results, 1)
