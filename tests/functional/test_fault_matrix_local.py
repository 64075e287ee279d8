"""The fault matrix of local inputs: configuration files, kubeconfigs, token files, CA bundles, client keys and exec
credential plugins that are not what they claim to be, each run through the real command line (or a function's
cold start) in a CHILD process (`child_run`).

A child, because against a broken build a FIFO, `/dev/zero`, a sparse file or an alias bomb must hang or grow the
child, not the tests: it is killed at `CHILD_TIMEOUT` and its address space capped at `ADDRESS_SPACE_LIMIT`. Each
case asserts `assert_bounded`, the outcome (`error`, exit 2, or a refused configuration, exit 64), the bad input
named by path, and no request to the heartbeat receiver (nor, for a URL with a password, to the API server).
"""

from __future__ import annotations

import base64
import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from child_run import (
    SLACK_SECONDS,
    ChildOutcome,
    assert_bounded,
    assert_matrix,
    child_environment,
    each_case,
    run_child,
)
from hostile import HostileServer, healthy
from local_server import LocalServer

from kit.certs import distinct_cas
from kit.kubeconfigs import kubeconfig_document
from outpost_sandbox.pki import LocalhostTls

DEADLINE = 2.0
"""The check deadline of every case."""
CHILD_TIMEOUT = DEADLINE + SLACK_SECONDS + 3.0
"""A child still running then is killed (and its case fails): a hang costs 10 s, not forever."""
ADDRESS_SPACE_LIMIT = 1 << 30
"""RLIMIT_AS of the child: a healthy run needs a fraction; a broken one fails here instead of exhausting the host."""
EXIT_ERROR, EXIT_CONFIG = 2, 64

KUBECONFIG_TOKEN = "kc-local-Tw4Hs9Pd2Mv"
API_TOKEN = "sa-local-Qe7Vb3Kx9Lm"
PASSWORD = "userinfo-pw-Zq8Lr3Nx"
STDERR_SECRET = "plugin-stderr-Jb6Wc2Yt"
HEARTBEAT_TOKEN = "hb_local_Fm4Rt8Yq2W"
SECRETS = (KUBECONFIG_TOKEN, API_TOKEN, PASSWORD, STDERR_SECRET, HEARTBEAT_TOKEN)

_PROLOGUE = (
    f"import resource, sys\nresource.setrlimit(resource.RLIMIT_AS, ({ADDRESS_SPACE_LIMIT}, {ADDRESS_SPACE_LIMIT}))\n"
)
CLI = _PROLOGUE + "from outpost.cli import main\nsys.exit(main(sys.argv[1:]))\n"
"""The real command line (`child_run.run_cli`), with the address space capped."""
COLD_START = _PROLOGUE + (
    "from outpost.errors import ConfigError\n"
    "from outpost.runtime.common import cold_start_settings\n"
    "try:\n"
    "    cold_start_settings('apiserver-health')\n"
    "except ConfigError as error:\n"
    "    print(f'cold start refused: {error}', file=sys.stderr)\n"
    "    sys.exit(64)\n"
    "print('cold start done')\n"
)
"""A function's cold start ($OUTPOST_CONFIG), as `functions/apiserver_health/main.py` runs it on import."""

ALIAS_BOMB = "".join(
    [f'  - &lol0 ["{"lol" * 10}"]\n'] + [f"  - &lol{i} [{', '.join([f'*lol{i - 1}'] * 9)}]\n" for i in range(1, 10)]
)
"""Ten anchored lists, each nine aliases of the one before: 9**9 leaves (gigabytes) once anything walks it."""


