"""The fault matrix, parsing class: what a cluster serves is read as upstream reads it, failing closed (issue 20,
item 3: "Parse like upstream").

Each case serves a captured state with one value at the edge of a grammar, over real TLS from the kit's fake API
server, to the real `outpost run CHECK --json` in a child process: histogram `le`s and totals as prometheus@v0.316.0
reads them, a caBundle END line Go's encoding/pem refuses, selector keys over apimachinery@v0.37.2's limits,
non-ASCII digits in a quantity. Each must give the right status and exit code, name the cause, ping only when
observed healthy and print no credential; a healthy histogram is the control.
"""

from __future__ import annotations

import base64
import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from child_run import ChildOutcome, assert_bounded, child_environment, run_cli
from local_server import LocalServer
from served_api import ServedApi
from test_fault_matrix_time import moved

from kit import node_fixtures, webhook_fixtures
from kit.fake_cluster import FakeApiServer
from kit.managers import load as load_managers
from outpost.cli import EXIT_USAGE
from outpost.result import Status
from outpost_sandbox.pki import LocalhostTls

API_TOKEN = "sa-parse-Wd4Kq8Zr2Xm6"
HEARTBEAT_TOKEN = "hb-parse-Lc7Tn3Vb9Py1"
DEADLINE = 5.0
METRIC = "apiserver_request_duration_seconds"
GET = (
    'component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="GET",version="v1"'
)


@dataclass(frozen=True)
class Case:
    name: str
    check: str
    api: Callable[[datetime], FakeApiServer]
    status: Status
    line: str
    """A regex one of the result's error lines (or, for ok, its summary) must match."""
    params: dict[str, Any] | None = None
    config_refused: bool = False
    """The configuration itself is refused (outpost validates before it runs): no result, exit 64, the reason on
    stderr (`status` is then unused)."""


# -- histograms ------------------------------------------------------------------------------------------------------


def _histogram(buckets: list[tuple[str, str]], count: str) -> str:
    lines = [f"# HELP {METRIC} Response latency distribution in seconds.", f"# TYPE {METRIC} histogram"]
    lines += [f'{METRIC}_bucket{{{GET},le="{le}"}} {value}' for le, value in buckets]
    lines += [f"{METRIC}_sum{{{GET}}} 250", f"{METRIC}_count{{{GET}}} {count}"]
    return "\n".join(lines) + "\n"


def _metrics(text: str) -> Callable[[datetime], FakeApiServer]:
    def api(_now: datetime) -> FakeApiServer:
        return FakeApiServer().respond("/metrics", 200, text, "text/plain; version=0.0.4; charset=utf-8")

    return api


CUMULATIVE = {"cumulative": True}
SLOW_GET = r"^apiserver verb GET: observed p99 [0-9.]+ s over 100 requests \(want <= 1 s\)"


# -- caBundles -------------------------------------------------------------------------------------------------------


def _webhooks(edit: Callable[[str], str]) -> Callable[[datetime], FakeApiServer]:
    """The captured healthy webhook state with `edit` applied to the PEM of kruise's validating caBundle."""

    def api(_now: datetime) -> FakeApiServer:
        objects = copy.deepcopy(webhook_fixtures.objects("healthy"))
        for obj in objects:
            if obj["kind"] == "ValidatingWebhookConfiguration" and obj["metadata"]["name"].startswith("kruise"):
                for webhook in obj["webhooks"]:
                    pem = base64.b64decode(webhook["clientConfig"]["caBundle"]).decode()
                    webhook["clientConfig"]["caBundle"] = base64.b64encode(edit(pem).encode()).decode()
        return webhook_fixtures.serve("healthy").add_all(objects)

    return api


def _end_line(new: str) -> Callable[[str], str]:
    return lambda pem: pem.replace("-----END CERTIFICATE-----", new)


KRUISE_REFUSED = (
    r"^validatingwebhookconfiguration kruise-validating-webhook-configuration: webhook .* caBundle is not "
    r"a certificate \(no PEM CERTIFICATE block\)"
)


# -- selectors and quantities ----------------------------------------------------------------------------------------


def _managers(now: datetime) -> FakeApiServer:
    state = load_managers("healthy")
    return FakeApiServer().add_all(moved(state.objects, now - state.captured_at))


def _holder(selector: str) -> dict[str, Any]:
    return {"leases": [{"namespace": "koordinator-system", "name": "koordinator-manager", "holder_selector": selector}]}


def _nodes_with_usage(cpu: str) -> Callable[[datetime], FakeApiServer]:
    def api(now: datetime) -> FakeApiServer:
        state = "healthy"
        delta = now - node_fixtures.captured_at(state)
        documents = {name: moved(node_fixtures.document(state, name), delta) for name in node_fixtures.DOCUMENTS}
        for metric in documents["nodemetrics"]:
            usage = (metric.get("status") or {}).get("nodeMetric", {}).get("nodeUsage")
            if usage:
                usage["resources"]["cpu"] = cpu
        served = FakeApiServer()
        for doc in documents.values():
            if isinstance(doc, dict):
                served.add({"kind": "DaemonSet", "apiVersion": "apps/v1", **doc})
            elif doc is not None:
                served.add_all(doc)
        return served

    return api


