"""The sandbox backend daemon: what needs a real node, for pods kwok (or the process node) runs without a process.

It stands in for koordlet (metrics port and NodeMetric status) and kruise-daemon's /healthz on the KWOK nodes (the
process node runs the real agents, and its koordlet reports its own NodeMetric), the example LS workload
and the overload fault's seat holder: one process in `outpost-sbx` that tells pods apart by the local address and
port a connection reached (annotation `outpost.sandbox/ports`); an unclaimed port is reset, so a pod the real
controllers removed stops answering. Answers follow upstream's formats; per-target behaviour comes from
`behaviour.json` (a malformed file keeps the last good one). It writes only the status of NodeMetrics
koord-manager created, and logs no credential.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import logging
import socket
import ssl
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from outpost.kube.timestamps import format_time
from outpost_sandbox.backends import netns
from outpost_sandbox.backends.behaviour import behaviour_path, cpu_usage_millis, default_behaviour, read_behaviour
from outpost_sandbox.backends.kube import AsyncKube, Kube, SandboxApiError
from outpost_sandbox.kubelet.daemon import has_own_kubelet

log = logging.getLogger("outpost_sandbox.backend")

PORTS = (8090, 9316, 9876, 10221)
PORTS_ANNOTATION = "outpost.sandbox/ports"
NODEMETRIC_REFRESH_S = 60.0
"""koordlet's default reportIntervalSeconds, used up to `NODEMETRIC_WRITES_PER_S` x 60 nodes."""
NODEMETRIC_WRITES_PER_S = 40.0
"""Past 2,400 nodes the report interval grows so that the NodeMetric status writes stay at this rate: on a real
cluster each koordlet writes its own node's (5,000 nodes at 60 s: 83 writes a second), here one process writes all
of them on the same 2 cores as the control plane. Koordinator sets the interval per cluster (slo-controller-config
nodeMetricCollectPolicy.reportIntervalSeconds); at 5,000 nodes it is 125 s, inside nodemetric-freshness's 180 s
expiry."""
NODEMETRIC_WORKERS = 4
NODEMETRIC_NEW_CHECK_S = 2.0
"""Between report rounds the NodeMetric count is checked this often (one LIST of limit 1; a thirtieth of the
interval past 2,400 nodes): a NodeMetric koord-manager creates (for a new node, or for every node of a fresh
sandbox, a moment after the daemon starts) is reported within seconds, as a koordlet reports once it starts, not a
whole interval later (which a freshly installed sandbox would read as every node stale). A failed round is retried
as soon."""
NODEMETRICS = "/apis/slo.koordinator.sh/v1alpha1/nodemetrics"
POD_REFRESH_S = 2.0
POD_REFRESH_DUTY = 0.1
"""At most this share of the time goes to relisting every pod: 10,000 DaemonSet pods at 5,000 nodes are about
40 MB of JSON a list, so the 2 s period (and the 0.5 s floor of a refresh on an unknown address) stretch to ten
times what the last list took."""
APF_WORKERS = 3
APF_LOAD_USER = "outpost-sandbox:apf-load"
APF_HOLD_S = 8.0

HEALTH_CHECKS = {  # target -> {path: controller-runtime check name}
    "kruise-daemon": {"/healthz": "ping"},
}


def rfc3339_micro(t: dt.datetime) -> str:
    return format_time(t, micro=True)


def rfc3339(t: dt.datetime) -> str:
    return format_time(t)


@dataclass(frozen=True)
class Role:
    target: str  # behaviour target, e.g. "kruise-webhook"
    kind: str  # health | metrics | webhook | app
    pod: str  # namespace/name of the pod answering


