"""Capture what real clients send on one HTTP/1.1 connection, for the proxy's framing tests.

    PYTHONPATH=tests .venv/bin/python -m bench.capture_requests KUBECTL OUT_DIR

A TLS server like the proxy records every byte kubectl, curl (chunked) and kubernetes-client send and answers
with small JSON 200s; tests/unit/test_bench_harness.py replays the files through `RequestFramer`.
"""

from __future__ import annotations

import base64
import json
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import yaml

from bench.proxy import RequestFramer, RequestHead, throwaway_tls

RESOURCES = [
    {"name": "pods", "namespaced": True, "kind": "Pod", "verbs": ["get", "list", "patch"]},
    {"name": "pods/status", "namespaced": True, "kind": "Pod", "verbs": ["get", "patch"]},
    {"name": "nodes", "namespaced": False, "kind": "Node", "verbs": ["get", "list"]},
]


def answer(head: RequestHead) -> bytes:
    """Just enough of an API server for kubectl's discovery, a list and a patch."""
    path = head.target.split("?", 1)[0]
    body: dict[str, object]
    if path == "/api":
        body = {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
    elif path == "/apis":
        body = {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}
    elif path == "/api/v1":
        body = {"kind": "APIResourceList", "groupVersion": "v1", "resources": RESOURCES}
    elif head.method == "PATCH":
        body = {
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": {"name": "p", "namespace": "ns"},
            "status": {"phase": "Running"},
        }
    else:
        body = {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": []}
    data = json.dumps(body).encode()
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
        + str(len(data)).encode()
        + b"\r\n\r\n"
        + data
    )


def serve_one(listener: socket.socket, context: ssl.SSLContext, sink: bytearray) -> None:
    raw, _ = listener.accept()
    with context.wrap_socket(raw, server_side=True) as conn:
        framer = RequestFramer()
        while True:
            data = conn.recv(65536)
            if not data:
                return
            sink += data
            for item in framer.feed(data):
                if isinstance(item, RequestHead):
                    conn.sendall(answer(item))


def capture(name: str, command: list[str], out_dir: Path, context: ssl.SSLContext, env: dict[str, str]) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    sink = bytearray()
    thread = threading.Thread(target=serve_one, args=(listener, context, sink), daemon=True)
    thread.start()
    subprocess.run(
        [part.replace("PORT", str(port)) for part in command], env=env, capture_output=True, timeout=60, check=False
    )
    thread.join(5)
    listener.close()
    (out_dir / f"{name}.bin").write_bytes(bytes(sink))


def main() -> int:
    kubectl, out_dir = sys.argv[1], Path(sys.argv[2])
    out_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="bench-capture-"))
    context, ca = throwaway_tls(scratch)
    context.set_alpn_protocols(["http/1.1"])
    kubeconfig = scratch / "kubeconfig"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(scratch), "KUBECONFIG": str(kubeconfig)}

    def write_kubeconfig(port_marker: str = "PORT") -> None:
        kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "c",
                    "clusters": [
                        {
                            "name": "c",
                            "cluster": {
                                "server": f"https://127.0.0.1:{port_marker}",
                                "certificate-authority-data": base64.b64encode(ca.read_bytes()).decode(),
                            },
                        }
                    ],
                    "users": [{"name": "u", "user": {"token": "captured-placeholder-token"}}],
                    "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                }
            )
        )

    def run_with_port(name: str, command: list[str]) -> None:
        # The kubeconfig names the port, so it is written once the listener has one: capture() substitutes PORT
        # in the command only, hence a shell that writes the kubeconfig first.
        capture(name, command, out_dir, context, env)

    write_kubeconfig()
    script = f"sed -i 's/127.0.0.1:[0-9A-Z]*/127.0.0.1:PORT/' {kubeconfig} && {kubectl} --request-timeout=5s "
    run_with_port("kubectl-get-nodes", ["bash", "-c", script + "get nodes -o name"])
    write_kubeconfig()
    run_with_port(
        "kubectl-patch-status",
        [
            "bash",
            "-c",
            script + 'patch pod p -n ns --subresource=status --type=merge -p \'{"status":{"phase":"Running"}}\'',
        ],
    )
    run_with_port(
        "curl-chunked",
        [
            "curl",
            "-s",
            "--cacert",
            str(ca),
            "-H",
            "Transfer-Encoding: chunked",
            "--data-binary",
            '{"a": "first request, chunked"}',
            "https://127.0.0.1:PORT/apis/x/v1/things",
            "--next",
            "--cacert",
            str(ca),
            "https://127.0.0.1:PORT/api/v1/nodes?limit=1",
        ],
    )
    client = (
        "from kubernetes import client, config; "
        f"api = config.new_client_from_config(config_file={str(kubeconfig)!r}); "
        "client.CoreV1Api(api).patch_namespaced_pod_status('p', 'ns', {'status': {'phase': 'Running'}}); "
        "client.CoreV1Api(api).list_node(limit=1); "
        "client.CoreV1Api(api).patch_namespaced_pod_status('q', 'ns', {'status': {'phase': 'Running'}})"
    )
    write_kubeconfig()
    run_with_port(
        "k8s-client-patch-then-list",
        [
            "bash",
            "-c",
            f"sed -i 's/127.0.0.1:[0-9A-Z]*/127.0.0.1:PORT/' {kubeconfig} && {sys.executable} -c \"{client}\"",
        ],
    )
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
