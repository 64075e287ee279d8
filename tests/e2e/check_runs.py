"""Running checks against the sandbox as a deployed function runs them, written once for every e2e test.

A configuration authenticates as the read-only probe (unless a test gives other `auth`), names only the checks a
test asks for, and points each check's heartbeat at a real receiver through `env:OUTPOST_HEARTBEAT_<CHECK>` (the
naming of `infra/environments/local.yaml`). Every run loads its settings afresh: a cold start of its own, as a
scheduled function's would be. The receiver is anything with `url_for(check)` and `pings_for(check)`.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest
import yaml

from outpost.result import Result, Status
from outpost.runner import run_check
from outpost.settings import load_settings
from outpost_sandbox import faults, systems
from outpost_sandbox.backends.kube import Kube

if TYPE_CHECKING:
    from conftest import SandboxInfo

LOCAL = Path(__file__).resolve().parents[2] / "infra" / "environments" / "local.yaml"
REAL_NODES = 1
"""The process node (`outpost_sandbox.kubelet`): the sandbox's one node that is not a KWOK fake node."""

Params = dict[str, Any]


class Receiver(Protocol):
    """The heartbeat receiver's interface the tests use: one URL per check, and the pings it took."""

    def url_for(self, check: str) -> str: ...

    def pings_for(self, check: str) -> int: ...


def heartbeat_env(check: str) -> str:
    return "OUTPOST_HEARTBEAT_" + check.upper().replace("-", "_")


def shipped_params(check: str) -> Params:
    """The check's params in the sandbox's environment as shipped (local.yaml)."""
    entry = yaml.safe_load(LOCAL.read_text())["checks"].get(check) or {}
    return dict(entry.get("params") or {})


@dataclass
class CheckRuns:
    """Configurations and runs for one test: files in `directory`, heartbeats to `receiver`."""

    directory: Path
    sandbox: SandboxInfo
    receiver: Receiver
    monkeypatch: pytest.MonkeyPatch

    def config(
        self,
        check: str,
        params: Params | None = None,
        *,
        shipped: bool = False,
        deadline: float = 30,
        auth: Params | None = None,
    ) -> Path:
        """An environment of `check` alone: `params` over local.yaml's for it (`shipped`) or over its defaults."""
        merged = {**(shipped_params(check) if shipped else {}), **(params or {})}
        return self.config_of({check: merged}, deadline=deadline, auth=auth)

    def config_of(
        self, params: Mapping[str, Params | None], *, deadline: float = 30, auth: Params | None = None
    ) -> Path:
        """An environment of the checks named in `params`, each with its params (None: its defaults)."""
        checks = {
            check: {"heartbeat": f"env:{heartbeat_env(check)}", **({"params": given} if given else {})}
            for check, given in params.items()
        }
        cluster = {
            "name": "sandbox",
            "auth": auth or {"mode": "kubeconfig", "path": str(self.sandbox.probe_kubeconfig)},
            "deadline_seconds": deadline,
            "connect_timeout_seconds": 3,
            "read_timeout_seconds": 10,
        }
        heartbeat = {"timeout_seconds": 2, "retries": 1, "backoff_seconds": 0.1}
        document = {"environment": "e2e", "cluster": cluster, "heartbeat": heartbeat, "checks": checks}
        return self._written("-".join(params), document)

    def local(self, check: str, params: Params | None = None) -> Path:
        """local.yaml with only `check` enabled, its kubeconfig paths (the probe's, and a check's own
        `cluster_auth`) pointed at this session's sandbox, `params` merged over the shipped ones."""
        document = yaml.safe_load(LOCAL.read_text())
        document["cluster"]["auth"]["path"] = str(self.sandbox.probe_kubeconfig)
        entry = dict(document["checks"][check])
        auth = entry.get("cluster_auth")
        if auth is not None:
            entry["cluster_auth"] = {**auth, "path": str(self.sandbox.state_dir / Path(auth["path"]).name)}
        entry["params"] = {**entry.get("params", {}), **(params or {})}
        entry["heartbeat"] = f"env:{heartbeat_env(check)}"
        document["checks"] = {check: entry}
        return self._written(f"local-{check}", document)

    def heartbeat(self, *checks: str) -> None:
        """Point the checks' heartbeat references at the receiver for the rest of the test."""
        for check in checks:
            self.monkeypatch.setenv(heartbeat_env(check), self.receiver.url_for(check))

    def deployed(self, check: str) -> Path:
        """`check`'s configuration as a deployed function finds it: in OUTPOST_CONFIG, its heartbeat set."""
        config = self.config(check)
        self.monkeypatch.setenv("OUTPOST_CONFIG", str(config))
        self.heartbeat(check)
        return config

    def run(self, config: Path, check: str) -> Result:
        """One run of `check` in this process, as the runner of a function runs it."""
        self.heartbeat(check)
        return run_check(load_settings(config), check, log=False)

    def probe(self, check: str, params: Params | None = None, *, shipped: bool = False) -> Result:
        """One run of `check` alone as the probe: `config(check, params, shipped=shipped)` run once."""
        return self.run(self.config(check, params, shipped=shipped), check)

    def healthy(
        self, check: str, params: Params | None = None, *, shipped: bool = False, config: Path | None = None
    ) -> Result:
        """One run on a healthy sandbox (of `config`, else `config(check, params, shipped=shipped)`): ok,
        reported, exactly one ping. The result, for what a test asserts of its details."""
        result = self.run(config or self.config(check, params, shipped=shipped), check)
        assert result.status is Status.OK, (result.summary, result.errors)
        assert result.reported is True
        assert self.receiver.pings_for(check) == 1
        return result

    def cli(self, config: Path, check: str, *extra: str) -> tuple[int, dict[str, Any]]:
        """`outpost run CHECK --config FILE --json` in a process of its own: (exit status, the one result)."""
        env = {**os.environ, heartbeat_env(check): self.receiver.url_for(check)}
        proc = subprocess.run(
            [sys.executable, "-m", "outpost.cli", "run", check, "--config", str(config), "--json", *extra],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=env,
        )
        assert proc.stdout.strip(), f"exit {proc.returncode}, no result: {proc.stderr[-2000:]}"
        (result,) = json.loads(proc.stdout)
        return proc.returncode, result

    def assert_silent(self, result: Result, check: str) -> None:
        """Not reported, and no ping taken: what every run that is not ok must be."""
        assert result.reported is False
        assert self.receiver.pings_for(check) == 0

    def _written(self, stem: str, document: Params) -> Path:
        """A new file each time: a configuration written earlier in the test stays what it was."""
        path = self.directory / f"{stem}.yaml"
        for n in itertools.count(2):
            if not path.exists():
                break
            path = self.directory / f"{stem}-{n}.yaml"
        path.write_text(yaml.safe_dump(document))
        return path