class PodIndex:
    """(local IP, port) -> Role, rebuilt from the pod list (the real controllers' output)."""

    def __init__(self) -> None:
        self.roles: dict[tuple[str, int], Role] = {}

    def lookup(self, ip: str, port: int) -> Role | None:
        return self.roles.get((ip, port))

    def rebuild(self, pods: list[dict[str, Any]]) -> None:
        roles: dict[tuple[str, int], Role] = {}
        for pod in pods:
            meta, status = pod.get("metadata", {}), pod.get("status", {})
            spec_ports = (meta.get("annotations") or {}).get(PORTS_ANNOTATION)
            if not spec_ports or meta.get("deletionTimestamp") or status.get("phase") != "Running":
                continue
            ips = {i.get("ip") for i in status.get("podIPs") or []} | {status.get("podIP")}
            if pod.get("spec", {}).get("hostNetwork"):
                ips.add(status.get("hostIP"))
            ref = f"{meta.get('namespace')}/{meta.get('name')}"
            for item in spec_ports.split(","):
                port_s, _, role_s = item.partition("=")
                target, _, kind = role_s.partition(":")
                for ip in ips - {None, ""}:
                    roles[(str(ip), int(port_s))] = Role(target, kind, ref)
        self.roles = roles


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with RST, like a port nobody listens on.

    abort(), not close(): on a TLS connection close() first attempts an orderly TLS shutdown and
    can keep the socket open while the peer waits for an answer, which would look like a hang.
    """
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class HttpError(Exception):
    pass


async def read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str], bytes] | None:
    """One HTTP/1.1 request (method, target, headers, body); None at a clean EOF."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise HttpError("truncated request head") from None
    except asyncio.LimitOverrunError:
        raise HttpError("request head too large") from None
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        raise HttpError("bad request line")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
    body = b""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        chunks = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
        body = b"".join(chunks)
    elif "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    return parts[0], parts[1], headers, body


REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 500: "Internal Server Error"}


def response(status: int, body: bytes, ctype: str = "text/plain; charset=utf-8") -> bytes:
    head = (
        f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}\r\n"
        f"Content-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
        f"X-Content-Type-Options: nosniff\r\n\r\n"
    )
    return head.encode() + body


def admission_allowed(body: bytes) -> bytes:
    """An AdmissionReview v1 response allowing the request unchanged (the seat holder's only answer)."""
    request = json.loads(body)["request"]
    out = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": request["uid"], "allowed": True},
    }
    return json.dumps(out).encode()


