"""The fault matrix, runtime class: hostile invocations, stop signals and terminal escapes (issue 20).

Each case runs Outpost in a child process as a platform or operator does (the CLI, the Lambda entry module,
functions-framework's test client and real gunicorn server) and must pass `assert_bounded`: malformed bodies get a
400 naming the reason before any observation; SIGINT/SIGTERM end the run within `STOP_WITHIN` s with 130/143, no
child left and no ping even `LATE_PING_WINDOW` s later; no control character reaches stdout or stderr raw.
Only test-side helpers are imported, since the matrix also runs against an older tree.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from child_run import (
    ChildOutcome,
    alive,
    assert_bounded,
    assert_matrix,
    child_environment,
    each_case,
    run_child,
    run_python,
)
from hostile import Behaviour, HostileServer, Request, healthy, reply
from local_server import LocalServer, free_port
from unreachable import ENTRY_MODULE

from kit.kubeconfigs import exec_user, write_kubeconfig
from outpost_sandbox.pki import LocalhostTls
from samples.aws_events import FUNCTION_URL_EVENT, REST_V1_EVENT, SCHEDULED_EVENT

API_TOKEN = "sa-runtime-Hc4Tq8Wn2Lx6"
HEARTBEAT_TOKEN = "hb-runtime-Zp7Rk3Mv9Dy1"
SECRETS = (API_TOKEN, HEARTBEAT_TOKEN)
DEADLINE = 20.0
"""The check deadline: far beyond every signal, so a run that ends early ended because of the signal."""
SLOW = 3.0
"""How long the slow API server takes to answer each health request healthy (two requests a run)."""
STOP_WITHIN = 1.0
"""The most a run may take to end after SIGINT/SIGTERM."""
LATE_PING_WINDOW = 3.0
"""How long after the slow server's answers the receiver is watched for a ping that must not come."""
DEEP = 100_000
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Control characters that must never reach a terminal raw (newline and tab are allowed)."""
HOSTILE_LINE = "[-]etcd\x1b]0;owned\x07 failed: \x1b[2J\x9b31mred\x7f\x08\x08gone"
"""A readyz line that retitles the terminal (OSC), clears it (CSI), recolours it (C1 CSI) and backspaces."""


@dataclass
class Rig:
    """What a case arranges: servers, files, the heartbeat receiver, and what it saw."""

    tmp: Path
    pki: LocalhostTls
    receiver: LocalServer
    stack: ExitStack
    arrivals: list[float] = field(default_factory=list)
    """When (monotonic) the API server received each request."""
    pid_files: list[Path] = field(default_factory=list)
    started: float = 0.0

    def server(self, behaviour: Behaviour) -> str:
        recorded = self.arrivals

        def behave(conn: socket.socket, request: Request, stop: threading.Event) -> None:
            recorded.append(time.monotonic())
            behaviour(conn, request, stop)

        server = HostileServer(behave, self.pki.cert_file, self.pki.key_file)
        self.stack.enter_context(server)
        return server.url

    def config(self, server: str | None = None, *, auth: dict[str, Any] | None = None) -> Path:
        auth = auth or {
            "mode": "token",
            "server": server or f"https://127.0.0.1:{free_port()}",
            "token": "env:RT_API_TOKEN",
            "ca_file": str(self.pki.ca_file),
        }
        path = self.tmp / "runtime.yaml"
        path.write_text(
            yaml.safe_dump(
                {
                    "environment": "fault-matrix-runtime",
                    "cluster": {
                        "name": "hostile",
                        "auth": auth,
                        "connect_timeout_seconds": 2,
                        "read_timeout_seconds": DEADLINE,
                        "deadline_seconds": DEADLINE,
                    },
                    "heartbeat": {"timeout_seconds": 2, "retries": 0},
                    "checks": {
                        "apiserver-health": {"heartbeat": "env:RT_HEARTBEAT", "params": {"timeout_seconds": DEADLINE}}
                    },
                }
            )
        )
        return path

    def plugin_config(self) -> Path:
        """kubeconfig auth whose exec credential plugin records its pid and sleeps (never answers in time)."""
        pid_file = self.tmp / "plugin.pid"
        self.pid_files.append(pid_file)
        plugin = self.tmp / "plugin.sh"
        plugin.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 60\n")
        plugin.chmod(0o755)
        kubeconfig = write_kubeconfig(
            self.tmp / "kubeconfig", self.server(healthy()), exec_user(plugin), ca_file=self.pki.ca_file
        )
        return self.config(auth={"mode": "kubeconfig", "path": str(kubeconfig)})

    def environment(self, config: Path, **extra: str) -> dict[str, str]:
        return child_environment(
            {
                "OUTPOST_CONFIG": str(config),
                "RT_API_TOKEN": API_TOKEN,
                "RT_HEARTBEAT": f"{self.receiver.base_url}/api/heartbeat/{HEARTBEAT_TOKEN}",
                "WORKERS": "1",
                "THREADS": "2",
                **extra,
            }
        )


@dataclass(frozen=True)
class Case:
    name: str
    run: Callable[[Rig], ChildOutcome]
    verify: Callable[[Rig, ChildOutcome], None]
    budget: float = 10.0
    """Wall time allowed (assert_bounded adds its slack)."""


# -- behaviours -------------------------------------------------------------------------------------------------


def slow_healthy(delay: float = SLOW) -> Behaviour:
    """Healthy, `delay` seconds after each request: a signal sent meanwhile lands mid-run."""
    answer = healthy()

    def behave(conn: socket.socket, request: Request, stop: threading.Event) -> None:
        if not stop.wait(delay):
            answer(conn, request, stop)

    return behave


def hang_forever(_conn: socket.socket, _request: Request, stop: threading.Event) -> None:
    stop.wait(60)


def escapes(status: int = 503) -> Behaviour:
    body = f"[+]ping ok\n{HOSTILE_LINE}\n"
    return reply(status, body.encode(), {"Content-Type": "text/plain; charset=utf-8"})


# -- invocations ------------------------------------------------------------------------------------------------

LAMBDA = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("entry", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
event = json.loads(sys.stdin.read())
try:
    response = module.handler(event, None)
except Exception as error:
    response = {"raised": type(error).__name__}
print("RESPONSE " + json.dumps(response), flush=True)
"""