@contextmanager
def broken(fault: str, state_dir: Path, target: str | None = None, **options: Any) -> Iterator[None]:
    """`fault` active for the block, healed after it whatever happened (heal returns once the cluster works)."""
    faults.break_fault(fault, target, state_dir, **options)
    try:
        yield
    finally:
        faults.heal(fault, state_dir=state_dir)


def wait_leases_settled(sandbox: SandboxInfo, timeout: float = 45) -> None:
    """Until each manager's leader Lease is held by one of its Running pods and renewed (read as admin).

    A manager process that exited (the kubelet restarts it in the same pod) takes its Lease back only once the
    old one expired: a real failover window, which leader-leases reports. A test that needs the settled state
    waits for it here, instead of the check being taught to look away.
    """
    deadline = time.monotonic() + timeout
    with Kube.from_kubeconfig(sandbox.kubeconfig) as kube:
        while not systems.leases_settled(kube):
            if time.monotonic() > deadline:
                raise AssertionError(f"leader Leases not held by their managers' running pods after {timeout:.0f} s")
            time.sleep(1)


def manager_pods(sandbox: SandboxInfo, namespace: str, selector: str) -> list[str]:
    """The names of a manager's pods (label `selector` in `namespace`), sorted, read as admin."""
    out = sandbox.kubectl("get", "pods", "-n", namespace, "-l", selector, "-o", "name")
    return sorted(line.removeprefix("pod/") for line in out.stdout.split())


def assert_every_pod_ready(result: Result, pods: list[str], replicas: int) -> None:
    """A manager health check's healthy details: each of its `replicas` pods answered 200 on `:8000/readyz` alone."""
    assert len(pods) == replicas
    assert result.details["paths"] == ["/readyz"]
    assert sorted(result.details["pods"]) == pods
    for outcomes in result.details["pods"].values():
        assert [(o["endpoint"], o["status_code"]) for o in outcomes] == [(":8000/readyz", 200)]
