"""The Cloud Functions target of `apiserver-health`, built by functions-framework's own `create_app` and
served over real HTTP by werkzeug on a loopback port.

The configured API server is a closed loopback port: a real `error` result, which must answer 503 and
never ping. Healthy and failed results through the same target, against the sandbox cluster, are in
tests/e2e/test_runtimes_e2e.py.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import functions_framework
import httpx
import pytest
from unreachable import ENTRY_MODULE, HEARTBEAT_TOKEN
from werkzeug.serving import make_server

from outpost.errors import ConfigError


@pytest.fixture
def function_url(unreachable_cluster_config: Path) -> Iterator[str]:
    app = functions_framework.create_app(target="http", source=str(ENTRY_MODULE))  # type: ignore[no-untyped-call]
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    thread.join(5)


def test_on_demand_get_answers_503_and_does_not_ping(function_url, receiver, capsys) -> None:  # type: ignore[no-untyped-def]
    response = httpx.get(function_url, timeout=30)
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["check"] == "apiserver-health"
    assert body["status"] == "error"
    assert body["reported"] is False
    assert "connection refused" in body["summary"]
    assert receiver.requests == []
    out = capsys.readouterr().out
    run_lines = [json.loads(line) for line in out.splitlines() if line.startswith("{") and '"status"' in line]
    assert [(line["check"], line["status"], line["severity"]) for line in run_lines] == [
        ("apiserver-health", "error", "ERROR")
    ]
    assert HEARTBEAT_TOKEN not in out


@pytest.mark.parametrize(
    ("content_type", "body", "counted"),
    [
        ("application/octet-stream", b'{"report": true}', True),  # Cloud Scheduler's default content type
        ("application/json", b'{"report": false}', False),  # a dry run counts towards no alert policy
        ("application/json", b"", True),
    ],
)
def test_scheduler_post_runs_the_check(function_url, receiver, capsys, content_type, body, counted) -> None:  # type: ignore[no-untyped-def]
    response = httpx.post(
        function_url,
        content=body,
        headers={"Content-Type": content_type, "User-Agent": "Google-Cloud-Scheduler"},
        timeout=30,
    )
    assert response.status_code == 503
    assert response.json()["status"] == "error"
    assert receiver.requests == []
    out = capsys.readouterr().out
    (line,) = [json.loads(text) for text in out.splitlines() if text.startswith("{") and '"status"' in text]
    # What infra/gcp's log-based metric selects on, and the id that finds this run from its answer.
    assert line["counted"] is counted
    assert line["run_id"] == response.json()["run_id"]
    assert line["cluster"]
    assert "_aws" not in line


@pytest.mark.parametrize(
    ("method", "query", "body", "reason"),
    [
        ("GET", "?report=perhaps", b"", "query parameter 'report' must be true or false"),
        ("GET", "?check=koordlet-coverage", b"", "unknown query parameter 'check' (allowed: report)"),
        ("POST", "", b"{not json", "request body is not valid JSON"),
        ("POST", "", b'"report"', 'request body must be a JSON object such as {"report": false}'),
        ("POST", "", b'{"report": 0}', "option 'report': Input should be a valid boolean"),
        (
            "POST",
            "",
            b"[" * 100_000,
            'request body nests deeper than 32 levels (the options are one flat object: {"report": false})',
        ),
        (
            "POST",
            "",
            b'{"report":' * 40 + b"true" + b"}" * 40,
            'request body nests deeper than 32 levels (the options are one flat object: {"report": false})',
        ),
        ("POST", "", b'{"report": false, "report": true}', "option 'report' given more than once in the body"),
        (
            "POST",
            "",
            b'{"report": false}' + b" " * 100_000,
            'request body is larger than 65536 bytes (the options are tiny: {"report": false})',
        ),
    ],
)
def test_malformed_requests_answer_400(function_url, receiver, method, query, body, reason) -> None:  # type: ignore[no-untyped-def]
    response = httpx.request(method, function_url + query, content=body, timeout=30)
    assert response.status_code == 400
    assert response.json() == {"error": reason}
    assert receiver.requests == []


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH"])
def test_other_methods_answer_405(function_url, receiver, method) -> None:  # type: ignore[no-untyped-def]
    response = httpx.request(method, function_url, timeout=30)
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, POST"
    assert response.json() == {"error": f"method {method} not allowed (use GET or POST)"}
    assert receiver.requests == []


def test_bad_configuration_refuses_to_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("environment: test\ncluster: {name: x, auth: {mode: token}}\n")
    monkeypatch.setenv("OUTPOST_CONFIG", str(bad))
    with pytest.raises(ConfigError) as raised:
        functions_framework.create_app(target="http", source=str(ENTRY_MODULE))  # type: ignore[no-untyped-call]
    assert "cluster.auth.token.server: Field required" in str(raised.value)
    assert "cluster.auth.token.token: Field required" in str(raised.value)


def test_gunicorn_workers_are_armed_to_stop_at_signals(function_url: str) -> None:
    """Loaded by functions-framework, the target wraps gunicorn's worker signal set-up (forked workers inherit it).

    Its effect, a worker that ends at once at SIGTERM without pinging, is proven against the real server in
    tests/functional/test_fault_matrix_runtime.py.
    """
    import importlib

    base = importlib.import_module("gunicorn.workers.base")
    assert getattr(base.Worker.init_signals, "_outpost_stop", False) is True