GCF_CLIENT = """
import json, sys
import functions_framework
app = functions_framework.create_app(target="http", source=sys.argv[1])
body = sys.stdin.buffer.read()
response = app.test_client().post("/", data=body, content_type="application/json")
print("RESPONSE " + json.dumps({"statusCode": response.status_code, "body": response.get_data(as_text=True)}),
      flush=True)
"""


def function_url(body: str | None = None, *, b64: bool = False, **fields: Any) -> dict[str, Any]:
    event = copy.deepcopy(FUNCTION_URL_EVENT)
    event["requestContext"]["http"]["method"] = "POST"
    if body is not None:
        event["body"] = base64.b64encode(body.encode()).decode() if b64 else body
        event["isBase64Encoded"] = b64
    event.update(fields)
    return event


def rest_v1(body: str | None = None, **fields: Any) -> dict[str, Any]:
    event = copy.deepcopy(REST_V1_EVENT)
    event["httpMethod"] = "POST"
    if body is not None:
        event["body"] = body
        event["isBase64Encoded"] = False
    event.update(fields)
    return event


def lambda_call(
    event: dict[str, Any], server: Callable[[Rig], str | None] = lambda _rig: None, **extra: str
) -> Callable[[Rig], ChildOutcome]:
    def run(rig: Rig) -> ChildOutcome:
        config = rig.config(server(rig))
        code = LAMBDA.replace("sys.argv[1]", repr(str(ENTRY_MODULE)))
        return run_python(
            code, env=rig.environment(config, **extra), stdin=json.dumps(event).encode(), timeout=DEADLINE + 30
        )

    return run


def gcf_call(body: bytes, server: Callable[[Rig], str | None] = lambda _rig: None) -> Callable[[Rig], ChildOutcome]:
    def run(rig: Rig) -> ChildOutcome:
        config = rig.config(server(rig))
        code = GCF_CLIENT.replace("sys.argv[1]", repr(str(ENTRY_MODULE)))
        return run_python(code, env=rig.environment(config), stdin=body, timeout=DEADLINE + 30)

    return run


def response_of(outcome: ChildOutcome) -> dict[str, Any]:
    lines = [line for line in outcome.stdout.splitlines() if line.startswith("RESPONSE ")]
    assert lines, f"no response; exit {outcome.returncode}; output: {outcome.output[-1500:]}"
    answer: dict[str, Any] = json.loads(lines[-1].removeprefix("RESPONSE "))
    return answer


