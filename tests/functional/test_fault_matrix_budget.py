"""The byte-budget fault matrix (issue 20, "Bounded by construction"): Outpost in a child process against
hostile servers that try to make it read without end, inflate a bomb, parse without end, or judge its own
refused request as the server's health.

Each case runs the real command line in a child (`child_run`) against real sockets and asserts the status and
exit code, the cause named, `assert_bounded`, and a ping only when the cluster was healthy. Each targets a
behaviour broken before issue 20 (commit 1c7a76f): a 1 GiB inflation, an unbounded LIST, an endless heartbeat
body, a RecursionError, a million-line parse, a 431 read as "unhealthy".
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from child_run import assert_bounded, assert_matrix, child_environment, each_case, run_cli
from hostile import (
    Behaviour,
    EndlessList,
    HostileServer,
    big_gzip_bomb,
    deep_json,
    endless_body,
    health_lines,
    healthy,
    reply,
    routes,
    stacked_gzip,
    stacked_gzip_bomb,
)
from local_server import LocalServer

from outpost_sandbox.pki import LocalhostTls

API_TOKEN = "sa-Bq7Wn2Kx9Lm4Pz8Rt6"
HEARTBEAT_TOKEN = "hb_Zr5Tq1Ws8Vn3Ky7M"
API_KEY = "vm-key-Hd4Jf9Ls2Qw6"
SECRETS = (API_TOKEN, HEARTBEAT_TOKEN, API_KEY)

DEADLINE = 5.0
HEARTBEAT = {"timeout_seconds": 1.0, "retries": 1, "backoff_seconds": 0.1}
HEARTBEAT_BUDGET = 1.0 * 2 + 0.1 + 1.0  # outpost.heartbeat.worst_case_seconds of HEARTBEAT
EXIT = {"ok": 0, "degraded": 0, "failed": 1, "error": 2}
FIXTURES = Path(__file__).resolve().parents[1] / "unit" / "fixtures"


@dataclass
class Arena:
    """What a case arranges: hostile servers, the heartbeat receiver, the settings file, the child's environment."""

    tmp: Path
    pki: LocalhostTls
    stack: ExitStack
    receiver: LocalServer
    servers: list[HostileServer] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    heartbeat_server: HostileServer | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def server(self, behaviour: Behaviour, *, tls: bool = True, **options: Any) -> HostileServer:
        server = HostileServer(
            behaviour, self.pki.cert_file if tls else None, self.pki.key_file if tls else None, **options
        )
        self.stack.enter_context(server)
        self.servers.append(server)
        return server

    def hostile_heartbeat(self, behaviour: Behaviour) -> None:
        """The heartbeat receiver is a hostile plain-http server on loopback (allowed for heartbeats)."""
        self.heartbeat_server = self.server(behaviour, tls=False)

    @property
    def heartbeat_requests(self) -> int:
        server_requests = len(self.heartbeat_server.requests) if self.heartbeat_server else 0
        return len(self.receiver.requests) + server_requests

    def config(self, api: HostileServer, check: str, params: dict[str, Any] | None = None, **cluster: Any) -> Path:
        base = self.heartbeat_server.url if self.heartbeat_server else self.receiver.base_url
        self.environment.setdefault("FM_API_TOKEN", API_TOKEN)
        self.environment["FM_HEARTBEAT"] = f"{base}/api/heartbeat/{HEARTBEAT_TOKEN}"
        self.environment["FM_VIGILMON_KEY"] = API_KEY
        document = {
            "environment": "budget-matrix",
            "cluster": {
                "name": "hostile",
                "auth": {
                    "mode": "token",
                    "server": api.url,
                    "token": "env:FM_API_TOKEN",
                    "ca_file": str(self.pki.ca_file),
                },
                "connect_timeout_seconds": 2,
                "read_timeout_seconds": 2,
                "deadline_seconds": DEADLINE,
                **cluster,
            },
            "heartbeat": HEARTBEAT,
            "vigilmon": {"api_url": f"{base}/api", "api_key": "env:FM_VIGILMON_KEY"},
            "checks": {check: {"heartbeat": "env:FM_HEARTBEAT", "monitor_id": "mon-1", "params": params or {}}},
        }
        path = self.tmp / "budget.yaml"
        path.write_text(yaml.safe_dump(document))
        return path