class Daemon:
    def __init__(self, state_dir: Path, kubeconfig: Path) -> None:
        self.state_dir = state_dir
        self.systems_dir = state_dir / "systems"
        self.pki_dir = self.systems_dir / "pki"
        self.kubeconfig = kubeconfig
        self.kube = AsyncKube(Kube.from_kubeconfig(kubeconfig, timeout=15))
        # The load generator acts as APF_LOAD_USER, and waits long: its requests queue in the fault's level.
        as_load_user = Kube.from_kubeconfig(kubeconfig, timeout=30, headers={"Impersonate-User": APF_LOAD_USER})
        self.load_kube = AsyncKube(as_load_user, workers=APF_WORKERS)
        self.index = PodIndex()
        self.behaviour: dict[str, Any] = default_behaviour()
        self._behaviour_mtime = -1.0
        self._tls: dict[tuple[str, float], ssl.SSLContext] = {}
        self._refresh_lock = asyncio.Lock()
        self._last_refresh = 0.0
        self._refresh_took = 0.0
        self._changed = asyncio.Event()
        self._reported_uids: set[str] = set()

    # ---- behaviour -------------------------------------------------------------------------
    def reload_behaviour(self) -> None:
        path = behaviour_path(self.systems_dir)
        try:
            mtime = path.stat().st_mtime if path.exists() else 0.0
            if mtime == self._behaviour_mtime:
                return
            self.behaviour = read_behaviour(self.systems_dir)
            self._behaviour_mtime = mtime
            self._changed.set()
            log.info("behaviour reloaded: %s", json.dumps(self.behaviour["targets"], sort_keys=True))
        except (OSError, ValueError) as exc:
            log.error("behaviour file %s unreadable, keeping the last good one: %s", path, exc)

    def target_mode(self, target: str) -> tuple[str, int]:
        t = self.behaviour["targets"].get(target) or {"mode": "ok"}
        return str(t.get("mode", "ok")), int(t.get("delay_ms", 0))

    def tls_context(self, target: str) -> ssl.SSLContext:
        stem = str(self.behaviour["certs"].get(target, ""))
        crt = self.pki_dir / f"{stem}.crt"
        key = crt.stat().st_mtime if crt.exists() else 0.0
        ctx = self._tls.get((stem, key))
        if ctx is None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.set_alpn_protocols(["http/1.1"])
            ctx.load_cert_chain(crt, self.pki_dir / f"{stem}.key")
            self._tls[(stem, key)] = ctx
        return ctx

    # ---- pods ------------------------------------------------------------------------------
    async def refresh_pods(self, force: bool = False) -> None:
        loop = asyncio.get_running_loop()
        async with self._refresh_lock:
            if not force and loop.time() - self._last_refresh < max(0.5, self._refresh_took / POD_REFRESH_DUTY):
                return
            started = loop.time()
            try:
                items = await self.kube.list("/api/v1/pods")
            except SandboxApiError as exc:
                log.error("pod index refresh failed: %s", exc)
                return
            self._last_refresh = loop.time()
            self.index.rebuild(items)
            self._refresh_took = loop.time() - started

    async def resolve(self, ip: str, port: int) -> Role | None:
        role = self.index.lookup(ip, port)
        if role is None:
            await self.refresh_pods()
            role = self.index.lookup(ip, port)
        return role

    # ---- connections -----------------------------------------------------------------------
    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        local = writer.get_extra_info("sockname")
        try:
            await self._handle(reader, writer, str(local[0]), int(local[1]))
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError, HttpError, TimeoutError):
            pass
        except Exception:  # one bad connection must not kill the daemon; log it, drop it.
            log.exception("connection to %s:%s failed", local[0], local[1])
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, ip: str, port: int) -> None:
        self.reload_behaviour()
        role = await self.resolve(ip, port)
        if role is None:
            _reset(writer)
            return
        mode, delay_ms = self.target_mode(role.target)
        if mode == "down":
            _reset(writer)
            return
        tls_ctx = None
        if role.kind == "webhook":
            tls_ctx = self.tls_context(role.target)
            await writer.start_tls(tls_ctx)
        while True:
            if mode == "hang":
                with contextlib.suppress(Exception):
                    while await reader.read(65536):
                        pass
                return
            req = await read_request(reader)
            if req is None:
                return
            method, target_path, _headers, body = req
            self.reload_behaviour()
            mode, delay_ms = self.target_mode(role.target)
            if mode == "down":
                # A client reusing a kept-alive connection must meet the new behaviour (and the
                # new certificate) too, so the connection is dropped and it has to reconnect.
                _reset(writer)
                return
            if mode == "hang":
                continue
            if mode == "slow" and delay_ms > 0:
                await asyncio.sleep(delay_ms / 1000)
            path = target_path.split("?", 1)[0]
            if path == "/outpost-hold":
                # the overload fault's seat holder: answer late, and always allow
                await asyncio.sleep(APF_HOLD_S)
                writer.write(response(200, admission_allowed(body), "application/json"))
            else:
                writer.write(self.answer(role, mode, method, target_path, body))
            await writer.drain()

    def answer(self, role: Role, mode: str, method: str, target_path: str, body: bytes) -> bytes:
        path, _, query = target_path.partition("?")
        if role.kind == "health":
            checks = HEALTH_CHECKS.get(role.target, {})
            if path not in checks:
                return response(404, b"404 page not found\n")
            name = checks[path]
            what = path.strip("/")
            if mode == "500":
                return response(500, f"[-]{name} failed: reason withheld\n{what} check failed\n".encode())
            if mode == "wrong-body":
                return response(200, b"[-]not-this-body\n")
            if "verbose" in query:
                return response(200, f"[+]{name} ok\n{what} check passed\n".encode())
            return response(200, b"ok")
        if role.kind == "metrics":
            if path != "/metrics":
                return response(404, b"404 page not found\n")
            if mode == "500":
                return response(500, b"internal server error\n")
            if mode == "wrong-body":
                return response(200, b"this is not prometheus text\n")
            text = (
                f"# HELP outpost_sandbox_up Whether the sandbox backend for this target answers.\n"
                f'# TYPE outpost_sandbox_up gauge\noutpost_sandbox_up{{target="{role.target}"}} 1\n'
            )
            return response(200, text.encode(), "text/plain; version=0.0.4; charset=utf-8")
        if role.kind == "webhook":  # only the seat holder's /outpost-hold is served (above)
            return response(404, b"404 page not found\n")
        # app: the LS workload
        if mode == "500":
            return response(500, b"internal server error\n")
        if mode == "wrong-body":
            return response(200, b"unexpected\n")
        return response(200, b"ok\n")

    # ---- koordlet's report -----------------------------------------------------------------
    async def refresh_nodemetrics(self) -> None:
        """koordlet's report, forever: every NodeMetric once per report interval (at once when the behaviour
        changes) and, in between, the NodeMetrics created meanwhile as soon as the count shows them."""
        loop = asyncio.get_running_loop()
        interval = float(NODEMETRIC_REFRESH_S)
        next_full = 0.0
        known = -1  # NodeMetrics that existed at the last round
        while True:
            self.reload_behaviour()
            changed = self._changed.is_set()
            self._changed.clear()
            started = loop.time()
            full = changed or started >= next_full
            try:
                interval, known = await self._nodemetrics_once(only_new=not full)
            except SandboxApiError as exc:
                log.error("nodemetric refresh failed: %s", exc)
                known = -1  # retried at the next check, whole if it was whole
                if full:
                    next_full = 0.0
                until = loop.time() + NODEMETRIC_NEW_CHECK_S
            else:
                if full:  # every node is reported once per interval, however long the round itself took
                    next_full = started + interval
                until = next_full
            step = max(NODEMETRIC_NEW_CHECK_S, interval / 30)
            while (left := until - loop.time()) > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), min(left, step))
                if self._changed.is_set():
                    break
                try:
                    if await self._nodemetric_count() != known:
                        break
                except SandboxApiError as exc:  # the next check or round tells again
                    log.error("nodemetric count failed: %s", exc)

    async def _nodemetric_count(self) -> int:
        page = await self.kube.run(lambda kube: kube.get(NODEMETRICS, limit="1"))
        return len(page.get("items") or []) + int((page.get("metadata") or {}).get("remainingItemCount") or 0)

    async def _nodemetrics_once(self, only_new: bool = False) -> tuple[float, int]:
        """koordlet's report into every node's NodeMetric (with `only_new`, into those not reported yet), once;
        returns the report interval and how many NodeMetrics exist.

        koord-manager creates each node's NodeMetric (spec only: what koordlet is to report) and removes it with
        the node; koordlet writes the status. So only the status subresource of an existing NodeMetric is
        written: a node koord-manager has not reached yet is reported once it has. Reported NodeMetrics are
        known by uid, so one deleted and created again with its node counts as new.
        """
        nodes = {node["metadata"]["name"]: node for node in await self.kube.list("/api/v1/nodes")}
        interval = float(int(max(NODEMETRIC_REFRESH_S, len(nodes) / NODEMETRIC_WRITES_PER_S)))
        stale = set(self.behaviour.get("stale_nodemetrics") or [])
        ratio = float(self.behaviour.get("cpu_ratio", 0.62))
        existing = {
            metric["metadata"]["name"]: str(metric["metadata"].get("uid", ""))
            for metric in await self.kube.list(NODEMETRICS)
        }
        workers = asyncio.Semaphore(NODEMETRIC_WORKERS)

        async def report(name: str) -> None:
            alloc = nodes[name].get("status", {}).get("allocatable", {})
            cpu_m = cpu_usage_millis(str(alloc.get("cpu", "1")), ratio)
            async with workers:
                try:
                    await self.kube.apply(
                        {
                            "apiVersion": "slo.koordinator.sh/v1alpha1",
                            "kind": "NodeMetric",
                            "metadata": {"name": name},
                            "status": {
                                "updateTime": rfc3339(dt.datetime.now(dt.UTC)),
                                "nodeMetric": {"nodeUsage": {"resources": {"cpu": f"{cpu_m}m", "memory": "1Gi"}}},
                            },
                        },
                        subresource="status",
                    )
                except SandboxApiError as exc:
                    if exc.status != 404:  # deleted with its node a moment ago
                        raise
            self._reported_uids.add(existing[name])

        due = [
            name
            for name, uid in existing.items()
            if name in nodes
            and name not in stale
            and not has_own_kubelet(nodes[name])  # its real koordlet reports
            and not (only_new and uid in self._reported_uids)
        ]
        outcomes = await asyncio.gather(*(report(name) for name in due), return_exceptions=True)
        self._reported_uids &= set(existing.values())
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        return interval, len(existing)

    async def apf_load(self) -> None:
        """While behaviour.apf_load is set, keep one dry-run request holding the starved level's seat."""

        async def worker(i: int) -> None:
            while True:
                self.reload_behaviour()
                if not self.behaviour.get("apf_load"):
                    await asyncio.sleep(0.5)
                    continue
                cm = {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "generateName": "apf-load-",
                        "namespace": "outpost-sandbox",
                        "labels": {"outpost.sandbox/apf-load": "true"},
                    },
                }
                try:
                    await self.load_kube.create("/api/v1/namespaces/outpost-sandbox/configmaps", cm, dry_run=True)
                except SandboxApiError as exc:
                    if exc.status != 429:
                        log.warning("apf load worker %d: %s", i, exc)
                        await asyncio.sleep(0.5)
                    else:
                        await asyncio.sleep(0.02)

        await asyncio.gather(*(worker(i) for i in range(APF_WORKERS)))

    async def run(self, socks: list[socket.socket]) -> None:
        self.reload_behaviour()
        await self.refresh_pods(force=True)
        servers = [await asyncio.start_server(self.handle, sock=s, limit=1 << 20) for s in socks]
        ready = self.systems_dir / "backend.ready"
        ready.write_text(json.dumps({"ports": [s.getsockname()[1] for s in socks]}))
        log.info("backend listening on ports %s in netns %s", PORTS, netns.NETNS)

        async def pods_loop() -> None:
            while True:
                await asyncio.sleep(max(POD_REFRESH_S, self._refresh_took / POD_REFRESH_DUTY))
                await self.refresh_pods(force=True)

        try:
            await asyncio.gather(
                pods_loop(), self.refresh_nodemetrics(), self.apf_load(), *(s.serve_forever() for s in servers)
            )
        finally:
            ready.unlink(missing_ok=True)
            await self.kube.aclose()
            await self.load_kube.aclose()


def bind_sockets() -> list[socket.socket]:
    socks = []
    with netns.inside():
        for port in PORTS:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("0.0.0.0", port))  # noqa: S104 - inside the sandbox namespace only
            s.listen(512)
            s.setblocking(False)
            socks.append(s)
    return socks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m outpost_sandbox.backends")
    ap.add_argument("--state-dir", type=Path, required=True)
    ap.add_argument("--kubeconfig", type=Path, required=True)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # one line per API call every few seconds would drown the log (and says nothing new)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        socks = bind_sockets()
    except (OSError, netns.NetnsError) as exc:
        log.error("cannot listen in netns %s: %s", netns.NETNS, exc)
        return 1
    daemon = Daemon(args.state_dir, args.kubeconfig)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(daemon.run(socks))
    return 0
