"""The benchmark harness's pure parts (tests/bench): request framing over bytes real clients sent
(tests/fixtures/bench, captured by bench/capture_requests.py), the counting proxy against a local TLS upstream,
ratio and target formatting, and the Lambda cost arithmetic. No sandbox needed."""

from __future__ import annotations

import math
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench import cost, report
from bench.proxy import CountingProxy, FramingError, RequestFramer, RequestHead, parse_head, throwaway_tls

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bench"

CAPTURED = {
    "kubectl-get-nodes.bin": (
        [
            "GET /api?timeout=5s",
            "GET /apis?timeout=5s",
            "GET /api/v1?timeout=5s",
            "GET /api/v1/nodes?limit=500&timeout=5s",
        ],
        0,
    ),
    "kubectl-patch-status.bin": (
        [
            "GET /api?timeout=5s",
            "GET /apis?timeout=5s",
            "GET /api/v1?timeout=5s",
            "GET /api/v1/namespaces/ns/pods/p/status?timeout=5s",
            "PATCH /api/v1/namespaces/ns/pods/p/status?fieldManager=kubectl-patch&timeout=5s",
        ],
        len(b'{"status":{"phase":"Running"}}'),
    ),
    # The body of each PATCH is followed directly by the next request line (no CRLF): only Content-Length
    # tells them apart.
    "k8s-client-patch-then-list.bin": (
        [
            "PATCH /api/v1/namespaces/ns/pods/p/status",
            "GET /api/v1/nodes?limit=1",
            "PATCH /api/v1/namespaces/ns/pods/q/status",
        ],
        2 * 32,
    ),
    # A chunked body (size line, data, CRLF, last chunk, empty trailer) and then a GET.
    "curl-chunked.bin": (
        ["POST /apis/x/v1/things", "GET /api/v1/nodes?limit=1"],
        len(b"1f\r\n") + 31 + 2 + len(b"0\r\n") + 2,
    ),
}


def frame(data: bytes, step: int | None = None) -> tuple[list[RequestHead], bytes]:
    framer = RequestFramer()
    items: list[RequestHead | bytes] = []
    chunks = [data] if step is None else [data[i : i + step] for i in range(0, len(data), step)]
    for chunk in chunks:
        items += framer.feed(chunk)
    assert framer.idle, "the captured stream ends between requests"
    heads = [item for item in items if isinstance(item, RequestHead)]
    body = b"".join(item for item in items if isinstance(item, bytes))
    return heads, body


@pytest.mark.parametrize(("fixture", "expected"), list(CAPTURED.items()))
@pytest.mark.parametrize("step", [None, 1, 7, 100])
def test_framer_counts_each_request_of_a_real_client_once(
    fixture: str, expected: tuple[list[str], int], step: int | None
) -> None:
    lines, body_bytes = expected
    heads, body = frame((FIXTURES / fixture).read_bytes(), step)
    assert [head.line for head in heads] == lines
    assert len(body) == body_bytes


@pytest.mark.parametrize("fixture", list(CAPTURED))
def test_forwarded_stream_carries_the_fixed_identity_and_the_same_requests(fixture: str) -> None:
    data = (FIXTURES / fixture).read_bytes()
    framer = RequestFramer()
    forwarded = b"".join(
        item.encode("Bearer admin-identity") if isinstance(item, RequestHead) else item for item in framer.feed(data)
    )
    heads, body = frame(forwarded)
    original_heads, original_body = frame(data)
    assert [h.line for h in heads] == [h.line for h in original_heads]
    assert body == original_body
    assert all(h.header("Authorization") == "Bearer admin-identity" for h in heads)
    assert b"placeholder" not in forwarded


@pytest.mark.parametrize(
    "raw",
    [
        b"GET /x\r\n\r\n",
        b"GET /x HTTP/2\r\n\r\n",
        b"GET /x HTTP/1.1\r\nno-colon\r\n\r\n",
        b"POST /x HTTP/1.1\r\nContent-Length: ten\r\n\r\n",
        b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ],
)
def test_framer_refuses_what_is_not_http_1(raw: bytes) -> None:
    with pytest.raises(FramingError):
        RequestFramer().feed(raw)