@dataclass(frozen=True)
class Invocation:
    argv: list[str]
    named: str
    """What the output must name: the bad input's path, or its cluster entry or field."""
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Arena:
    tmp: Path
    pki: LocalhostTls
    big: Path
    """Module-wide directory of the large inputs (made once)."""
    server: HostileServer
    receiver: LocalServer

    @property
    def environment(self) -> dict[str, str]:
        return {
            "FM_HEARTBEAT": f"{self.receiver.base_url}/api/heartbeat/{HEARTBEAT_TOKEN}",
            "FM_API_TOKEN": API_TOKEN,
            "KUBECONFIG": "",
        }

    def config(self, auth: dict[str, Any], text: str | None = None) -> Path:
        document = {
            "environment": "fm-local",
            "cluster": {
                "name": "local",
                "auth": auth,
                "deadline_seconds": DEADLINE,
                "connect_timeout_seconds": 1,
                "read_timeout_seconds": 1,
            },
            "heartbeat": {"timeout_seconds": 0.5, "retries": 0},
            "checks": {"apiserver-health": {"heartbeat": "env:FM_HEARTBEAT"}},
        }
        path = self.tmp / "outpost.yaml"
        path.write_text(text if text is not None else yaml.safe_dump(document))
        return path

    def kubeconfig_document(self, user: dict[str, Any] | None = None, **cluster: Any) -> dict[str, Any]:
        user = user if user is not None else {"token": KUBECONFIG_TOKEN}
        return kubeconfig_document(cluster.pop("server", self.server.url), user, ca_file=self.pki.ca_file, **cluster)

    def kubeconfig(self, user: dict[str, Any] | None = None, **cluster: Any) -> Path:
        path = self.tmp / "kubeconfig"
        path.write_text(yaml.safe_dump(self.kubeconfig_document(user, **cluster)))
        return path

    def run(self, config: Path, named: str) -> Invocation:
        """`outpost run apiserver-health --config CONFIG --json` (the configured heartbeat included)."""
        return Invocation(["run", "apiserver-health", "--config", str(config), "--json"], named)

    def with_kubeconfig(self, kubeconfig: Path | str, named: str) -> Invocation:
        return self.run(self.config({"mode": "kubeconfig", "path": str(kubeconfig)}), named)

    def fifo(self, name: str) -> Path:
        path = self.tmp / name
        os.mkfifo(path)
        return path

    def sparse(self, name: str, size: int = 16 << 30) -> Path:
        path = self.tmp / name
        with path.open("wb") as handle:
            handle.truncate(size)
        return path

    def directory(self, name: str) -> Path:
        path = self.tmp / name
        path.mkdir()
        return path

    def plugin(self, script: str) -> str:
        path = self.tmp / "plugin.sh"
        path.write_text("#!/bin/sh\n" + script)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
        return str(path)


def exec_user(command: str, **extra: Any) -> dict[str, Any]:
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": command,
            "interactiveMode": "Never",
            **extra,
        }
    }


@dataclass(frozen=True)
class Case:
    name: str
    arrange: Callable[[Arena], Invocation]
    cause: str
    """A regex the error summary (or the refused configuration's output) must match."""
    exit_code: int = EXIT_ERROR
    cold_start: bool = False
    after: Callable[[Arena, ChildOutcome], None] | None = None


# -- arrangements ------------------------------------------------------------------------------------------------


def _given(make: Callable[[Arena], Path], invoke: Callable[[Arena, Path], Invocation]) -> Callable[[Arena], Invocation]:
    """Make the bad input, then invoke Outpost with it."""
    return lambda arena: invoke(arena, make(arena))


def _config_file(make: Callable[[Arena], Path]) -> Callable[[Arena], Invocation]:
    """The input as the configuration file of `outpost run`."""
    return _given(make, lambda arena, path: arena.run(path, str(path)))


def _validate_dev_zero(_arena: Arena) -> Invocation:
    return Invocation(["validate", "--config", "/dev/zero"], "/dev/zero")


def _cold_start(make: Callable[[Arena], Path]) -> Callable[[Arena], Invocation]:
    """The input as `OUTPOST_CONFIG` of a function's cold start."""
    return _given(make, lambda _arena, path: Invocation([], str(path), {"OUTPOST_CONFIG": str(path)}))


def _config_alias_bomb(arena: Arena) -> Path:
    # The bomb sits in another check's params, which apiserver-health's cold start does not judge: nothing but the
    # YAML loader can refuse it.
    document = yaml.safe_load(
        arena.config(
            {
                "mode": "token",
                "server": arena.server.url,
                "token": "env:FM_API_TOKEN",
                "ca_file": str(arena.pki.ca_file),
            }
        ).read_text()
    )
    checks = document.pop("checks")
    text = (
        yaml.safe_dump(document)
        + yaml.safe_dump({"checks": checks})
        + "  gang-scheduling:\n    enabled: false\n    params:\n      lol:\n"
        + ALIAS_BOMB.replace("  - ", "      - ")
    )
    path = arena.tmp / "bomb.yaml"
    path.write_text(text)
    return path


def _kubeconfig_input(make: Callable[[Arena], Path]) -> Callable[[Arena], Invocation]:
    """The input as the kubeconfig a configuration names."""
    return _given(make, lambda arena, path: arena.with_kubeconfig(path, str(path)))


def _big_kubeconfig(arena: Arena) -> Invocation:
    return arena.with_kubeconfig(_six_mb_kubeconfig(arena), str(arena.big / "kubeconfig-6mb"))


