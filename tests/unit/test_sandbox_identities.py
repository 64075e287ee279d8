"""The sandbox's static-token identities: a sandbox made before an identity existed (here the
kwok-pod-reconciler's `outpost-reconciler`) gets it on the next `up`, and keeps every token it handed out."""

from __future__ import annotations

from pathlib import Path

from outpost.tooling import rbac
from outpost_sandbox.pki import IDENTITIES, PKI


def test_missing_identity_is_added_and_existing_tokens_kept(tmp_path: Path) -> None:
    pki = PKI(tmp_path / "pki")
    pki.ensure("10.245.255.254")
    assert {ident.user for ident in IDENTITIES} >= {"outpost-probe", rbac.RECONCILER_USER}
    admin, probe = pki.token("admin"), pki.token("outpost-probe")
    # An older sandbox: no reconciler line in its token file.
    lines = [line for line in pki.token_file.read_text().splitlines() if f",{rbac.RECONCILER_USER}," not in line]
    pki.token_file.write_text("\n".join(lines) + "\n")

    pki.ensure("10.245.255.254")

    assert (pki.token("admin"), pki.token("outpost-probe")) == (admin, probe)
    reconciler = pki.token(rbac.RECONCILER_USER)
    assert len(reconciler) >= 32
    assert reconciler not in (admin, probe)
    users = [line.split(",")[1] for line in pki.token_file.read_text().splitlines()]
    assert sorted(users) == sorted(ident.user for ident in IDENTITIES)  # each exactly once
    assert f"{reconciler},{rbac.RECONCILER_USER},{rbac.RECONCILER_USER}" in pki.token_file.read_text()  # no group
    assert (pki.token_file.stat().st_mode & 0o777) == 0o600
