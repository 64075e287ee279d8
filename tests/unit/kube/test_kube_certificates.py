"""outpost.kube.certificates over certificates generated here: bundles, chains, SANs, and what is not a certificate."""

from __future__ import annotations

import datetime as dt

import pytest

from kit import NOW
from kit.certs import KEY_TEXT, NOT_CERTIFICATES, b64, issue
from outpost.kube.certificates import (
    NotACertificate,
    describe_left,
    earliest_expiry,
    parse_base64_pem_bundle,
    parse_der,
    parse_der_chain,
    parse_pem_bundle,
)

CA = issue("outpost-test-ca", NOW - dt.timedelta(days=10), NOW + dt.timedelta(days=3650), is_ca=True)
LEAF = issue(
    "kube-apiserver",
    NOW - dt.timedelta(days=1),
    NOW + dt.timedelta(days=5),
    ca=CA,
    dns=("kubernetes", "kubernetes.default.svc"),
    ips=("127.0.0.1", "10.96.0.1"),
)


def test_one_pem_certificate_gives_subject_issuer_validity_and_sans() -> None:
    (info,) = parse_pem_bundle(LEAF.pem)
    assert info.subject == "CN=kube-apiserver"
    assert info.issuer == "CN=outpost-test-ca"
    assert info.dns_names == ("kubernetes", "kubernetes.default.svc")
    assert info.ip_addresses == ("127.0.0.1", "10.96.0.1")
    assert info.sans == info.dns_names + info.ip_addresses
    assert not info.is_ca
    assert info.not_after == LEAF.certificate.not_valid_after_utc
    assert info.not_after.tzinfo is not None
    assert info.days_left(NOW) == pytest.approx(5.0, abs=1e-3)
    assert not info.expired(NOW)
    assert info.details(NOW)["sans"] == ["kubernetes", "kubernetes.default.svc", "127.0.0.1", "10.96.0.1"]


def test_bundle_reads_every_block_and_the_earliest_expiry_wins() -> None:
    old_ca = issue("old-ca", NOW - dt.timedelta(days=400), NOW + dt.timedelta(days=2), is_ca=True)
    bundle = CA.pem + b"\n" + old_ca.pem
    infos = parse_pem_bundle(bundle)
    assert [i.subject for i in infos] == ["CN=outpost-test-ca", "CN=old-ca"]
    assert all(i.is_ca for i in infos)
    assert earliest_expiry(infos).subject == "CN=old-ca"


def test_other_pem_blocks_are_ignored_never_parsed() -> None:
    infos = parse_pem_bundle(LEAF.key_pem + LEAF.pem)
    assert [i.subject for i in infos] == ["CN=kube-apiserver"]


def test_der_chain_leaf_first() -> None:
    chain = parse_der_chain([LEAF.der, CA.der])
    assert [c.subject for c in chain] == ["CN=kube-apiserver", "CN=outpost-test-ca"]
    assert parse_der(CA.der).is_ca


def test_base64_bundle_as_in_a_ca_bundle() -> None:
    (info,) = parse_base64_pem_bundle(b64(CA.pem))
    assert info.subject == "CN=outpost-test-ca"


def test_expired_and_expiring_descriptions() -> None:
    expired = issue("gone", NOW - dt.timedelta(days=90), NOW - dt.timedelta(days=1), ca=CA)
    (info,) = parse_pem_bundle(expired.pem)
    assert info.expired(NOW)
    assert describe_left(info, NOW).startswith("expired 1.0 days ago (")
    (soon,) = parse_pem_bundle(LEAF.pem)
    assert describe_left(soon, NOW).startswith("expires in 5.0 days (")


@pytest.mark.parametrize(("text", "reason"), NOT_CERTIFICATES)
def test_what_is_not_a_certificate_is_named_without_quoting_it(text: str, reason: str) -> None:
    with pytest.raises(NotACertificate) as raised:
        parse_base64_pem_bundle(text)
    assert reason in str(raised.value)
    assert KEY_TEXT not in str(raised.value)
    assert "hello" not in str(raised.value)


def test_der_garbage_is_not_a_certificate() -> None:
    with pytest.raises(NotACertificate, match="DER certificate does not parse"):
        parse_der(b"\x30\x03\x02\x01\x00")


def test_earliest_of_nothing_is_refused() -> None:
    with pytest.raises(NotACertificate):
        earliest_expiry([])