def _six_mb_kubeconfig(arena: Arena) -> Path:
    """A real, valid kubeconfig of 6 MB: the case's cluster first, then 1,250 more with inline CA and client keys."""
    path = arena.big / "kubeconfig-6mb"
    document = arena.kubeconfig_document()
    filler = base64.b64encode(os.urandom(1200)).decode()
    for index in range(1250):
        document["clusters"].append(
            {
                "name": f"other-{index}",
                "cluster": {
                    "server": f"https://10.0.{index // 250}.{index % 250}:6443",
                    "certificate-authority-data": filler,
                },
            }
        )
        document["users"].append(
            {"name": f"other-{index}", "user": {"client-certificate-data": filler, "client-key-data": filler}}
        )
        document["contexts"].append(
            {"name": f"other-{index}", "context": {"cluster": f"other-{index}", "user": f"other-{index}"}}
        )
    path.write_text(yaml.safe_dump(document))
    assert path.stat().st_size > 6_000_000
    return path


def _kubeconfig_bomb(user_yaml: str) -> Callable[[Arena], Invocation]:
    def arrange(arena: Arena) -> Invocation:
        path = arena.tmp / "kubeconfig"
        path.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
            f"clusters: [{{name: c, cluster: {{server: '{arena.server.url}', "
            f"certificate-authority: '{arena.pki.ca_file}'}}}}]\n"
            "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
            "x-lol:\n" + ALIAS_BOMB + "users:\n- name: u\n  user:\n" + user_yaml.format(plugin=arena.plugin("exit 0\n"))
        )
        return arena.with_kubeconfig(path, str(path))

    return arrange


def _token_file(make: Callable[[Arena], Path]) -> Callable[[Arena], Invocation]:
    def arrange(arena: Arena) -> Invocation:
        path = make(arena)
        return arena.with_kubeconfig(arena.kubeconfig({"tokenFile": str(path)}), str(path))

    return arrange


def _huge_token(arena: Arena) -> Path:
    path = arena.big / "token-150mb"
    if not path.exists():
        with path.open("wb") as handle:
            chunk = b"a" * (1 << 20)
            for _ in range(150):
                handle.write(chunk)
    return path


def _ca_file(make: Callable[[Arena], Path]) -> Callable[[Arena], Invocation]:
    def arrange(arena: Arena) -> Invocation:
        path = make(arena)
        return arena.with_kubeconfig(arena.kubeconfig(None, **{"certificate-authority": str(path)}), str(path))

    return arrange


def _token_mode_ca_file(make: Callable[[Arena], Path]) -> Callable[[Arena], Invocation]:
    def arrange(arena: Arena) -> Invocation:
        path = make(arena)
        config = arena.config(
            {"mode": "token", "server": arena.server.url, "token": "env:FM_API_TOKEN", "ca_file": str(path)}
        )
        return arena.run(config, str(path))

    return arrange


def _client_key_fifo(arena: Arena) -> Invocation:
    key = arena.fifo("client.key")
    user = {"client-certificate": str(arena.pki.cert_file), "client-key": str(key)}
    return arena.with_kubeconfig(arena.kubeconfig(user), str(key))


def _plugin(script: str) -> Callable[[Arena], Invocation]:
    def arrange(arena: Arena) -> Invocation:
        return arena.with_kubeconfig(arena.kubeconfig(exec_user(arena.plugin(script))), "exec plugin of user u")

    return arrange


def _userinfo_in_kubeconfig(arena: Arena) -> Invocation:
    # An anonymous user: the password in the URL would be the only credential sent (as Basic auth).
    address = arena.server.url.removeprefix("https://")
    document = arena.kubeconfig_document(server=f"https://probe:{PASSWORD}@{address}")
    document["contexts"][0]["context"].pop("user")
    document["users"] = []
    path = arena.tmp / "kubeconfig"
    path.write_text(yaml.safe_dump(document))
    return arena.with_kubeconfig(
        path,
        f"cluster c carries user information (user:password@); Outpost never sends a password: give {arena.server.url}",
    )


def _userinfo_in_config(arena: Arena) -> Invocation:
    address = arena.server.url.removeprefix("https://")
    config = arena.config(
        {
            "mode": "token",
            "server": f"https://probe:{PASSWORD}@{address}",
            "token": "env:FM_API_TOKEN",
            "ca_file": str(arena.pki.ca_file),
        }
    )
    return arena.run(
        config, f"cluster.auth.token.server: must not carry user information (user:password@): {arena.server.url}"
    )


