"""The fault matrix: Outpost against hostile local API servers, credential plugins, secret stores and
heartbeat receivers, table-driven.

Every case runs the real `run_check` (or CLI / runtime adapter) against real sockets on 127.0.0.1 and asserts the
whole contract at once: `error` (or `failed` where the API server said unhealthy) with the cause named, within
the deadline (plus the heartbeat budget) and a margin, no ping, and no credential in the result, the log line,
stdout, stderr or any log record of any logger (caplog at DEBUG).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from child_run import alive, assert_matrix, each_case
from hostile import (
    Behaviour,
    HostileServer,
    close_at_once,
    echo_credential,
    garbage,
    gzip_bomb,
    hang,
    healthy,
    huge_chunked,
    huge_declared,
    reply,
    silent_tcp,
    trickle_body,
    trickle_headers,
    truncated,
)
from local_server import LocalServer, free_port

from kit.kubeconfigs import exec_user, write_kubeconfig
from outpost import cli
from outpost.config import Settings, parse_settings
from outpost.result import Result, Status
from outpost.runner import run_check
from outpost_sandbox.pki import LocalhostTls, localhost_tls

API_TOKEN = "sa-Tk9fQ2mXz7Lp0RwNd4Vb"
KUBECONFIG_TOKEN = "kc-static-Hq3Zt8Lm1Pv6Wx"
EXEC_TOKEN = "exec-issued-Jr5Ns2Kd9Qf4"
STDERR_SECRET = "plugin-stderr-Mv7Bx1Zc3"
HEARTBEAT_TOKEN = "hb_Fm4Rt8Yq2Wz6Lk0P"
PROVIDER_BODY_SECRET = "provider-body-Xw2Qe7Rt5"
ALL_SECRETS = (API_TOKEN, KUBECONFIG_TOKEN, EXEC_TOKEN, STDERR_SECRET, HEARTBEAT_TOKEN, PROVIDER_BODY_SECRET)

DEADLINE = 1.5
"""The check deadline of every case (short, so the matrix runs quickly; the mechanism does not care)."""
MARGIN = 1.0
"""What a run may take beyond its budget: process scheduling, TLS set-up, killing a plugin."""
HEARTBEAT_TIMEOUT, HEARTBEAT_RETRIES, HEARTBEAT_BACKOFF = 0.5, 1, 0.1
HEARTBEAT_BUDGET = HEARTBEAT_TIMEOUT * (HEARTBEAT_RETRIES + 1) + HEARTBEAT_BACKOFF + 1.0  # worst_case_seconds
MAX_RESPONSE_BYTES = 256 * 1024


@pytest.fixture(scope="module")
def stranger_pki(tmp_path_factory: pytest.TempPathFactory) -> LocalhostTls:
    """A second CA the client does not trust (a man in the middle, or the wrong cluster)."""
    return localhost_tls(tmp_path_factory.mktemp("stranger"), "stranger")


@dataclass
class Env:
    """What a case may arrange: servers, kubeconfigs, plugins, environment variables."""

    tmp: Path
    pki: LocalhostTls
    stranger_pki: LocalhostTls
    monkeypatch: pytest.MonkeyPatch
    heartbeat: LocalServer
    request: pytest.FixtureRequest
    stack: ExitStack
    servers: list[HostileServer] = field(default_factory=list)
    pid_files: list[Path] = field(default_factory=list)

    def server(self, behaviour: Behaviour, *, tls: bool = True, stranger: bool = False) -> HostileServer:
        pki = self.stranger_pki if stranger else self.pki
        server = HostileServer(behaviour, pki.cert_file if tls else None, pki.key_file if tls else None)
        self.stack.enter_context(server)
        self.servers.append(server)
        return server

    def black_hole(self) -> str:
        listener, port = silent_tcp()
        self.stack.callback(listener.close)
        return f"https://127.0.0.1:{port}"

    def heartbeat_url(self, url: str | None = None) -> None:
        self.monkeypatch.setenv("FM_HEARTBEAT", url or f"{self.heartbeat.base_url}/api/heartbeat/{HEARTBEAT_TOKEN}")

    def settings(self, auth: dict[str, Any], **cluster: Any) -> Settings:
        self.monkeypatch.setenv("FM_API_TOKEN", API_TOKEN)
        if "FM_HEARTBEAT" not in os.environ:
            self.heartbeat_url()
        return parse_settings(
            {
                "environment": "fault-matrix",
                "cluster": {
                    "name": "hostile",
                    "auth": auth,
                    "connect_timeout_seconds": 1,
                    "read_timeout_seconds": 1,
                    "deadline_seconds": DEADLINE,
                    "max_response_bytes": MAX_RESPONSE_BYTES,
                    **cluster,
                },
                "heartbeat": {
                    "timeout_seconds": HEARTBEAT_TIMEOUT,
                    "retries": HEARTBEAT_RETRIES,
                    "backoff_seconds": HEARTBEAT_BACKOFF,
                },
                "checks": {"apiserver-health": {"heartbeat": "env:FM_HEARTBEAT"}},
            }
        )

    def token(self, server: str, token: str = "env:FM_API_TOKEN", **cluster: Any) -> Settings:  # noqa: S107
        return self.settings(
            {"mode": "token", "server": server, "token": token, "ca_file": str(self.pki.ca_file)}, **cluster
        )

    def plugin(self, script: str, name: str = "plugin") -> str:
        path = self.tmp / f"{name}.sh"
        path.write_text("#!/bin/sh\n" + script)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
        return str(path)

    def pid_file(self, name: str) -> Path:
        path = self.tmp / name
        self.pid_files.append(path)
        return path

    def kubeconfig(
        self, server: str, user: dict[str, Any] | None, *, cluster: dict[str, Any] | None = None, context: str = "c"
    ) -> Settings:
        path = write_kubeconfig(
            self.tmp / "kubeconfig", server, user, ca_file=self.pki.ca_file, context=context, **(cluster or {})
        )
        return self.settings({"mode": "kubeconfig", "path": str(path)})


def exec_credential(token: str) -> str:
    return json.dumps(
        {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": token}}
    )


def healthy_token_settings(env: Env) -> Settings:
    return env.token(env.server(healthy()).url)


@dataclass(frozen=True)
class Case:
    name: str
    arrange: Callable[[Env], Settings]
    cause: str
    """A regex the summary must match: the cause, named."""
    statuses: frozenset[Status] = frozenset({Status.ERROR})
    budget: float = DEADLINE
    heartbeat_contacted: bool = False
    """True for heartbeat faults: the receiver is tried (and fails); otherwise it must see no request."""
    after: Callable[[Env, Result], None] | None = None


def _status(code: int, body: str = "", content_type: str = "text/plain") -> Callable[[Env], Settings]:
    return lambda env: env.token(env.server(reply(code, body, {"Content-Type": content_type})).url)


def _served(behaviour: Callable[[], Behaviour], **cluster: Any) -> Callable[[Env], Settings]:
    return lambda env: env.token(env.server(behaviour()).url, **cluster)


def _nothing_sent_to_plain_http(env: Env, _result: Result) -> None:
    assert env.servers[0].requests == [], "a request (with its credential) went to a plain-http server"


def _plugins_are_gone(env: Env, _result: Result) -> None:
    deadline = time.monotonic() + 2
    for pid_file in env.pid_files:
        pid = int(pid_file.read_text().strip())
        while time.monotonic() < deadline and alive(pid):
            time.sleep(0.05)
        assert not alive(pid), f"credential plugin process {pid} outlived the run"


def _exec_plugin(env: Env, script: str, **exec_fields: Any) -> Settings:
    """A kubeconfig for a healthy API server whose user's credential comes from `script`, run as an exec plugin."""
    return env.kubeconfig(env.server(healthy()).url, exec_user(env.plugin(script), **exec_fields))