CASES = [
    Case(
        "healthy histogram: control",
        "apiserver-latency",
        _metrics(_histogram([("0.05", "90"), ("0.5", "100"), ("5", "100"), ("+Inf", "100")], "100")),
        Status.OK,
        r"within thresholds",
        CUMULATIVE,
    ),
    Case(
        "le=NaN bucket is ignored, not sorted in",
        "apiserver-latency",
        _metrics(_histogram([("0.5", "0"), ("2", "0"), ("NaN", "100"), ("+Inf", "100")], "100")),
        Status.FAILED,
        SLOW_GET,
        CUMULATIVE,
    ),
    Case(
        "le with surrounding whitespace is no bound",
        "apiserver-latency",
        _metrics(_histogram([(" 0.5", "100"), ("5", "100"), ("+Inf", "100")], "100")),
        Status.FAILED,
        SLOW_GET,
        CUMULATIVE,
    ),
    Case(
        "le spelled twice: the first sample is kept",
        "apiserver-latency",
        _metrics(_histogram([("0.5", "0"), ("5e-1", "100"), ("5", "100"), ("+Inf", "100")], "100")),
        Status.FAILED,
        SLOW_GET,
        CUMULATIVE,
    ),
    Case(
        "NaN total has no quantile",
        "apiserver-latency",
        _metrics(_histogram([("0.5", "100"), ("+Inf", "NaN")], "NaN")),
        Status.ERROR,
        r"has no value over nan requests \(histogram not usable",
        CUMULATIVE,
    ),
    Case(
        "caBundle with text after its END line",
        "webhook-cert-expiry",
        _webhooks(_end_line("-----END CERTIFICATE----- rotated 2026-12-01")),
        Status.FAILED,
        KRUISE_REFUSED,
    ),
    Case(
        "caBundle END line with six dashes",
        "webhook-cert-expiry",
        _webhooks(_end_line("-----END CERTIFICATE------")),
        Status.FAILED,
        KRUISE_REFUSED,
    ),
    Case(
        "caBundle text glued to its END line",
        "webhook-cert-expiry",
        _webhooks(_end_line("-----END CERTIFICATE-----junk")),
        Status.FAILED,
        KRUISE_REFUSED,
    ),
    Case(
        "selector key name of 64 characters",
        "leader-leases",
        _managers,
        Status.ERROR,
        r"invalid label selector '" + "k" * 64 + "=koord-manager': .*name part must be no more than 63 characters",
        _holder("k" * 64 + "=koord-manager"),
        config_refused=True,
    ),
    Case(
        "selector key prefix of 254 characters",
        "leader-leases",
        _managers,
        Status.ERROR,
        r"invalid label selector '" + "p" * 254 + "/koord-app=koord-manager': .*prefix part must be no more than "
        r"253 characters",
        _holder("p" * 254 + "/koord-app=koord-manager"),
        config_refused=True,
    ),
    Case(
        "CPU usage in non-ASCII digits is no quantity",
        "node-utilization",
        _nodes_with_usage("\u0663\u0669\u0660\u0660m"),
        Status.ERROR,
        r"no usable NodeMetric CPU report for any of \d+ selected nodes \(\d+ no cpu usage\)",
        {"nodes": {"classes": ["real", "fake"]}},
    ),
]


def run_case(case: Case, pki: LocalhostTls, receiver: LocalServer, tmp: Path) -> tuple[ChildOutcome, list[Any]]:
    api = case.api(datetime.now(UTC))
    check: dict[str, Any] = {"heartbeat": "env:PM_HEARTBEAT"}
    if case.params:
        check["params"] = case.params
    config = tmp / "parsing.yaml"
    with ServedApi(api, pki.cert_file, pki.key_file) as served:
        config.write_text(
            yaml.safe_dump(
                {
                    "environment": "fault-matrix-parsing",
                    "cluster": {
                        "name": "captured",
                        "deadline_seconds": DEADLINE,
                        "auth": {
                            "mode": "token",
                            "server": served.url,
                            "token": "env:PM_API_TOKEN",
                            "ca_file": str(pki.ca_file),
                        },
                    },
                    "checks": {case.check: check},
                },
                width=1000,
            )
        )
        environment = child_environment(
            {"PM_API_TOKEN": API_TOKEN, "PM_HEARTBEAT": f"{receiver.base_url}/api/heartbeat/{HEARTBEAT_TOKEN}"}
        )
        outcome = run_cli(
            ["run", case.check, "--config", str(config), "--json"], env=environment, timeout=DEADLINE + 30
        )
    results = json.loads(outcome.stdout) if outcome.stdout.strip().startswith("[") else []
    return outcome, results


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_parsing_fails_closed(case: Case, pki: LocalhostTls, receiver: LocalServer, tmp_path: Path) -> None:
    outcome, results = run_case(case, pki, receiver, tmp_path)
    assert_bounded(outcome, DEADLINE, secrets=(API_TOKEN, HEARTBEAT_TOKEN))
    if case.config_refused:
        assert results == [], outcome.output[-2000:]
        assert outcome.returncode == EXIT_USAGE, outcome.output[-2000:]
        assert re.search(case.line, outcome.output), outcome.output[-2000:]
        assert receiver.requests == [], "pinged although the configuration was refused"
        return
    assert len(results) == 1, outcome.output[-2000:]
    result = results[0]
    assert result["status"] == case.status.value, result
    assert outcome.returncode == case.status.exit_code
    if case.status is Status.OK:
        assert re.search(case.line, result["summary"]), result["summary"]
        assert [r.path for r in receiver.requests] == [f"/api/heartbeat/{HEARTBEAT_TOKEN}"], "a healthy run pings"
        return
    lines = result.get("errors") or []
    assert any(re.search(case.line, line) for line in lines), lines or result["summary"]
    assert receiver.requests == [], "pinged although the cluster was not observed healthy"