def _nothing_reached_the_server(arena: Arena, _outcome: ChildOutcome) -> None:
    assert arena.server.requests == [], "a request (with the URL's password) reached the API server"


def _dev_zero(_arena: Arena) -> Path:
    return Path("/dev/zero")


NOT_REGULAR = r"is a {}, not a regular file"
FIFO = NOT_REGULAR.format(r"FIFO \(named pipe\)")
DEVICE = NOT_REGULAR.format("character device")
KUBECONFIG_ALIAS = r"kubeconfig credentials: \S+ line \d+ column \d+: YAML aliases expand this value past"

CASES = [
    # -- the configuration file ------------------------------------------------------------------------------------
    Case(
        "configuration is a FIFO",
        _config_file(lambda a: a.fifo("outpost.yaml")),
        rf"cannot read configuration \S+outpost\.yaml: {FIFO}",
        EXIT_CONFIG,
    ),
    Case(
        "configuration is /dev/zero (validate)",
        _validate_dev_zero,
        rf"cannot read configuration /dev/zero: {DEVICE}",
        EXIT_CONFIG,
    ),
    Case(
        "configuration is /dev/zero (run)",
        _config_file(_dev_zero),
        rf"cannot read configuration /dev/zero: {DEVICE}",
        EXIT_CONFIG,
    ),
    Case(
        "configuration is a 16 GiB sparse file",
        _config_file(lambda a: a.sparse("outpost.yaml")),
        r"cannot read configuration \S+outpost\.yaml: is 16 GiB, over the 1 MiB limit for a configuration",
        EXIT_CONFIG,
    ),
    Case(
        "cold start: $OUTPOST_CONFIG is a FIFO",
        _cold_start(lambda a: a.fifo("outpost.yaml")),
        rf"cannot read configuration \S+outpost\.yaml: {FIFO}",
        EXIT_CONFIG,
        cold_start=True,
    ),
    Case(
        "cold start: $OUTPOST_CONFIG is /dev/zero",
        _cold_start(_dev_zero),
        rf"cannot read configuration /dev/zero: {DEVICE}",
        EXIT_CONFIG,
        cold_start=True,
    ),
    Case(
        "cold start: alias bomb in the configuration",
        _cold_start(_config_alias_bomb),
        r"bomb\.yaml line \d+ column \d+: YAML aliases expand this value past",
        EXIT_CONFIG,
        cold_start=True,
    ),
    Case(
        "configuration server with user:password@",
        _userinfo_in_config,
        r"cluster\.auth\.token\.server: must not carry user information",
        EXIT_CONFIG,
        after=_nothing_reached_the_server,
    ),
    # -- kubeconfigs -----------------------------------------------------------------------------------------------
    Case("kubeconfig is a FIFO", _kubeconfig_input(lambda a: a.fifo("kubeconfig")), rf"kubeconfig \S+: {FIFO}"),
    Case("kubeconfig is /dev/zero", _kubeconfig_input(_dev_zero), rf"kubeconfig /dev/zero: {DEVICE}"),
    Case(
        "kubeconfig is a 16 GiB sparse file",
        _kubeconfig_input(lambda a: a.sparse("kubeconfig")),
        r"kubeconfig \S+: is 16 GiB, over the 4 MiB limit for a kubeconfig",
    ),
    Case(
        "kubeconfig of 6 MB", _big_kubeconfig, r"kubeconfig \S+: is 6(\.\d)? MiB, over the 4 MiB limit for a kubeconfig"
    ),
    Case("alias bomb in a kubeconfig token", _kubeconfig_bomb("    token: *lol9\n"), KUBECONFIG_ALIAS),
    Case(
        "alias bomb in exec args",
        _kubeconfig_bomb(
            "    exec: {{apiVersion: client.authentication.k8s.io/v1, command: '{plugin}', interactiveMode: Never, "
            "args: *lol9}}\n"
        ),
        KUBECONFIG_ALIAS,
    ),
    Case(
        "kubeconfig server with user:password@",
        _userinfo_in_kubeconfig,
        r"the server of cluster c carries user information",
        after=_nothing_reached_the_server,
    ),
    # -- token files -----------------------------------------------------------------------------------------------
    Case("token file is a FIFO", _token_file(lambda a: a.fifo("token")), rf"token file \S+: {FIFO}"),
    Case("token file is /dev/zero", _token_file(_dev_zero), rf"token file /dev/zero: {DEVICE}"),
    Case(
        "token file of 150 MB",
        _token_file(_huge_token),
        r"token file \S+: is 150 MiB, over the 64 KiB limit for a token file",
    ),
    # -- CA bundles and client keys --------------------------------------------------------------------------------
    Case("CA file is a FIFO", _ca_file(lambda a: a.fifo("ca.crt")), rf"CA bundle \S+: {FIFO}"),
    Case("CA file is /dev/zero", _ca_file(_dev_zero), rf"CA bundle /dev/zero: {DEVICE}"),
    Case("CA file is a directory", _ca_file(lambda a: a.directory("ca.d")), NOT_REGULAR.format("directory")),
    Case(
        "CA file is a 16 GiB sparse file (token mode)",
        _token_mode_ca_file(lambda a: a.sparse("ca.crt")),
        r"CA bundle \S+: is 16 GiB, over the 4 MiB limit for a CA bundle",
    ),
    Case("CA file is a FIFO (token mode)", _token_mode_ca_file(lambda a: a.fifo("ca.crt")), rf"CA bundle \S+: {FIFO}"),
    Case(
        "CA bundle of 20,000 certificates (9.4 MiB)",
        _ca_file(lambda a: a.big / "bundle-20000.pem"),
        r"CA bundle \S+: is 9\.4 MiB, over the 4 MiB limit for a CA bundle",
    ),
    Case(
        "CA bundle of 8,000 certificates (3.5 MiB)",
        _ca_file(lambda a: a.big / "bundle-8000.pem"),
        r"CA bundle \S+ of cluster c holds 8000 certificates, over the limit of 1000",
    ),
    Case("client key is a FIFO", _client_key_fifo, rf"client key \S+: {FIFO}"),
    # -- exec credential plugins -----------------------------------------------------------------------------------
    Case(
        "exec plugin prints without end",
        _plugin("exec yes ExecCredential\n"),
        r"exec plugin of user u of context c: output larger than 1048576 bytes \(the plugin was killed\)",
    ),
    Case(
        "exec plugin writes stderr without end",
        _plugin(f"exec yes 'refresh token {STDERR_SECRET} expired' >&2\n"),
        r"exec plugin of user u of context c: no credentials within the deadline of 2 s \(the plugin was killed\)",
    ),
]