@dataclass(frozen=True)
class Case:
    name: str
    arrange: Callable[[Arena], list[str]]
    """Arranges the servers and returns the `outpost` arguments."""
    status: str
    cause: str
    """A regex the summary (or, for a command without a result, the output) must match."""
    pinged: bool = False
    """The cluster is healthy and the heartbeat (or maintenance API) is asked: it must see a request."""
    after: Callable[[Arena], None] | None = None

    @property
    def budget(self) -> float:
        return DEADLINE + (HEARTBEAT_BUDGET if self.pinged else 0.0)


def run(
    check: str, behaviour: Callable[[], Behaviour], params: dict[str, Any] | None = None, **cluster: Any
) -> Callable[[Arena], list[str]]:
    """`outpost run CHECK` against one hostile API server."""

    def arrange(arena: Arena) -> list[str]:
        return [
            "run",
            check,
            "--json",
            "--config",
            str(arena.config(arena.server(behaviour()), check, params, **cluster)),
        ]

    return arrange


def healthy_cluster_hostile_heartbeat(behaviour: Callable[[], Behaviour]) -> Callable[[Arena], list[str]]:
    """apiserver-health against a healthy API server; the heartbeat receiver is the hostile one."""

    def arrange(arena: Arena) -> list[str]:
        arena.hostile_heartbeat(behaviour())
        return [
            "run",
            "apiserver-health",
            "--json",
            "--config",
            str(arena.config(arena.server(healthy()), "apiserver-health")),
        ]

    return arrange


def maintenance_hostile_api(behaviour: Callable[[], Behaviour]) -> Callable[[Arena], list[str]]:
    def arrange(arena: Arena) -> list[str]:
        arena.hostile_heartbeat(behaviour())
        config = arena.config(arena.server(healthy()), "apiserver-health")
        return ["maintenance", "start", "--check", "apiserver-health", "--minutes", "5", "--config", str(config)]

    return arrange


RUN_BYTES = 16 * 1024 * 1024
"""The endless-LIST case's `cluster.max_run_bytes` (the default, 256 MiB, takes ~15 s to read from this server)."""


def endless_list(**options: Any) -> Callable[[Arena], list[str]]:
    """gang-scheduling's first request is a LIST of PodGroups: every page hands out a new continue token."""

    def arrange(arena: Arena) -> list[str]:
        pages = EndlessList(**options)
        arena.extra["pages"] = pages
        # The budget must trip before the deadline whatever the machine's load: 16 MB of TLS pages took over the
        # 5 s deadline on a busy 2-core machine.
        cluster: dict[str, Any] = {} if pages.same_token else {"max_run_bytes": RUN_BYTES, "deadline_seconds": 30.0}
        config = arena.config(arena.server(pages), "gang-scheduling", **cluster)
        return ["run", "gang-scheduling", "--json", "--config", str(config)]

    return arrange


def _served_at_most_the_budget(arena: Arena) -> None:
    pages: EndlessList = arena.extra["pages"]
    assert pages.sent <= RUN_BYTES + 2 * (pages.padding + 1024), f"served {pages.sent} bytes in {pages.pages} pages"


def big_token(arena: Arena) -> list[str]:
    """A 100 KB token (an environment variable holds at most 128 KiB) to a server refusing heads over 64 KiB."""
    arena.environment["FM_API_TOKEN"] = "t" * 100_000
    api = arena.server(healthy(), max_header_bytes=64 * 1024)
    return ["run", "apiserver-health", "--json", "--config", str(arena.config(api, "apiserver-health"))]


def _nothing_sent(arena: Arena) -> None:
    api = arena.servers[0]
    assert (api.requests, api.refused_large_headers) == ([], 0), "the oversized token went out"


