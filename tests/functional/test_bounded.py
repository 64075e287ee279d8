"""`outpost.bounded` on its own: a deadline-bounded httpx transport against real loopback sockets."""

from __future__ import annotations

import time

import httpx
import pytest
from hostile import HostileServer, trickle_body
from local_server import LocalServer

from outpost.bounded import Deadline, bounded_transport


def test_a_host_name_is_resolved_and_connected(receiver: LocalServer) -> None:
    url = receiver.base_url.replace("127.0.0.1", "localhost")
    with httpx.Client(transport=bounded_transport(Deadline(5))) as client:
        assert client.get(url + "/x").status_code == 200


def test_a_trickling_body_ends_at_the_deadline_whatever_the_read_timeout() -> None:
    with (
        HostileServer(trickle_body(0.05)) as server,
        httpx.Client(transport=bounded_transport(Deadline(0.5)), timeout=30) as client,
    ):
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout, match=r"timed out|deadline of 0\.5 s ran out"):
            client.get(server.url).read()
    assert time.monotonic() - started < 1.0


def test_nothing_is_attempted_once_the_deadline_has_passed(receiver: LocalServer) -> None:
    deadline = Deadline(0.0)
    with (
        httpx.Client(transport=bounded_transport(deadline)) as client,
        pytest.raises(httpx.ConnectTimeout, match="before the DNS lookup"),
    ):
        client.get(receiver.base_url)
    assert receiver.requests == []