def test_head_header_lookup_is_case_insensitive() -> None:
    head = parse_head(b"GET /api HTTP/1.1\r\nHost: h\r\ncontent-length: 3")
    assert (head.header("Content-Length"), head.header("HOST"), head.header("absent")) == ("3", "h", None)


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[tuple[int, Path, list[bytes]]]:
    """A TLS 'API server' answering every request with a 1000-byte chunked body, recording what it received."""
    context, ca = throwaway_tls(tmp_path / "upstream")
    listener = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []
    answer = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3e8\r\n" + b"x" * 1000 + b"\r\n0\r\n\r\n"
    )

    def serve() -> None:
        while True:
            try:
                raw, _ = listener.accept()
            except OSError:
                return
            with context.wrap_socket(raw, server_side=True) as conn:
                framer = RequestFramer()
                while data := conn.recv(65536):
                    received.append(data)
                    for item in framer.feed(data):
                        if isinstance(item, RequestHead):
                            conn.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    yield listener.getsockname()[1], ca, received
    listener.close()


def test_proxy_counts_requests_and_bytes_sent_to_the_client(
    tmp_path: Path, upstream: tuple[int, Path, list[bytes]]
) -> None:
    port, upstream_ca, received = upstream
    server_context, proxy_ca = throwaway_tls(tmp_path / "proxy")
    with CountingProxy("127.0.0.1", port, str(upstream_ca), "Bearer admin-identity", server_context) as proxy:
        verify = ssl.create_default_context(cafile=str(proxy_ca))
        with proxy.measure() as box, httpx.Client(verify=verify, http2=False) as client:
            for _ in range(3):
                response = client.patch(
                    f"https://127.0.0.1:{proxy.port}/api/v1/namespaces/n/pods/p/status",
                    headers={"Authorization": "Bearer placeholder-token"},
                    content=b'{"status":{"phase":"Running"}}',
                )
                assert response.content == b"x" * 1000
    counts = box[0]
    response_bytes = len(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3e8\r\n" + b"x" * 1000 + b"\r\n0\r\n\r\n"
    )
    assert counts.requests == 3
    assert counts.bytes_to_client == 3 * response_bytes
    assert counts.request_lines == ("PATCH /api/v1/namespaces/n/pods/p/status",) * 3
    assert counts.connections == 1
    sent = b"".join(received)
    assert b"placeholder-token" not in sent
    assert sent.count(b"Authorization: Bearer admin-identity") == 3


def test_ratios_say_how_many_times_more_the_other_took() -> None:
    assert report.times(200, 10) == 20
    assert report.times(5, 0) == math.inf
    assert report.times(0, 0) == 1.0
    assert [report.ratio_text(v) for v in (1.234, 12.34, 123.4, math.inf)] == ["1.23x", "12.3x", "123x", "inf"]
    assert report.at_least(12.3, 10) == "12.3x (target >= 10x: met)"
    assert report.at_least(4.0, 5) == "4.00x (target >= 5x: MISSED)"
    assert report.at_most(70.2, 64, "MB") == "70.2 MB (target <= 64 MB: MISSED)"
    assert (
        report.size_text(1_500_000),
        report.size_text(999),
        report.seconds_text(0.25),
        report.seconds_text(2.5),
    ) == ("1.5 MB", "999 B", "250 ms", "2.50 s")


def test_ratio_rows_put_outpost_in_the_denominator() -> None:
    ours = report.Figures("outpost", 0.5, 1000, 3, 40 * 1024, 0.1, True)
    pipeline = report.Figures("kubectl", 5.0, 50_000, 6, 80 * 1024, 0.0, True)
    assert report.ratio_rows(ours, [pipeline]) == [["kubectl / outpost", "50.0x", "2.00x", "10.0x", "2.00x", "n/a"]]


def test_request_summary_counts_repeats_in_order_of_first_use() -> None:
    lines = ["GET /api", "GET /api/v1/nodes", "GET /api", "PATCH /p"]
    assert report.request_summary(lines) == "GET /api x2; GET /api/v1/nodes; PATCH /p"
    assert report.request_summary(lines, limit=1) == "GET /api x2; and 2 other distinct request(s)"


def test_table_aligns_columns() -> None:
    assert report.table(("a", "bb"), [["x", "1"], ["yyy", "22"]]).splitlines() == [
        "a    bb",
        "---  --",
        "x     1",
        "yyy  22",
    ]