def _hanging_plugin(env: Env) -> Settings:
    return _exec_plugin(env, f"echo $$ > {env.pid_file('plugin.pid')}\nexec sleep 30\n")


def _plugin_with_grandchild(env: Env) -> Settings:
    parent, child = env.pid_file("parent.pid"), env.pid_file("child.pid")
    return _exec_plugin(env, f"echo $$ > {parent}\nsleep 30 &\necho $! > {child}\nwait\n")


def _gke_refresh_fails(env: Env) -> Settings:
    key = env.request.getfixturevalue("service_account_key_pem")
    token_endpoint = LocalServer(
        script=[
            (
                400,
                {"Content-Type": "application/json"},
                json.dumps(
                    {"error": "invalid_grant", "error_description": f"account disabled {PROVIDER_BODY_SECRET}"}
                ).encode(),
            )
        ]
    )
    token_endpoint.start()
    env.stack.callback(token_endpoint.stop)
    adc = env.tmp / "adc.json"
    adc.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": "p",
                "private_key_id": "k",
                "private_key": key,
                "client_email": "probe@p.iam.gserviceaccount.com",
                "client_id": "1",
                "token_uri": f"{token_endpoint.base_url}/token",
            }
        )
    )
    env.monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    ca = base64.b64encode(env.pki.ca_file.read_bytes()).decode()
    return env.settings({"mode": "gke", "server": env.server(healthy()).url, "ca_data": ca})


