"""A kubeconfig's exec credential plugin, run under the run's deadline in a session of its own.

Its process group is killed when the deadline passes, when its output passes `EXEC_OUTPUT_LIMIT`, or on any
exception or interrupt; its stderr is discarded unread, so a plugin can neither hang a run nor put a secret in
its output.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import os
import select
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from outpost import interrupt, redaction
from outpost.bounded import Deadline
from outpost.errors import ClusterAuthError

EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
EXEC_OUTPUT_LIMIT = 1024 * 1024
"""Largest ExecCredential a plugin may print (a token and a certificate and key are a few KB)."""


@dataclass
class Issued:
    token: str | None = field(default=None, repr=False)
    cert_pem: bytes | None = field(default=None, repr=False)
    key_pem: bytes | None = field(default=None, repr=False)


def run_exec_plugin(spec: Any, base: Path, server: str, ca_data: bytes | None, what: str, deadline: Deadline) -> Issued:
    """Run the exec credential plugin under the deadline; its process group is killed when time is up."""
    prefix = f"kubeconfig credentials: exec plugin of {what}"
    if not isinstance(spec, dict) or not isinstance(spec.get("command"), str) or not spec["command"]:
        raise ClusterAuthError(f"{prefix}: exec has no command")
    api_version = spec.get("apiVersion")
    if api_version not in EXEC_API_VERSIONS:
        raise ClusterAuthError(
            f"{prefix}: apiVersion {str(api_version)[:60]!r} is not one of {', '.join(EXEC_API_VERSIONS)}"
        )
    mode = spec.get("interactiveMode") or ("IfAvailable" if api_version.endswith("v1beta1") else None)
    if mode not in ("Never", "IfAvailable", "Always"):
        raise ClusterAuthError(f"{prefix}: interactiveMode must be Never, IfAvailable or Always")
    if mode == "Always":
        raise ClusterAuthError(f"{prefix}: interactiveMode Always needs a terminal, and a check has none")
    command = spec["command"]
    if os.sep in command and not Path(command).is_absolute():
        command = str(base / command)  # kubectl resolves a relative path against the kubeconfig's directory
    args = spec.get("args") or []
    if not isinstance(args, list) or any(isinstance(a, dict | list) or a is None for a in args):
        raise ClusterAuthError(f"{prefix}: args must be a list of strings")
    environment = dict(os.environ)
    entries = spec.get("env") or []
    if not isinstance(entries, list):
        raise ClusterAuthError(f"{prefix}: env must be a list of name/value entries")
    for item in entries:
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("name"), str)
            or isinstance(item.get("value"), dict | list)
        ):
            raise ClusterAuthError(f"{prefix}: every env entry needs a name and a value")
        environment[item["name"]] = str(item.get("value", ""))
    exec_spec: dict[str, Any] = {"interactive": False}
    if spec.get("provideClusterInfo"):
        cluster_info: dict[str, Any] = {"server": server}
        if ca_data:
            cluster_info["certificate-authority-data"] = base64.b64encode(ca_data).decode("ascii")
        exec_spec["cluster"] = cluster_info
    environment["KUBERNETES_EXEC_INFO"] = json.dumps(
        {"apiVersion": api_version, "kind": "ExecCredential", "spec": exec_spec}
    )
    if deadline.expired:
        raise ClusterAuthError(f"{prefix}: the deadline of {deadline.seconds:g} s ran out before it could start")
    try:
        # The user's own configured plugin, without a shell, in a session of its own (killable as a group).
        process = subprocess.Popen(
            [command, *[str(a) for a in args]],
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as error:
        hint = spec.get("installHint")
        suffix = f" ({str(hint).strip().splitlines()[0][:120]})" if hint else ""
        raise ClusterAuthError(
            f"{prefix}: cannot start {Path(command).name}: {error.strerror or type(error).__name__}{suffix}"
        ) from None
    with interrupt.tracked(process):
        try:
            stdout = _read_plugin_output(process, deadline, prefix)
        except BaseException:
            _kill_group(process)  # the cap, the deadline, an interrupt or anything else: the group goes
            raise
        finally:
            _close_pipes(process)
    if process.returncode != 0:
        # stderr is not quoted: a plugin may print anything there, secrets included.
        raise ClusterAuthError(f"{prefix}: exited with status {process.returncode}")
    return _parse_exec_output(stdout, api_version, prefix)


def _read_plugin_output(process: subprocess.Popen[bytes], deadline: Deadline, prefix: str) -> bytes:
    """The plugin's stdout (at most EXEC_OUTPUT_LIMIT bytes), read as it comes until both pipes close and the
    plugin exits, all within the deadline; stderr is read and discarded. Raises ClusterAuthError otherwise."""
    assert process.stdout is not None
    assert process.stderr is not None
    stdout_fd, stderr_fd = process.stdout.fileno(), process.stderr.fileno()
    poller = select.poll()
    open_fds = {stdout_fd, stderr_fd}
    for fd in open_fds:
        os.set_blocking(fd, False)
        poller.register(fd, select.POLLIN | select.POLLPRI)
    chunks: list[bytes] = []
    size = 0
    while open_fds:
        remaining = deadline.remaining()
        if remaining <= 0.0:
            raise _no_credentials_in_time(prefix, deadline)
        for fd, _events in poller.poll(max(1, math.ceil(remaining * 1000))):
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not data:
                poller.unregister(fd)
                open_fds.discard(fd)
            elif fd == stdout_fd:
                size += len(data)
                if size > EXEC_OUTPUT_LIMIT:
                    raise ClusterAuthError(
                        f"{prefix}: output larger than {EXEC_OUTPUT_LIMIT} bytes (the plugin was killed)"
                    )
                chunks.append(data)
            # stderr: discarded as it comes (never buffered, never quoted)
    try:
        process.wait(timeout=deadline.remaining())
    except subprocess.TimeoutExpired:
        raise _no_credentials_in_time(prefix, deadline) from None
    return b"".join(chunks)


def _no_credentials_in_time(prefix: str, deadline: Deadline) -> ClusterAuthError:
    return ClusterAuthError(
        f"{prefix}: no credentials within the deadline of {deadline.seconds:g} s (the plugin was killed)"
    )


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the plugin's whole session and reap it (never wait on its pipes: a grandchild may hold them)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=1.0)


def _close_pipes(process: subprocess.Popen[bytes]) -> None:
    for pipe in (process.stdout, process.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


def _parse_exec_output(stdout: bytes, api_version: str, prefix: str) -> Issued:
    if len(stdout) > EXEC_OUTPUT_LIMIT:
        raise ClusterAuthError(f"{prefix}: output larger than {EXEC_OUTPUT_LIMIT} bytes")
    try:
        document = json.loads(stdout)
    except ValueError:
        raise ClusterAuthError(f"{prefix}: output is not an ExecCredential JSON object") from None
    if not isinstance(document, dict) or document.get("kind") != "ExecCredential":
        raise ClusterAuthError(f"{prefix}: output is not an ExecCredential")
    if document.get("apiVersion") != api_version:
        raise ClusterAuthError(f"{prefix}: output apiVersion does not match the requested {api_version}")
    status = document.get("status")
    if not isinstance(status, dict):
        raise ClusterAuthError(f"{prefix}: ExecCredential has no status")
    issued = Issued()
    token = status.get("token")
    if isinstance(token, str) and token.strip():
        if any(c in token.strip() for c in "\r\n"):
            raise ClusterAuthError(f"{prefix}: the token is not a single line")
        issued.token = token.strip()
        redaction.register(issued.token)
    cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
    if isinstance(cert, str) and isinstance(key, str) and cert and key:
        redaction.register(key)
        issued.cert_pem, issued.key_pem = cert.encode(), key.encode()
    return issued