def refused(reason: str) -> Callable[[Rig, ChildOutcome], None]:
    """HTTP 400 whose `error` matches `reason`, nothing observed, nothing pinged."""

    def verify(rig: Rig, outcome: ChildOutcome) -> None:
        response = response_of(outcome)
        assert response.get("statusCode") == 400, response
        body = response.get("body", "")
        assert body.startswith("{"), f"not a JSON answer: {body[:300]!r}"
        error = json.loads(body).get("error", "")
        assert re.search(reason, error), f"{error!r} does not match {reason!r}"
        assert rig.arrivals == [], "the check ran: a malformed request must be refused before any observation"
        assert rig.receiver.requests == []

    return verify


DEEP_ARRAY = "[" * DEEP + "]" * DEEP
DEEP_OBJECT = '{"report":' * DEEP + "false" + "}" * DEEP
TOO_DEEP = r"^request body nests deeper than 32 levels"
REPEATED = r"^option 'report' given more than once in the body$"


# -- signals ----------------------------------------------------------------------------------------------------


def cli_signal(signum: int, arrange: Callable[[Rig], Path], after: float, *extra: str) -> Callable[[Rig], ChildOutcome]:
    def run(rig: Rig) -> ChildOutcome:
        config = arrange(rig)
        args = ["run", *(extra or ("apiserver-health",)), "--config", str(config)]
        code = "import sys; from outpost.cli import main; sys.exit(main(sys.argv[1:]))"
        rig.started = time.monotonic()
        return run_child(
            [sys.executable, "-c", code, *args],
            env=rig.environment(config),
            timeout=DEADLINE + 30,
            after_start=after,
            send_signal=signum,
        )

    return run


def lambda_signal(
    signum: int, arrange: Callable[[Rig], Path], after: float, event: dict[str, Any] | None = None
) -> Callable[[Rig], ChildOutcome]:
    def run(rig: Rig) -> ChildOutcome:
        config = arrange(rig)
        code = LAMBDA.replace("sys.argv[1]", repr(str(ENTRY_MODULE)))
        rig.started = time.monotonic()
        return run_python(
            code,
            env=rig.environment(config, AWS_LAMBDA_RUNTIME_API="127.0.0.1:9001"),
            stdin=json.dumps(event or SCHEDULED_EVENT).encode(),
            timeout=DEADLINE + 30,
            after_start=after,
            send_signal=signum,
        )

    return run


def server_signal(signum: int, arrange: Callable[[Rig], Path], after: float) -> Callable[[Rig], ChildOutcome]:
    """functions-framework's real server (gunicorn master + worker); one GET in flight when the signal lands."""

    def run(rig: Rig) -> ChildOutcome:
        config = arrange(rig)
        port = free_port()
        argv = [
            sys.executable,
            "-m",
            "functions_framework",
            "--target",
            "http",
            "--source",
            str(ENTRY_MODULE),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ]

        def call() -> None:
            limit = time.monotonic() + after
            while time.monotonic() < limit:
                with suppress(httpx.HTTPError):
                    httpx.get(f"http://127.0.0.1:{port}/", timeout=DEADLINE + 10)
                    return
                time.sleep(0.05)

        caller = threading.Thread(target=call, daemon=True)
        caller.start()
        rig.started = time.monotonic()
        return run_child(
            argv, env=rig.environment(config), timeout=DEADLINE + 30, after_start=after, send_signal=signum
        )

    return run


def stopped(
    signum: int, after: float, *, code: int | None = None, plugin: bool = False, line: str | None = None
) -> Callable[[Rig, ChildOutcome], None]:
    """Ended within STOP_WITHIN of the signal, with `code`, no ping ever, no plugin left behind."""

    def verify(rig: Rig, outcome: ChildOutcome) -> None:
        assert outcome.seconds <= after + STOP_WITHIN, (
            f"ended {outcome.seconds - after:.2f} s after the signal (want <= {STOP_WITHIN:g} s); "
            f"output: {outcome.output[-1500:]}"
        )
        if plugin:
            pid = int(rig.pid_files[0].read_text().strip())
            limit = time.monotonic() + 0.5
            while alive(pid) and time.monotonic() < limit:
                time.sleep(0.02)
            assert not alive(pid), f"the exec plugin (pid {pid}) outlived the stopped run"
        else:
            assert rig.arrivals, "rig: the check never reached the API server"
            assert rig.arrivals[0] < rig.started + after, "rig: the signal landed before the run reached the server"
            # Past the moment the slow server answers healthy (both health requests), and a margin more.
            time.sleep(max(0.0, rig.started + after + 2 * SLOW + LATE_PING_WINDOW - time.monotonic()))
        assert rig.receiver.requests == [], "a heartbeat was sent after the stop"
        if code is not None:
            assert outcome.returncode == code, f"exit {outcome.returncode}, want {code}: {outcome.output[-1500:]}"
        if line is not None:
            assert re.search(line, outcome.output), f"{line!r} not in the output: {outcome.output[-1500:]}"

    return verify