def _eks_sts_unreachable(env: Env) -> Settings:
    env.monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    env.monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    env.monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    ca = base64.b64encode(env.pki.ca_file.read_bytes()).decode()
    return env.settings(
        {
            "mode": "eks",
            "cluster_name": "prod",
            "region": "eu-west-1",
            "server": env.server(healthy()).url,
            "ca_data": ca,
            "role_arn": "arn:aws:iam::123456789012:role/outpost-probe",
        }
    )


def _ssm_parameter_missing(env: Env) -> Settings:
    env.request.getfixturevalue("moto_endpoint")
    return env.token(env.server(healthy()).url, token="ssm:/outpost/fault-matrix/missing-token")


def _gcpsm_secret_missing(env: Env) -> Settings:
    env.request.getfixturevalue("gcp_secret_manager")
    return env.token(env.server(healthy()).url, token="gcpsm:projects/outpost-test/secrets/missing")


def _heartbeat(script: list[Any] | None = None, url: Callable[[Env], str] | None = None) -> Callable[[Env], Settings]:
    def arrange(env: Env) -> Settings:
        if script is not None:
            env.heartbeat.script = script
        env.heartbeat_url(url(env) if url else None)
        return healthy_token_settings(env)

    return arrange


def heartbeat_case(name: str, arrange: Callable[[Env], Settings], cause: str) -> Case:
    """A heartbeat fault: the observation is healthy, the receiver is tried and fails, within its own budget."""
    return Case(name, arrange, cause, budget=DEADLINE + HEARTBEAT_BUDGET, heartbeat_contacted=True)


