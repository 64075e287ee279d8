"""The cluster seam's TLS probe against real TLS listeners on 127.0.0.1 (certificates generated here).

Proves: the TCP connect and the handshake are timed and verified with the cluster's own trust; an
expired certificate is refused by verification (code 10) and only then read from a second,
unverified handshake that presents no client certificate; an untrusted CA and a closed port are data,
not exceptions; nothing but the handshake is sent.
"""

from __future__ import annotations

import datetime as dt
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kit.certs import Issued, issue
from outpost.cluster import Cluster, Deadline
from outpost.cluster.tls import X509_V_ERR_CERT_HAS_EXPIRED
from outpost.errors import ClusterTimeout

NOW = dt.datetime.now(dt.UTC)
CA = issue("probe-test-ca", NOW - dt.timedelta(days=1), NOW + dt.timedelta(days=365), is_ca=True)
FOREIGN = issue("foreign-ca", NOW - dt.timedelta(days=1), NOW + dt.timedelta(days=365), is_ca=True)


def serving(not_after: dt.datetime, ca: Issued = CA) -> Issued:
    not_before = min(NOW - dt.timedelta(days=1), not_after - dt.timedelta(days=90))
    return issue("kube-apiserver", not_before, not_after, ca=ca, ips=("127.0.0.1",))


@contextmanager
def tls_listener(tmp_path: Path, leaf: Issued, ca: Issued = CA) -> Iterator[tuple[int, list[bytes], list[bool]]]:
    """A TLS server presenting leaf+CA; yields (port, bytes received after handshakes, client cert seen?)."""
    (tmp_path / "leaf.pem").write_bytes(leaf.pem + ca.pem)
    (tmp_path / "leaf.key").write_bytes(leaf.key_pem)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "leaf.pem", tmp_path / "leaf.key")
    context.verify_mode = ssl.CERT_OPTIONAL
    context.load_verify_locations(cadata=CA.pem.decode())
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    received: list[bytes] = []
    client_certs: list[bool] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                try:
                    conn.settimeout(2)
                    with context.wrap_socket(conn, server_side=True) as tls:
                        client_certs.append(tls.getpeercert() not in (None, {}))
                        try:
                            received.append(tls.recv(1024))
                        except (TimeoutError, ssl.SSLError, OSError):
                            received.append(b"")
                except (ssl.SSLError, OSError):
                    continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], received, client_certs
    finally:
        stop.set()
        thread.join(2)
        listener.close()


def cluster_for(
    port: int, *, client: Issued | None = None, tmp_path: Path | None = None, deadline: float = 10.0
) -> Cluster:
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cadata=CA.pem.decode())
    if client is not None and tmp_path is not None:
        (tmp_path / "client.pem").write_bytes(client.pem)
        (tmp_path / "client.key").write_bytes(client.key_pem)
        context.load_cert_chain(tmp_path / "client.pem", tmp_path / "client.key")
    return Cluster(
        "probe-test",
        f"https://127.0.0.1:{port}",
        verify=context,
        token=lambda: "token-never-sent-123",
        deadline=Deadline(deadline),
        connect_timeout=2.0,
    )


def test_valid_certificate_is_verified_timed_and_nothing_is_sent(tmp_path: Path) -> None:
    client = issue("outpost-probe", NOW - dt.timedelta(days=1), NOW + dt.timedelta(days=30), ca=CA)
    with (
        tls_listener(tmp_path, serving(NOW + dt.timedelta(days=200))) as (port, received, client_certs),
        cluster_for(port, client=client, tmp_path=tmp_path) as cluster,
    ):
        probe = cluster.tls_probe()
    assert probe.handshake_ok
    assert probe.chain_verified
    assert probe.address == f"127.0.0.1:{port}"
    assert probe.tcp_ms is not None
    assert probe.tls_ms is not None
    assert (probe.tls_version or "").startswith("TLS")
    assert len(probe.chain) == 2  # leaf and the trust anchor
    assert client_certs == [True], "the cluster's client certificate is presented, as requests do"
    assert received == [b""], "no HTTP request, no token: only the handshake"


def test_expired_certificate_fails_verification_and_is_read_unverified_only_when_asked(tmp_path: Path) -> None:
    with tls_listener(tmp_path, serving(NOW - dt.timedelta(days=1))) as (port, received, client_certs):
        client = issue("outpost-probe", NOW - dt.timedelta(days=1), NOW + dt.timedelta(days=30), ca=CA)
        with cluster_for(port, client=client, tmp_path=tmp_path) as cluster:
            plain = cluster.tls_probe()
            named = cluster.tls_probe(read_unverified_chain=True)
    for probe in (plain, named):
        assert probe.connected
        assert not probe.handshake_ok
        assert probe.verify_code == X509_V_ERR_CERT_HAS_EXPIRED
        assert probe.certificate_expired
        assert "certificate has expired" in (probe.tls_error or "")
        assert not probe.chain_verified
    assert plain.chain == ()
    assert len(named.chain) == 2, "the chain the server sent, read from the second handshake"
    # Three connections: two failed verifications, one unverified read that presented no client certificate.
    assert client_certs[-1:] == [False]
    assert all(data == b"" for data in received)


def test_untrusted_ca_is_a_tls_error_not_an_expiry(tmp_path: Path) -> None:
    with (
        tls_listener(tmp_path, serving(NOW + dt.timedelta(days=200), ca=FOREIGN), ca=FOREIGN) as (port, _, _),
        cluster_for(port) as cluster,
    ):
        probe = cluster.tls_probe(read_unverified_chain=True)
    assert probe.connected
    assert not probe.handshake_ok
    assert not probe.certificate_expired
    assert (probe.tls_error or "").startswith("certificate verification failed: ")
    assert probe.verify_code not in (None, X509_V_ERR_CERT_HAS_EXPIRED)
    assert probe.chain == (), "an untrusted chain is never read: the unverified read only names an expiry"


def test_closed_port_is_a_tcp_error() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        port = holder.getsockname()[1]  # bound, not listening: connection refused
        with cluster_for(port) as cluster:
            probe = cluster.tls_probe()
    assert not probe.connected
    assert "TCP connect failed" in (probe.tcp_error or "")
    assert probe.tls_ms is None


def test_black_holed_handshake_ends_within_the_deadline() -> None:
    listener = socket.create_server(("127.0.0.1", 0))  # accepts (backlog) and never speaks TLS
    try:
        port = listener.getsockname()[1]
        with cluster_for(port, deadline=1.5) as cluster:
            probe = cluster.tls_probe()
            assert probe.connected
            assert probe.tls_error == "TLS handshake timed out"
            assert cluster.deadline.remaining() < 0.1 or (probe.tls_ms or 0) >= 1000
            cluster.deadline._expires = 0.0  # the run's deadline is gone: the probe refuses to start
            with pytest.raises(ClusterTimeout):
                cluster.tls_probe()
    finally:
        listener.close()
