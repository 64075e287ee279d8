"""Kubeconfig documents for tests: one cluster `c`, one user `u` and one context `c` joining them, which is what
a test of the client's kubeconfig handling (as opposed to kubeconfig parsing itself) needs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def exec_user(command: str | Path, **extra: Any) -> dict[str, Any]:
    """A user whose credential comes from an exec plugin (client.authentication.k8s.io/v1, never interactive)."""
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": str(command),
            "interactiveMode": "Never",
            **extra,
        }
    }


def kubeconfig_document(
    server: str, user: dict[str, Any] | None, *, ca_file: str | Path | None = None, context: str = "c", **cluster: Any
) -> dict[str, Any]:
    """Cluster `c` at `server` (trusting `ca_file`, with any other `cluster` fields), user `u` (none if `user` is
    None), context `c`; `context` names the current one."""
    entry: dict[str, Any] = {
        "server": server,
        **({"certificate-authority": str(ca_file)} if ca_file else {}),
        **cluster,
    }
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": context,
        "clusters": [{"name": "c", "cluster": entry}],
        "contexts": [{"name": "c", "context": {"cluster": "c", **({"user": "u"} if user is not None else {})}}],
        "users": [{"name": "u", "user": user}] if user is not None else [],
    }


def write_kubeconfig(path: Path, server: str, user: dict[str, Any] | None, **options: Any) -> Path:
    """`kubeconfig_document(server, user, **options)` written to `path`."""
    path.write_text(yaml.safe_dump(kubeconfig_document(server, user, **options)))
    return path