# -- fixtures and the test -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Large inputs shared by the cases: bundles of 20,000 and 8,000 distinct CA certificates (OpenSSL loads
    duplicates much faster, so they would not show the cost: 20,000 distinct ones take 24 s, 8,000 take 3.7 s)."""
    directory = tmp_path_factory.mktemp("big")
    pems = distinct_cas(20000, "fault-matrix-ca", days=3650)
    (directory / "bundle-20000.pem").write_bytes(b"".join(pems))
    (directory / "bundle-8000.pem").write_bytes(b"".join(pems[:8000]))  # within the byte limit: the count refuses
    return directory


@pytest.fixture
def arena(tmp_path: Path, pki: LocalhostTls, big: Path, receiver: LocalServer) -> Iterator[Arena]:
    with HostileServer(healthy(), pki.cert_file, pki.key_file) as server:
        yield Arena(tmp_path, pki, big, server, receiver)


def test_the_matrix_has_enough_cases() -> None:
    assert_matrix(CASES, 15)


@each_case(CASES)
def test_local_fault(case: Case, arena: Arena) -> None:
    invocation = case.arrange(arena)
    code = COLD_START if case.cold_start else CLI
    outcome = run_child(
        [sys.executable, "-c", code, *invocation.argv],
        env=child_environment({**arena.environment, **invocation.env}),
        timeout=CHILD_TIMEOUT,
        cwd=str(arena.tmp),
    )

    assert_bounded(outcome, DEADLINE, SECRETS)
    assert outcome.returncode == case.exit_code, f"exit {outcome.returncode}: {outcome.output[-1500:]}"
    if case.exit_code == EXIT_ERROR:
        results = json.loads(outcome.stdout)
        assert [(r["check"], r["status"], r["reported"]) for r in results] == [("apiserver-health", "error", False)]
        named = results[0]["summary"]
    else:
        named = outcome.stderr
    assert re.search(case.cause, named), named
    assert invocation.named in named, f"{invocation.named!r} is not named in: {named}"
    assert "\n" not in named.strip() or case.exit_code == EXIT_CONFIG
    assert arena.receiver.requests == [], "the heartbeat was contacted although nothing was observed"
    if case.after is not None:
        case.after(arena, outcome)
