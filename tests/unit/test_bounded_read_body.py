"""`outpost.bounded.read_body`: bodies decoded by Outpost as they arrive, refused the moment a cap would pass.

The raw bytes come from a stream of our own (no socket): each test says what arrives, chunk by chunk, and
what `read_body` makes of it. The socket-level behaviour (TLS, the deadline, real servers) is in
tests/functional/test_cluster_client.py and the byte-budget fault matrix.
"""

from __future__ import annotations

import gzip
import tracemalloc
import zlib
from collections.abc import Iterator

import httpx
import pytest

from outpost.bounded import BodyRefused, ByteBudget, content_codings, read_body


class Chunks(httpx.SyncByteStream):
    """A response stream that yields `chunks` and counts how many were asked for."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.read = 0

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.chunks:
            self.read += 1
            yield chunk


def streamed(chunks: list[bytes], encoding: str | None = None, length: int | None = None) -> httpx.Response:
    headers = {"Content-Encoding": encoding} if encoding else {}
    if length is not None:
        headers["Content-Length"] = str(length)
    return httpx.Response(200, headers=headers, stream=Chunks(chunks))


def split(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def zeros_gzip(size: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return packer.compress(bytes(size)) + packer.flush()


def test_identity_is_read_and_counted() -> None:
    budget = ByteBudget(100, "cluster.max_run_bytes")
    assert read_body(streamed([b"abc", b"def"]), cap=10, cap_setting="x", budget=budget) == b"abcdef"
    assert (budget.used, budget.remaining()) == (6, 94)


def test_gzip_is_inflated_and_counted_at_its_inflated_size() -> None:
    body = b"[+]ping ok\n" * 1000
    budget = ByteBudget(1 << 20, "cluster.max_run_bytes")
    assert (
        read_body(streamed(split(gzip.compress(body), 7), "gzip"), cap=1 << 20, cap_setting="x", budget=budget) == body
    )
    assert budget.used == len(body)


def test_concatenated_gzip_members_are_one_body() -> None:
    assert (
        read_body(streamed([gzip.compress(b"one,") + gzip.compress(b"two")], "GZIP"), cap=100, cap_setting="x")
        == b"one,two"
    )


def test_a_bomb_never_inflates_past_the_cap_in_one_step() -> None:
    # 256 MiB of zeros in one network chunk of about 256 KB: httpx's decoder would make all of it at once.
    bomb = zeros_gzip(256 * 1024 * 1024)
    cap = 1024 * 1024
    tracemalloc.start()
    try:
        with pytest.raises(
            BodyRefused,
            match=r"exceeds the cap of 1048576 bytes \(cluster.max_response_bytes\) "
            "once inflated",
        ) as caught:
            read_body(streamed([bomb], "gzip"), cap=cap, cap_setting="cluster.max_response_bytes")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.reason == "response-cap"
    assert peak < 4 * cap, f"peak {peak} bytes while inflating"


def test_the_run_budget_refuses_past_what_is_left() -> None:
    budget = ByteBudget(1000, "cluster.max_run_bytes")
    read_body(streamed([b"a" * 900]), cap=10_000, cap_setting="x", budget=budget)
    with pytest.raises(BodyRefused, match=r"more than its budget of 1000 bytes \(cluster.max_run_bytes\)") as caught:
        read_body(streamed([zeros_gzip(1_000_000)], "gzip"), cap=10_000_000, cap_setting="x", budget=budget)
    assert caught.value.reason == "run-budget"
    assert budget.used <= 1001  # the inflater was asked for no more than what was left (+1 to see the excess)


def test_an_endless_stream_stops_at_the_cap() -> None:
    stream = Chunks([b"a" * 1024] * 1_000_000)
    with pytest.raises(BodyRefused, match="exceeds the cap of 10240 bytes"):
        read_body(httpx.Response(200, stream=stream), cap=10 * 1024, cap_setting="x")
    assert stream.read == 11


def test_a_declared_length_over_the_cap_is_refused_before_reading() -> None:
    stream = Chunks([b"a"])
    with pytest.raises(BodyRefused, match="response of 2000 bytes exceeds the cap of 1000 bytes"):
        read_body(httpx.Response(200, headers={"Content-Length": "2000"}, stream=stream), cap=1000, cap_setting="x")
    assert stream.read == 0


@pytest.mark.parametrize(
    ("header", "match"),
    [
        ("gzip, gzip", "stacked content codings 'gzip, gzip' refused"),
        ("deflate", "content coding 'deflate' refused"),
        ("zstd", "content coding 'zstd' refused"),
        ("compress", "content coding 'compress' refused"),
    ],
)
def test_stacked_and_unknown_codings_are_refused_unread(header: str, match: str) -> None:
    stream = Chunks([b"x"])
    with pytest.raises(BodyRefused, match=match) as caught:
        read_body(httpx.Response(200, headers={"Content-Encoding": header}, stream=stream), cap=100, cap_setting="x")
    assert caught.value.reason == "encoding"
    assert stream.read == 0


def test_codings_are_read_as_go_reads_them() -> None:
    assert content_codings("") == []
    assert content_codings("identity") == []
    assert content_codings("GZIP") == ["gzip"]
    assert content_codings(" gzip , identity, br ") == ["gzip", "br"]


@pytest.mark.parametrize(
    ("chunks", "match"),
    [
        ([gzip.compress(b"x" * 1000)[:-10]], "gzip body ends before its stream does"),
        ([b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03not deflate at all"], "gzip body is corrupt"),
        ([gzip.compress(b"ok") + b"trailing garbage"], "gzip body is corrupt"),
    ],
)
def test_a_broken_gzip_body_is_corrupt(chunks: list[bytes], match: str) -> None:
    with pytest.raises(BodyRefused, match=match) as caught:
        read_body(streamed(chunks, "gzip"), cap=10_000, cap_setting="x")
    assert caught.value.reason == "corrupt"


def test_without_decoding_the_raw_bytes_are_counted() -> None:
    raw = gzip.compress(b"hello")
    assert read_body(streamed([raw], "gzip, gzip"), cap=100, cap_setting="x", decode=False) == raw


def test_an_empty_gzip_body_is_empty() -> None:
    assert read_body(streamed([], "gzip"), cap=100, cap_setting="x") == b""