def manager_proxy_answers(status: int) -> Callable[[Arena], list[str]]:
    """kruise-manager-health: the real Deployment and pods (captured), each pod's /readyz through the proxy
    answering `status`."""

    def arrange(arena: Arena) -> list[str]:
        objects = json.loads((FIXTURES / "managers" / "healthy.json").read_text())["objects"]
        ns = "kruise-system"
        deployment = next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["namespace"] == ns)
        pods = [o for o in objects if o["kind"] == "Pod" and o["metadata"]["namespace"] == ns]
        as_json = {"Content-Type": "application/json"}
        api = arena.server(
            routes(
                {
                    f"/apis/apps/v1/namespaces/{ns}/deployments/": reply(200, json.dumps(deployment), as_json),
                    f"/api/v1/namespaces/{ns}/pods": reply(
                        200, json.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": pods}), as_json
                    ),
                    f"/api/v1/namespaces/{ns}/pods/": reply(status, "refused", {"Content-Type": "text/plain"}),
                    "/version": reply(200, '{"gitVersion":"v1.37.2"}', as_json),
                }
            )
        )
        config = arena.config(api, "kruise-manager-health")
        return ["run", "kruise-manager-health", "--json", "--config", str(config)]

    return arrange


DEEP = 100_000
"""Levels of nesting of the deep-JSON cases (the tester's)."""
MILLION = 1_000_000

CASES = [
    # -- compression: decoded by Outpost, one gzip layer at most, never past the caps ----------------------------
    Case(
        "API server answers a stacked gzip bomb",
        run("apiserver-health", stacked_gzip_bomb),
        "error",
        r"GET /livez .*stacked content codings 'gzip, gzip' refused",
    ),
    Case(
        "API server answers an honest body in two gzip layers",
        run("apiserver-health", lambda: stacked_gzip("[+]ping ok\n[+]etcd ok\nlivez check passed\n")),
        "error",
        r"GET /livez .*stacked content codings",
    ),
    Case(
        "API server answers deflate",
        run(
            "apiserver-health",
            lambda: reply(
                200,
                __import__("zlib").compress(b"[+]ping ok\nlivez check passed\n"),
                {"Content-Type": "text/plain", "Content-Encoding": "deflate"},
            ),
        ),
        "error",
        r"content coding 'deflate' refused",
    ),
    # -- the heartbeat: judged by its status line, no byte of its body read ----------------------------------------
    Case(
        "heartbeat answers a stacked gzip bomb",
        healthy_cluster_hostile_heartbeat(stacked_gzip_bomb),
        "ok",
        r"apiserver live and ready",
        pinged=True,
    ),
    Case(
        "heartbeat answers a 1 GiB gzip bomb",
        healthy_cluster_hostile_heartbeat(big_gzip_bomb),
        "ok",
        r"apiserver live and ready",
        pinged=True,
    ),
    Case(
        "heartbeat 200 with an endless body",
        healthy_cluster_hostile_heartbeat(endless_body),
        "ok",
        r"apiserver live and ready",
        pinged=True,
    ),
    Case(
        "heartbeat 200 trickling its body",
        healthy_cluster_hostile_heartbeat(lambda: endless_body(interval=0.2)),
        "ok",
        r"apiserver live and ready",
        pinged=True,
    ),
    Case(
        "heartbeat 500 with an endless body",
        healthy_cluster_hostile_heartbeat(lambda: endless_body(500)),
        "error",
        r"heartbeat was not delivered: .*HTTP 500 \(gave up after 2 attempts\)",
        pinged=True,
    ),
    Case(
        "maintenance API answers an endless body",
        maintenance_hostile_api(endless_body),
        "ok",
        r"maintenance started: apiserver-health \(monitor mon-1\)",
        pinged=True,
    ),
    # -- one byte budget per run, across every page of a LIST -----------------------------------------------------
    Case(
        "LIST pages never end",
        endless_list(),
        "error",
        rf"GET /apis/scheduling.sigs.k8s.io/v1alpha1/podgroups .*budget of {RUN_BYTES} bytes "
        r"\(cluster.max_run_bytes\)",
        after=_served_at_most_the_budget,
    ),
    Case(
        "LIST hands back the continue token it was given",
        endless_list(padding=100, same_token=True),
        "error",
        r"hands back the continue token",
    ),
    # -- JSON nested deeper than a parser goes -------------------------------------------------------------------
    Case(
        "LIST nested 100,000 levels deep",
        run("gang-scheduling", lambda: deep_json(DEEP)),
        "error",
        r"podgroups.*nested deeper than \d+ levels",
    ),
    Case(
        "node LIST (validated page by page) nested 100,000 levels deep",
        run("kwok-node-consistency", lambda: deep_json(DEEP)),
        "error",
        r"/api/v1/nodes.*nested deeper than",
    ),
    Case(
        "401 whose Status is nested 100,000 levels deep",
        run("apiserver-health", lambda: deep_json(DEEP, status=401, wrap="none")),
        "error",
        r"GET /livez .*HTTP 401",
    ),
    # -- health answers: only their head is read ----------------------------------------------------------------------
    Case(
        "/readyz of a million lines",
        run("apiserver-health", lambda: health_lines(MILLION)),
        "error",
        r"apiserver /livez: HTTP 200 with an answer of \d+ characters, longer than a health report",
    ),
    Case(
        "/readyz of a million lines, 503 with failing ones",
        run("apiserver-health", lambda: health_lines(MILLION, status=503, failing_every=10)),
        "failed",
        r"apiserver unhealthy: /livez 503, /readyz 503; failing: check-0, check-10",
    ),
    # -- our own request: small, and its refusal is not the server's health -----------------------------------------
    Case(
        "token of 100 KB (server refuses heads over 64 KiB)",
        big_token,
        "error",
        r"the bearer token is 100000 bytes, more than the 65536 bytes Outpost sends",
        after=_nothing_sent,
    ),
    Case(
        "API server answers 431",
        run("apiserver-health", lambda: reply(431, "Request Header Fields Too Large")),
        "error",
        r"GET /livez .*HTTP 431 Request Header Fields Too Large: our own request was refused",
    ),
    Case(
        "/readyz answers 413 to the triage ladder",
        run("apiserver-triage", lambda: reply(413, "too large")),
        "error",
        r"GET /readyz .*HTTP 413 Content Too Large: our own request was refused",
    ),
    Case(
        "proxied manager /readyz answers 414",
        manager_proxy_answers(414),
        "error",
        r"kruise-controller-manager.*HTTP 414 URI Too Long: our own request was refused",
    ),
]


