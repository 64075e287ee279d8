"""apiserver-cert-expiry end to end: the chain the sandbox API server presents, verified with the probe's own
kubeconfig trust. Healthy → ok (issuer, SANs in details) and one ping. apiserver-cert-expiring ("expires in 5.0
days") and apiserver-cert-expired ("expired") on the first run after break are test_fault_catalogue_e2e.py's."""

from __future__ import annotations

from check_runs import CheckRuns

CHECK = "apiserver-cert-expiry"


def test_healthy_chain_is_ok_with_issuer_and_sans(runs: CheckRuns) -> None:
    result = runs.healthy(CHECK)
    assert result.details["chain_verified"] is True
    assert result.details["days_left"] > 21
    assert "127.0.0.1" in result.details["sans"]
    assert result.details["issuer"]
    assert len(result.details["chain"]) >= 2  # the serving certificate and the CA it was verified against