CASES = [
    # -- the API server's network path --------------------------------------------------------------
    Case("refused", lambda env: env.token(f"https://127.0.0.1:{free_port()}"), r"connection refused"),
    Case(
        "black-holed after TCP connect",
        lambda env: env.token(env.black_hole()),
        r"connect timed out after 1\.0 s|deadline of 1\.5 s ran out \(while connecting\)",
    ),
    Case("wrong CA", lambda env: env.token(env.server(healthy(), stranger=True).url), r"TLS verification failed"),
    Case(
        "DNS name that does not resolve",
        lambda env: env.token("https://outpost-fault-matrix.invalid:6443"),
        r"DNS lookup|deadline of 1\.5 s ran out",
    ),
    Case("closes the connection at once", _served(close_at_once), r"RemoteProtocolError|ReadError|disconnected"),
    Case("garbage instead of HTTP", _served(garbage), r"RemoteProtocolError|ProtocolError"),
    Case("truncated body", _served(truncated), r"RemoteProtocolError|incomplete|peer closed"),
    Case(
        "hangs after the request",
        _served(hang, read_timeout_seconds=30),
        r"deadline of 1\.5 s ran out \(while waiting for the answer\)",
    ),
    Case("hangs within the read timeout", _served(hang), r"read timed out after 1\.0 s|deadline"),
    Case(
        "trickles the headers a byte at a time",
        _served(trickle_headers, read_timeout_seconds=30),
        r"deadline of 1\.5 s ran out",
    ),
    Case(
        "trickles the body a byte at a time",
        _served(trickle_body, read_timeout_seconds=30),
        r"deadline of 1\.5 s ran out",
    ),
    Case(
        "stalls between bytes for less than the read timeout",
        _served(lambda: trickle_body(0.4)),
        r"deadline of 1\.5 s ran out",
    ),
    # -- sizes ---------------------------------------------------------------------------------------
    Case("declares a 200 MB body", _served(huge_declared), rf"GET /livez .*exceeds the cap of {MAX_RESPONSE_BYTES}"),
    Case(
        "streams an endless chunked body",
        _served(huge_chunked),
        rf"GET /livez .*exceeds the cap of {MAX_RESPONSE_BYTES}",
    ),
    Case("gzip bomb", _served(gzip_bomb), rf"GET /livez .*exceeds the cap of {MAX_RESPONSE_BYTES}"),
    # -- statuses and bodies -------------------------------------------------------------------------
    Case("401", _status(401, '{"kind":"Status","message":"Unauthorized"}', "application/json"), r"HTTP 401"),
    Case("403 echoing the token", _served(lambda: echo_credential(403)), r"HTTP 403"),
    Case(
        "500 HTML page echoing the token",
        _served(lambda: echo_credential(500, html=True)),
        r"/livez 500",
        statuses=frozenset({Status.FAILED}),
    ),
    Case(
        "503 with failing readyz lines",
        _status(503, "[+]ping ok\n[-]etcd failed: reason withheld\n"),
        r"apiserver unhealthy: .*etcd",
        statuses=frozenset({Status.FAILED}),
    ),
    Case(
        "502 from a load balancer",
        _status(502, "<html>Bad Gateway</html>", "text/html"),
        r"/livez 502",
        statuses=frozenset({Status.FAILED}),
    ),
    Case("429 rate limited", _status(429, "slow down"), r"HTTP 429 rate limited, health not observed"),
    Case(
        "302 redirect",
        lambda env: env.token(env.server(reply(302, "", {"Location": "https://elsewhere/"})).url),
        r"HTTP 302 redirect \(not followed\)",
    ),
    Case("301 redirect", _status(301), r"HTTP 301 redirect"),
    Case(
        "200 HTML page",
        _status(200, "<html><body>Welcome to nginx</body></html>", "text/html"),
        r"without a verbose health report",
    ),
    Case("200 empty body", _status(200, ""), r"without a verbose health report"),
    Case(
        "200 with an unknown charset",
        _status(200, "<p>caf\xe9</p>", "text/html; charset=no-such-charset"),
        r"without a verbose health report",
    ),
    Case(
        "200 binary garbage body",
        _status(200, "\x00\x01\x02\xff", "application/octet-stream"),
        r"without a verbose health report",
    ),
    # -- credentials: kubeconfig and exec plugins ----------------------------------------------------------
    Case(
        "kubeconfig server is plain http",
        lambda env: env.kubeconfig(env.server(healthy(), tls=False).url, {"token": KUBECONFIG_TOKEN}),
        r"not https://",
        after=_nothing_sent_to_plain_http,
    ),
    Case(
        "kubeconfig insecure-skip-tls-verify",
        lambda env: env.kubeconfig(
            env.server(healthy()).url, {"token": KUBECONFIG_TOKEN}, cluster={"insecure-skip-tls-verify": True}
        ),
        r"insecure-skip-tls-verify",
    ),
    Case(
        "kubeconfig context missing",
        lambda env: env.kubeconfig(env.server(healthy()).url, {"token": KUBECONFIG_TOKEN}, context="nowhere"),
        r"context nowhere is not defined",
    ),
    Case(
        "kubeconfig static token echoed in a 500 page",
        lambda env: env.kubeconfig(env.server(echo_credential(500, html=True)).url, {"token": KUBECONFIG_TOKEN}),
        r"/livez 500",
        statuses=frozenset({Status.FAILED}),
    ),
    Case(
        "anonymous kubeconfig user gets 401",
        lambda env: env.kubeconfig(env.server(reply(401, '{"message":"Unauthorized"}')).url, None),
        r"HTTP 401",
    ),
    Case(
        "kubeconfig legacy auth-provider",
        lambda env: env.kubeconfig(env.server(healthy()).url, {"auth-provider": {"name": "gcp"}}),
        r"legacy auth-provider",
    ),
    Case(
        "exec plugin hangs (killed at the deadline)",
        _hanging_plugin,
        r"no credentials within the deadline of 1\.5 s \(the plugin was killed\)",
        after=_plugins_are_gone,
    ),
    Case(
        "exec plugin's child holds the pipes",
        _plugin_with_grandchild,
        r"no credentials within the deadline of 1\.5 s",
        after=_plugins_are_gone,
    ),
    Case(
        "exec plugin fails with a secret on stderr",
        lambda env: _exec_plugin(env, f"echo 'refresh token {STDERR_SECRET} expired' >&2\nexit 3\n"),
        r"exited with status 3",
    ),
    Case(
        "exec plugin prints garbage",
        lambda env: _exec_plugin(env, "echo 'Please log in at https://sso.example/'\n"),
        r"not an ExecCredential",
    ),
    Case(
        "exec plugin answers another apiVersion",
        lambda env: _exec_plugin(env, f"echo '{exec_credential(EXEC_TOKEN).replace('/v1', '/v1beta1')}'\n"),
        r"apiVersion does not match",
    ),
    Case(
        "exec plugin gives no credentials",
        lambda env: _exec_plugin(
            env, 'echo \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{}}\'\n'
        ),
        r"produced no credentials",
    ),
    Case(
        "exec plugin not installed",
        lambda env: env.kubeconfig(
            env.server(healthy()).url, exec_user("/nonexistent/kubelogin", installHint="install kubelogin")
        ),
        r"cannot start kubelogin",
    ),
    Case(
        "exec plugin wants a terminal",
        lambda env: _exec_plugin(env, "exit 0\n", interactiveMode="Always"),
        r"interactiveMode Always needs a terminal",
    ),
    Case(
        "exec plugin token echoed in a 403",
        lambda env: env.kubeconfig(
            env.server(echo_credential(403)).url, exec_user(env.plugin(f"echo '{exec_credential(EXEC_TOKEN)}'\n"))
        ),
        r"HTTP 403",
    ),
    Case(
        "GKE token refresh fails", _gke_refresh_fails, r"gke credentials: access token refresh failed \(RefreshError\)"
    ),
    Case(
        "EKS role cannot be assumed", _eks_sts_unreachable, r"eks credentials for cluster prod: token could not be made"
    ),
    # -- secret stores ---------------------------------------------------------------------------------
    Case(
        "token secret not set",
        lambda env: env.token(env.server(healthy()).url, token="env:FM_UNSET_TOKEN"),
        r"secret env:FM_UNSET_TOKEN: environment variable is not set",
    ),
    Case("token secret missing in SSM", _ssm_parameter_missing, r"ssm get_parameter failed \(ParameterNotFound\)"),
    Case("token secret missing in Secret Manager", _gcpsm_secret_missing, r"HTTP 404 \(NOT_FOUND\)"),
    # -- the heartbeat ---------------------------------------------------------------------------------
    heartbeat_case(
        "heartbeat down",
        _heartbeat(url=lambda env: f"http://127.0.0.1:{free_port()}/hb/{HEARTBEAT_TOKEN}"),
        r"heartbeat was not delivered: .*connection failed",
    ),
    heartbeat_case("heartbeat 404", _heartbeat([(404, {}, b"no such heartbeat")]), r"not delivered: .*HTTP 404"),
    heartbeat_case("heartbeat 500", _heartbeat([(500, {}, b"oops")]), r"not delivered: .*HTTP 500 \(gave up after 2"),
    heartbeat_case(
        "heartbeat redirect", _heartbeat([(302, {"Location": "https://elsewhere/"}, b"")]), r"not delivered: .*HTTP 302"
    ),
    heartbeat_case("heartbeat hangs", _heartbeat(["hang"]), r"not delivered: .*(timed out|budget)"),
    heartbeat_case(
        "heartbeat URL malformed",
        _heartbeat(url=lambda env: f"https://exa mple.invalid:99999/{HEARTBEAT_TOKEN}"),
        r"not delivered: .*not a valid http\(s\) URL",
    ),
    heartbeat_case(
        "heartbeat URL is plain http to a remote host",
        _heartbeat(url=lambda env: f"http://vigilmon.invalid/api/heartbeat/{HEARTBEAT_TOKEN}"),
        r"not delivered: .*must be https://",
    ),
    heartbeat_case("heartbeat secret not set", _heartbeat(url=lambda env: ""), r"not delivered: .*FM_HEARTBEAT"),
]


