"""apiserver-cert-expiry end to end: the chain the sandbox API server presents, verified with the probe's own
kubeconfig trust. Healthy → ok (issuer, SANs in details) and one ping. apiserver-cert-expiring ("expires in 5.0
days") and apiserver-cert-expired ("expired") on the first run after break are test_fault_catalogue_e2e.py's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from probe_runs import heartbeat_env, run, write_config

from outpost.result import Status
from outpost_sandbox.heartbeat_receiver import HeartbeatReceiver

if TYPE_CHECKING:
    from conftest import SandboxInfo

pytestmark = pytest.mark.sandbox
CHECK = "apiserver-cert-expiry"


@pytest.fixture
def receiver() -> Iterator[HeartbeatReceiver]:
    with HeartbeatReceiver() as running:
        yield running


@pytest.fixture
def config(tmp_path: Path, sandbox: SandboxInfo, receiver: HeartbeatReceiver, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(heartbeat_env(CHECK), receiver.url_for(CHECK))
    return write_config(tmp_path, sandbox.probe_kubeconfig, CHECK)


def test_healthy_chain_is_ok_with_issuer_and_sans(config: Path, receiver: HeartbeatReceiver) -> None:
    result = run(config, CHECK)
    assert result.status is Status.OK, result.summary
    assert result.details["chain_verified"] is True
    assert result.details["days_left"] > 21
    assert "127.0.0.1" in result.details["sans"]
    assert result.details["issuer"]
    assert len(result.details["chain"]) >= 2  # the serving certificate and the CA it was verified against
    assert receiver.pings_for(CHECK) == 1