SIGINT, SIGTERM = signal.SIGINT, signal.SIGTERM
CLI_AFTER = 1.5
"""The CLI reaches the API server within about 0.5 s of its start."""
SERVER_AFTER = 5.0
"""functions-framework's server takes 1-2 s to start and answer; its request is then in flight."""


STOPPED_CODE = {SIGINT: 130, SIGTERM: 143}
"""How the CLI and the Lambda entry exit when a signal stops them: 128 + the signal's number, as a shell reports it."""


def stop_case(
    name: str,
    launch: Callable[..., Callable[[Rig], ChildOutcome]],
    signum: signal.Signals,
    arrange: Callable[[Rig], Path],
    *args: Any,
    plugin: bool = False,
    line: str | None = None,
) -> Case:
    """A CLI or Lambda run (`cli_signal`, `lambda_signal`) sent `signum` `CLI_AFTER` s in: it must stop with
    `STOPPED_CODE`, as `stopped` judges."""
    return Case(
        name,
        launch(signum, arrange, CLI_AFTER, *args),
        stopped(signum, CLI_AFTER, code=STOPPED_CODE[signum], plugin=plugin, line=line),
    )


def _slow(rig: Rig) -> Path:
    return rig.config(rig.server(slow_healthy()))


def _hanging(rig: Rig) -> Path:
    return rig.config(rig.server(hang_forever))


def _plugin(rig: Rig) -> Path:
    return rig.plugin_config()


# -- escapes ----------------------------------------------------------------------------------------------------


def cli_escapes(*extra: str) -> Callable[[Rig], ChildOutcome]:
    def run(rig: Rig) -> ChildOutcome:
        config = rig.config(rig.server(escapes()))
        code = "import sys; from outpost.cli import main; sys.exit(main(sys.argv[1:]))"
        return run_child(
            [sys.executable, "-c", code, "run", "apiserver-health", "--config", str(config), *extra],
            env=rig.environment(config),
            timeout=DEADLINE + 30,
        )

    return run


def no_raw_controls(shown: str | None = None) -> Callable[[Rig, ChildOutcome], None]:
    def verify(_rig: Rig, outcome: ChildOutcome) -> None:
        for name, text in (("stdout", outcome.stdout), ("stderr", outcome.stderr)):
            raw = sorted({f"U+{ord(c):04X}" for c in RAW_CONTROL.findall(text)})
            assert not raw, f"raw control characters reached {name}: {', '.join(raw)}; {text[-800:]!r}"
        assert "etcd" in outcome.stdout, f"the run did not report the server's line: {outcome.output[-1500:]}"
        if shown is not None:
            assert shown in outcome.stdout, f"{shown!r} not shown: {outcome.stdout[-1500:]!r}"

    return verify