@pytest.fixture
def env(
    tmp_path: Path,
    pki: LocalhostTls,
    stranger_pki: LocalhostTls,
    monkeypatch: pytest.MonkeyPatch,
    receiver: LocalServer,
    request: pytest.FixtureRequest,
) -> Iterator[Env]:
    monkeypatch.delenv("FM_HEARTBEAT", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    with ExitStack() as stack:
        yield Env(tmp_path, pki, stranger_pki, monkeypatch, receiver, request, stack)


def assert_no_credential(*texts: str) -> None:
    for text in texts:
        for secret in ALL_SECRETS:
            assert secret not in text, f"a credential ({secret[:6]}...) reached an output"


def test_the_matrix_has_enough_cases() -> None:
    assert_matrix(CASES, 40)


@each_case(CASES)
def test_fault(case: Case, env: Env, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    settings = case.arrange(env)
    if case.name == "heartbeat secret not set":
        env.monkeypatch.delenv("FM_HEARTBEAT")
    started = time.monotonic()
    result = run_check(settings, "apiserver-health", log=True)
    elapsed = time.monotonic() - started
    out = capsys.readouterr()

    assert result.status in case.statuses, result.summary
    assert re.search(case.cause, result.summary), result.summary
    assert "\n" not in result.summary
    assert elapsed <= case.budget + MARGIN, f"took {elapsed:.2f} s (budget {case.budget:g} s)"
    assert result.reported is False
    if not case.heartbeat_contacted:
        assert env.heartbeat.requests == [], "the heartbeat was contacted although the check did not succeed"
    run_lines = [json.loads(line) for line in out.out.splitlines() if line.startswith("{")]
    assert [(line["check"], line["status"]) for line in run_lines] == [("apiserver-health", result.status.value)]
    assert_no_credential(
        result.model_dump_json(),
        out.out,
        out.err,
        caplog.text,
        "\n".join(str(r.exc_text or "") for r in caplog.records),
    )
    if case.after is not None:
        case.after(env, result)


# -- the same faults through the command line and the runtime adapters ---------------------------------------


def _write(path: Path, document: dict[str, Any] | str) -> Path:
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def _environment(server: str, **extra: Any) -> dict[str, Any]:
    return {
        "environment": "fm",
        "cluster": {"name": "c", "auth": {"mode": "token", "server": server, "token": "env:FM_API_TOKEN"}, **extra},
        "checks": {"apiserver-health": {"heartbeat": "env:FM_HEARTBEAT"}},
    }


def test_cli_adhoc_kubeconfig_with_plain_http_is_refused(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    plain = env.server(healthy(), tls=False)
    path = write_kubeconfig(env.tmp / "adhoc", plain.url, {"token": KUBECONFIG_TOKEN})
    env.monkeypatch.delenv("OUTPOST_CONFIG", raising=False)
    env.monkeypatch.delenv("OUTPOST_ENV", raising=False)
    code = cli.main(["run", "apiserver-health", "--kubeconfig", str(path), "--json"])
    out = capsys.readouterr()
    assert code == 2
    assert "not https://" in json.loads(out.out)[0]["summary"]
    assert plain.requests == []
    assert_no_credential(out.out, out.err)


def test_cli_never_prints_an_echoed_token(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    env.monkeypatch.setenv("FM_API_TOKEN", API_TOKEN)
    env.heartbeat_url()
    server = env.server(echo_credential(403))
    config = _write(env.tmp / "fm.yaml", _environment(server.url, deadline_seconds=DEADLINE))
    document = json.loads(config.read_text())
    document["cluster"]["auth"]["ca_file"] = str(env.pki.ca_file)
    _write(config, document)
    for extra in ([], ["--json"]):
        code = cli.main(["run", "apiserver-health", "--config", str(config), *extra])
        out = capsys.readouterr()
        assert code == 2
        assert "HTTP 403" in out.out
        assert_no_credential(out.out, out.err)
    assert env.heartbeat.requests == []


def test_cli_run_all_with_every_check_disabled_runs_nothing(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    env.heartbeat_url()
    document = _environment("https://127.0.0.1:1")
    document["checks"]["apiserver-health"]["enabled"] = False
    config = _write(env.tmp / "fm.yaml", document)
    assert cli.main(["run", "--all", "--config", str(config)]) == cli.EXIT_USAGE
    assert "enables no check" in capsys.readouterr().err
    assert env.heartbeat.requests == []


def test_a_disabled_check_run_by_name_does_not_ping(env: Env) -> None:
    settings = healthy_token_settings(env)
    disabled = settings.model_copy(
        update={
            "checks": {"apiserver-health": settings.checks["apiserver-health"].model_copy(update={"enabled": False})}
        }
    )
    result = run_check(disabled, "apiserver-health", log=False)
    assert result.status is Status.OK
    assert result.reported is False
    assert result.details["heartbeat"] == "check disabled, not pinged"
    assert env.heartbeat.requests == []


def test_validate_refuses_duplicate_keys(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    text = (
        "environment: fm\ncluster:\n  name: c\n  deadline_seconds: 10\n  deadline_seconds: 500\n"
        "  auth: {mode: token, server: 'https://127.0.0.1:1', token: 'env:X'}\n"
    )
    config = _write(env.tmp / "dup.yaml", text)
    assert cli.main(["validate", "--config", str(config)]) == cli.EXIT_USAGE
    assert "line 5 column 3: duplicate key 'deadline_seconds'" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["../../../etc/passwd", "prod/../../x", "/etc/hosts", "Prod", "a" * 80])
def test_environment_names_are_checked_before_any_path_is_built(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    real_read_text = Path.read_text

    def spy(self: Path, *args: Any, **kwargs: Any) -> str:
        # The CLI reads installed packages' metadata to find its plugin commands (sandbox, demo);
        # those reads are not configuration paths built from the name.
        if not any(part.endswith((".dist-info", ".egg-info")) for part in self.parts):
            opened.append(str(self))
        return real_read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", spy)
    assert cli.main(["validate", "--env", name]) == cli.EXIT_USAGE
    assert "invalid environment name" in capsys.readouterr().err
    assert opened == []


def test_validate_refuses_a_run_longer_than_the_function_timeout(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    # The function timeout is derived from the file (deadline + heartbeat worst case + margin); it must still fit
    # the platform's maximum (Lambda: 900 s).
    document = _environment("https://127.0.0.1:1", deadline_seconds=840)
    document["heartbeat"] = {"timeout_seconds": 20, "retries": 3, "backoff_seconds": 1}
    config = _write(env.tmp / "slow.yaml", document)
    assert cli.main(["validate", "--config", str(config)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "cluster.deadline_seconds: " in err
    assert "at most 900 s on aws" in err
    assert "= 928 s" in err


def test_lambda_adapter_never_logs_or_answers_an_echoed_token(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    from outpost.runtime import aws_lambda
    from outpost.runtime.common import CheckUnhealthy, _load
    from samples.aws_events import FUNCTION_URL_EVENT, SCHEDULED_EVENT

    env.monkeypatch.setenv("FM_API_TOKEN", API_TOKEN)
    env.heartbeat_url()
    server = env.server(echo_credential(500, html=True))
    document = _environment(server.url, deadline_seconds=DEADLINE)
    document["cluster"]["auth"]["ca_file"] = str(env.pki.ca_file)
    env.monkeypatch.setenv("OUTPOST_CONFIG", str(_write(env.tmp / "lambda.yaml", document)))
    _load.cache_clear()
    handler = aws_lambda.make_handler("apiserver-health")
    response = handler(json.loads(json.dumps(FUNCTION_URL_EVENT)), None)
    assert response["statusCode"] == 503
    with pytest.raises(CheckUnhealthy) as raised:
        handler(json.loads(json.dumps(SCHEDULED_EVENT)), None)
    out = capsys.readouterr()
    assert "HTTP 500" in response["body"]
    assert_no_credential(json.dumps(response), str(raised.value), json.dumps(raised.value.result), out.out, out.err)
    assert env.heartbeat.requests == []
    _load.cache_clear()


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        ({"version": "2.0", "requestContext": {"http": {"method": "GET"}}, "body": "!!", "isBase64Encoded": True}, 400),
        ({"httpMethod": "GET", "queryStringParameters": {"report": "maybe"}}, 400),
        ({"httpMethod": "DELETE"}, 405),
        ({"version": "2.0", "requestContext": {"http": {"method": "POST"}}, "body": "[1, 2]"}, 400),
    ],
)
def test_malformed_http_invocations_are_refused_without_running(env: Env, event: dict[str, Any], expected: int) -> None:
    from outpost.runtime import aws_lambda
    from outpost.runtime.common import _load

    env.heartbeat_url()
    document = _environment(env.black_hole())
    env.monkeypatch.setenv("OUTPOST_CONFIG", str(_write(env.tmp / "lambda.yaml", document)))
    _load.cache_clear()
    started = time.monotonic()
    response = aws_lambda.make_handler("apiserver-health")(event, None)
    assert response["statusCode"] == expected
    assert time.monotonic() - started < 1.0, "a malformed request must be refused before any observation"
    assert env.heartbeat.requests == []
    _load.cache_clear()


@pytest.mark.parametrize("event", [None, [], "scheduled", {"source": "aws.events"}, {"detail-type": "x"}])
def test_malformed_scheduled_invocations_fail_naming_the_cause(env: Env, event: Any) -> None:
    from outpost.errors import InvocationError
    from outpost.runtime import aws_lambda
    from outpost.runtime.common import _load

    env.heartbeat_url()
    env.monkeypatch.setenv("OUTPOST_CONFIG", str(_write(env.tmp / "lambda.yaml", _environment(env.black_hole()))))
    _load.cache_clear()
    with pytest.raises(InvocationError, match=r"event|malformed"):
        aws_lambda.make_handler("apiserver-health")(event, None)
    assert env.heartbeat.requests == []
    _load.cache_clear()


def test_an_exception_in_a_check_is_an_error_result(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    from outpost.checks import apiserver_health

    def broken(*_args: Any) -> Result:
        raise ZeroDivisionError(f"oops {API_TOKEN}\nsecond line")

    spec = apiserver_health.CHECK
    monkeypatch.setattr(apiserver_health, "CHECK", type(spec)(**{**spec.__dict__, "evaluate": broken}))
    result = run_check(healthy_token_settings(env), "apiserver-health", log=False)
    assert result.status is Status.ERROR
    assert result.summary == "apiserver-health: internal error ZeroDivisionError: oops ***"
    assert env.heartbeat.requests == []