def test_memory_size_is_the_smallest_holding_peak_rss_with_headroom() -> None:
    assert cost.smallest_size_mb(40) == 128
    assert cost.smallest_size_mb(120) == 150  # 120 x 1.25
    assert cost.smallest_size_mb(20_000) == cost.MAX_MB


def test_cpu_time_slows_below_one_vcpu_and_waiting_does_not() -> None:
    assert cost.scaled_seconds(1.0, 0.2, 1769) == pytest.approx(1.0)
    assert cost.scaled_seconds(1.0, 0.2, 3538) == pytest.approx(1.0)
    assert cost.scaled_seconds(1.0, 0.2, 128) == pytest.approx(0.8 + 0.2 * 1769 / 128)
    assert cost.scaled_seconds(0.1, 0.5, 1769) == pytest.approx(0.1)  # CPU over several threads: capped at wall


def test_invocation_cost_is_billed_per_ms_and_gb_second_plus_the_request() -> None:
    # 0.3004 s at 128 MB: 301 ms billed x 0.125 GB x price + one request.
    assert cost.invocation_usd(0.3004, 128) == pytest.approx(0.301 * 0.125 * 0.0000133334 + 0.2e-6)


SAMPLE = cost.RunSample(
    "c",
    init_seconds=0.5,
    init_cpu_seconds=0.5,
    run_seconds=0.6,
    run_cpu_seconds=0.4,
    peak_rss_mb=50,
    warm_seconds=0.2,
    warm_cpu_seconds=0.05,
)
"""A check's measured run: half a second's init, 0.6 s run, 0.2 s warm; 50 MB peak."""


def test_catalogue_cost_per_month() -> None:
    chosen = cost.cheapest(SAMPLE)
    assert chosen.memory_mb == 128  # below one vCPU the smallest fitting size is the cheapest
    warm_seconds = 0.15 + 0.05 * 1769 / 128
    assert chosen.warm_usd == pytest.approx(43_800 * cost.invocation_usd(warm_seconds, 128))
    cold_seconds = 0.5 * 1769 / 128 + 0.2 + 0.4 * 1769 / 128
    assert chosen.cold_usd == pytest.approx(43_800 * cost.invocation_usd(cold_seconds, 128))
    costs, warm, cold = cost.catalogue([SAMPLE, SAMPLE])
    assert len(costs) == 2
    assert warm == pytest.approx(2 * chosen.warm_usd)
    assert cold == pytest.approx(2 * chosen.cold_usd)


@pytest.mark.parametrize(("nodes", "bound"), [(100, None), (500, None), (1000, None), (5000, None)])
def test_bench_config_bounds_kwok_lease_age_by_the_sandbox_tier(tmp_path: Path, nodes: int, bound: int | None) -> None:
    """kwok-node-consistency's default bound (600 s) is above every sandbox tier's node Lease (40, 160, 400 s), so
    the benchmark leaves local.yaml's kwok-node-consistency as shipped at every size."""
    import yaml

    from bench.run import bench_config

    kubeconfig = tmp_path / "proxy.kubeconfig"
    doc = yaml.safe_load(bench_config(tmp_path / "bench.yaml", kubeconfig, tmp_path / "state", nodes).read_text())
    params = doc["checks"]["kwok-node-consistency"].get("params") or {}
    assert params.get("max_lease_duration_seconds") == bound
    assert doc["cluster"]["auth"]["path"] == str(kubeconfig)


def test_cold_fraction_is_one_cold_start_per_so_many_hours_of_every_minute_invocations() -> None:
    assert cost.cold_fraction(2.0) == pytest.approx(730 / 2 / 43_800)  # 1/120: one in 120 invocations
    assert cost.cold_fraction(1 / 60) == 1.0  # a cold start every minute: every invocation cold
    assert cost.cold_fraction(0) == 1.0
    assert cost.common_usd(1.0, 3.0, 0.25) == pytest.approx(1.5)