CASES = [
    # -- invocations: depth, repeats, types, size ------------------------------------------------------------------
    Case(
        "lambda function URL: body nested 100,000 levels (array)",
        lambda_call(function_url(DEEP_ARRAY)),
        refused(TOO_DEEP),
    ),
    Case(
        "lambda function URL: base64 body nested 100,000 levels (object)",
        lambda_call(function_url(DEEP_OBJECT, b64=True)),
        refused(TOO_DEEP),
    ),
    Case("lambda API Gateway v1: body nested 100,000 levels", lambda_call(rest_v1(DEEP_OBJECT)), refused(TOO_DEEP)),
    Case(
        "lambda function URL: report repeated",
        lambda_call(function_url('{"report": false, "report": true}')),
        refused(REPEATED),
    ),
    Case(
        "lambda API Gateway v1: report repeated",
        lambda_call(rest_v1('{"report": true, "report": false}')),
        refused(REPEATED),
    ),
    Case(
        "lambda function URL: isBase64Encoded is the string 'false'",
        lambda_call(function_url('{"report": false}', isBase64Encoded="false")),
        refused(r"^malformed event: isBase64Encoded: Input should be a valid boolean$"),
    ),
    Case(
        "lambda API Gateway v1: isBase64Encoded is the number 0",
        lambda_call(rest_v1('{"report": false}', isBase64Encoded=0)),
        refused(r"^malformed event: isBase64Encoded: Input should be a valid boolean$"),
    ),
    Case("functions-framework: body nested 100,000 levels", gcf_call(DEEP_ARRAY.encode()), refused(TOO_DEEP)),
    Case("functions-framework: report repeated", gcf_call(b'{"report": false, "report": true}'), refused(REPEATED)),
    Case(
        "functions-framework: 1 MiB body",
        gcf_call(b'{"report": false}' + b" " * (1 << 20)),
        refused(r"^request body is larger than 65536 bytes"),
    ),
    # -- signals ---------------------------------------------------------------------------------------------------
    stop_case(
        "CLI: SIGINT while the API server hangs", cli_signal, SIGINT, _hanging, line=r"outpost run: stopped by SIGINT"
    ),
    stop_case("CLI: SIGINT while the API server answers healthy slowly (no ping after)", cli_signal, SIGINT, _slow),
    stop_case(
        "CLI --all: SIGINT while the API server answers healthy slowly (no ping after)",
        cli_signal,
        SIGINT,
        _slow,
        "--all",
    ),
    stop_case(
        "CLI: SIGTERM while the API server answers healthy slowly",
        cli_signal,
        SIGTERM,
        _slow,
        line=r"outpost run: stopped by SIGTERM",
    ),
    stop_case("CLI: SIGINT while the exec plugin sleeps", cli_signal, SIGINT, _plugin, plugin=True),
    stop_case("CLI: SIGTERM while the exec plugin sleeps", cli_signal, SIGTERM, _plugin, plugin=True),
    stop_case(
        "lambda: SIGTERM during a scheduled run while the exec plugin sleeps",
        lambda_signal,
        SIGTERM,
        _plugin,
        plugin=True,
    ),
    stop_case(
        "lambda: SIGTERM during a function URL run against a slow healthy server",
        lambda_signal,
        SIGTERM,
        _slow,
        function_url(),
        line=r'"outcome":"stopped","signal":"SIGTERM"',
    ),
    Case(
        "functions-framework server: SIGTERM during a run against a slow healthy server",
        server_signal(SIGTERM, _slow, SERVER_AFTER),
        stopped(SIGTERM, SERVER_AFTER),
        budget=SERVER_AFTER + 2,
    ),
    Case(
        "functions-framework server: SIGTERM while the exec plugin sleeps",
        server_signal(SIGTERM, _plugin, SERVER_AFTER),
        stopped(SIGTERM, SERVER_AFTER, plugin=True),
        budget=SERVER_AFTER + 2,
    ),
    # -- escapes ---------------------------------------------------------------------------------------------------
    Case(
        "CLI table: escape sequences in a readyz line",
        cli_escapes(),
        no_raw_controls(r"\x1b[2J\x9b31mred\x7f\x08\x08gone"),
    ),
    Case(
        "lambda log line: C1 CSI and DEL from the server",
        lambda_call(function_url(), server=lambda rig: rig.server(escapes())),
        no_raw_controls(),
    ),
    Case(
        "functions-framework log line: C1 CSI and DEL from the server",
        gcf_call(b"", server=lambda rig: rig.server(escapes())),
        no_raw_controls(),
    ),
]


@pytest.fixture
def rig(tmp_path: Path, pki: LocalhostTls) -> Iterator[Rig]:
    receiver = LocalServer()
    receiver.start()
    with ExitStack() as stack:
        rig = Rig(tmp_path, pki, receiver, stack)
        yield rig
    receiver.stop()
    for pid_file in rig.pid_files:  # a plugin a failed case left behind must not outlive the test
        with suppress(OSError, ValueError):
            os.kill(int(pid_file.read_text().strip()), signal.SIGKILL)


def test_the_matrix_has_enough_cases() -> None:
    assert_matrix(CASES, 15)


@each_case(CASES)
def test_runtime_fault(case: Case, rig: Rig) -> None:
    outcome = case.run(rig)
    assert_bounded(outcome, case.budget, SECRETS)
    case.verify(rig, outcome)