@pytest.fixture
def arena(tmp_path: Path, pki: LocalhostTls, receiver: LocalServer) -> Iterator[Arena]:
    with ExitStack() as stack:
        yield Arena(tmp_path, pki, stack, receiver)


def test_the_matrix_has_enough_cases() -> None:
    assert_matrix(CASES, 15)


@each_case(CASES)
def test_budget_fault(case: Case, arena: Arena) -> None:
    args = case.arrange(arena)
    outcome = run_cli(args, env=child_environment(arena.environment), timeout=case.budget + 30)

    assert_bounded(outcome, case.budget, SECRETS)
    assert outcome.returncode == EXIT[case.status], (outcome.returncode, outcome.output[-1500:])
    if args[0] == "run":
        results = json.loads(outcome.stdout[outcome.stdout.index("[") : outcome.stdout.rindex("]") + 1])
        assert [r["status"] for r in results] == [case.status], results
        assert re.search(case.cause, results[0]["summary"]), results[0]["summary"]
        assert results[0]["reported"] is (case.pinged and case.status in ("ok", "degraded"))
    else:
        assert re.search(case.cause, outcome.stdout), outcome.output[-1500:]
    if case.pinged:
        assert arena.heartbeat_requests >= 1, "the healthy run did not reach the heartbeat"
    else:
        assert arena.heartbeat_requests == 0, "the heartbeat was contacted although the check did not succeed"
    if case.after is not None:
        case.after(arena)