def test_common_case_cost_lies_between_all_warm_and_all_cold() -> None:
    chosen = cost.cheapest(SAMPLE, fraction=0.01)
    assert chosen.common_usd == pytest.approx(0.99 * chosen.warm_usd + 0.01 * chosen.cold_usd)
    assert chosen.warm_usd < chosen.common_usd < chosen.cold_usd
    default = cost.cheapest(SAMPLE)  # the Lambda assumption
    assert default.common_usd == pytest.approx(
        cost.common_usd(default.warm_usd, default.cold_usd, cost.cold_fraction(cost.LAMBDA_HOURS_PER_COLD_START))
    )
    assert cost.LAMBDA_WARM_SOURCES[0].startswith("docs.aws.amazon.com/lambda/")
    text = Path(cost.__file__).read_text()  # the assumption's docstring quotes its sources
    assert all(f"https://{source}" in text.replace("/\n  ", "/") for source in cost.LAMBDA_WARM_SOURCES)


def test_side_rows_put_the_check_on_its_first_row_and_skip_missing_contenders() -> None:
    cold = report.Figures("outpost cold", 0.74, 53_200, 5, 60 * 1024, 0.02, True, cpu_seconds=0.61)
    warm = report.Figures(
        "outpost warm", 0.031, 1_200, 3, 45 * 1024, float("nan"), True, "check 30 ms", cpu_seconds=0.012
    )
    rows = report.side_rows("koordlet-coverage", [cold, warm, None])
    assert rows == [
        ["koordlet-coverage", "outpost cold", "53.2 kB", "5", "740 ms", "610 ms", "60.0 MB", "20 ms", "ok"],
        ["", "outpost warm", "1.2 kB", "3", "31 ms", "12 ms", "45.0 MB", "n/a", "ok (check 30 ms)"],
    ]
    assert report.side_rows("x", [None, warm])[0][:2] == ["x", "outpost warm"]
    assert report.table(report.SIDE_HEADERS, rows).splitlines()[0].split()[:2] == ["check", "contender"]


def test_reads_summary_tallies_watch_and_list_per_collection() -> None:
    reads = {
        "/api/v1/nodes": "watch, 3 changes from resourceVersion 100 to 140, 1234 B",
        "/api/v1/namespaces/koordinator-system/pods": "list, 100 objects, 52100 B: no state kept (cold start)",
    }
    assert report.reads_summary(reads) == (
        "watch 1, list 1: nodes watch +3 (1.2 kB); koordinator-system/pods list 100 (52.1 kB: no state kept)"
    )
    assert report.reads_summary({}, "warm (kept 61 s ago)") == "scrape: warm (kept 61 s ago)"
    assert report.reads_summary({}) == "no collection read"
    assert (
        report.short_path("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?x=y")
        == "kube-node-lease/leases"
    )
    assert report.read_text("something else") == "something else"


def test_no_worse_compares_a_cold_run_with_the_earlier_figures() -> None:
    then = report.Baseline(2_600_000, 4.60, 41, 64.7)
    same = report.Figures("outpost cold", 5.5, 2_610_000, 41, int(64.0 * 1024), 0.1, True)
    assert report.no_worse(same, then) == (
        "bytes 2.6 MB vs 2.6 MB, requests 41 vs 41, wall 5.50 s vs 4.60 s, peak RSS 64.0 MB vs 64.7 MB: no worse (met)"
    )
    worse = report.Figures("outpost cold", 7.0, 3_000_000, 41, int(64.0 * 1024), 0.1, True)
    assert report.no_worse(worse, then).endswith("worse in bytes, wall (MISSED)")
    assert report.no_worse(same, report.Baseline(2_600_000, 4.60)).endswith("wall 5.50 s vs 4.60 s: no worse (met)")


def test_growth_row_reads_cold_warm_and_kubectl_from_the_size_table() -> None:
    from bench.run import GROWTH_HEADERS, growth_row

    def f(wall: float, size: int) -> report.Figures:
        return report.Figures("c", wall, size, 1, 1024, 0.0, True)

    table = {
        "koordlet-coverage": [f(0.7, 53_000), f(0.03, 900), f(0.25, 56_000), None],
        "kruise-daemon-coverage": [f(0.9, 54_000), None, f(0.2, 56_300), None],
    }
    row = growth_row(100, table)
    assert len(row) == len(GROWTH_HEADERS)
    assert row == [
        "100",
        "700 ms",
        "53.0 kB",
        "30 ms",
        "900 B",
        "250 ms",
        "56.0 kB",
        "900 ms",
        "54.0 kB",
        "n/a",
        "n/a",
        "200 ms",
        "56.3 kB",
    ]
