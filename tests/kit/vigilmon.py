"""Vigilmon's maintenance API scripted behind the real client (`outpost.heartbeat.VigilmonClient` over
httpx.MockTransport), for the unit tests of everything that opens or ends windows: `outpost maintenance`, the
inhibitor's hold-back and its recurring windows. Every call is recorded; `script` says what Vigilmon answers."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx

from outpost.heartbeat import VigilmonClient

API_KEY = "vigilmon-key-never-printed"

Script = Callable[[str, int], int]
"""(monitor_id, duration_minutes) -> the HTTP status Vigilmon answers (0: the connection drops)."""


class _Key:
    def reveal(self) -> str:
        return API_KEY


class ScriptedVigilmon:
    """Vigilmon behind the real client: every maintenance call recorded, answered by `script`; `clients` counts the
    clients connected."""

    def __init__(self, script: Script = lambda _monitor, _minutes: 200) -> None:
        self.script = script
        self.calls: list[tuple[str, int]] = []
        self.clients = 0

    def handle(self, request: httpx.Request) -> httpx.Response:
        assert request.headers["Authorization"] == f"Bearer {API_KEY}"
        body = json.loads(request.content)
        call = (body["monitor_id"], body["duration_minutes"])
        self.calls.append(call)
        status = self.script(*call)
        if status == 0:
            raise httpx.ConnectError("connection reset", request=request)
        return httpx.Response(status, json={})

    def connect(self) -> VigilmonClient:
        self.clients += 1
        return VigilmonClient(
            "https://vigilmon.example.test/api", _Key(), retries=0, transport=httpx.MockTransport(self.handle)
        )
