"""The command line's contract: output shapes and exit statuses (0/1/2/64)."""

from __future__ import annotations

import json
import re
import signal
import socket
import threading
from pathlib import Path

import pytest
import yaml

from outpost import cli
from outpost.cli import main, print_results
from outpost.config import ClusterSettings, KubeconfigAuth, Settings
from outpost.errors import OutpostError
from outpost.result import Result, Status
from outpost.runbook import Runbook


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_json_names_every_check(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "list", "--json")
    assert code == 0
    checks = {c["name"]: c for c in json.loads(out)}
    assert checks["apiserver-health"]["severity"] == "critical"
    assert set(checks["apiserver-health"]) >= {"name", "system", "layer", "severity", "schedule"}


def test_list_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "list")
    assert code == 0
    assert out.splitlines()[0].split() == ["NAME", "SYSTEM", "LAYER", "SEVERITY", "SCHEDULE"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run"], "give check names or --all"),
        (["run", "no-such-check"], "unknown check(s): no-such-check"),
        (["run", "apiserver-health", "--all"], "not both"),
    ],
)
def test_usage_errors_exit_64(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 64
    assert message in err


def test_argparse_errors_exit_64(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["run", "--bogus-flag"])
    assert caught.value.code == 64


def test_validate_names_bad_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"environment": "Prod!", "cluster": {"name": "c"}}))
    code, out, err = run(capsys, "validate", "--config", str(path))
    assert code == 64
    assert "environment: " in err
    assert "cluster.auth: Field required" in err
    assert out == ""


def test_validate_shipped_local_environment(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", "--env", "local")
    assert code == 0
    assert "apiserver-health" in out


def test_unreachable_cluster_is_exit_2_with_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("CLI_TEST_TOKEN", "tok")
    path = tmp_path / "env.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "environment": "t",
                "cluster": {
                    "name": "gone",
                    "auth": {"mode": "token", "server": f"https://127.0.0.1:{port}", "token": "env:CLI_TEST_TOKEN"},
                },
                "checks": {"apiserver-health": {}},
            }
        )
    )
    code, out, _ = run(capsys, "run", "--all", "--config", str(path), "--json")
    assert code == 2
    (result,) = json.loads(out)
    assert result["status"] == "error"
    assert result["summary"] == "GET /livez on cluster gone: connection refused"
    assert result["reported"] is False
    (step,) = result["next_steps"]
    assert step["failure"] == "unreachable"
    assert step["command"] == "outpost run apiserver-triage --env t"


RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_each_error_line_is_followed_by_its_cause_and_next_command(capsys: pytest.CaptureFixture[str]) -> None:
    stale = Runbook("stale", "Lease stale", "{name} stopped renewing", "kubectl -n {ns} get lease {name} -o yaml")
    logs = Runbook("gone", "Holder gone", "no pod holds it", "kubectl -n {ns} get pods -o wide", "upstream: {url}")
    result = Result.failed(
        "leader-leases",
        "2 leader leases unhealthy",
        [
            stale.at("lease ks/a: observed renewTime 7200 s ago", ns="ks", name="a"),
            logs.at("lease ks/b: no running candidate", ns="ks", url="https://koordinator.sh"),
        ],
    )
    print_results([result])
    lines = capsys.readouterr().out.splitlines()[2:]
    assert lines == [
        "  leader-leases: lease ks/a: observed renewTime 7200 s ago",
        "    cause: a stopped renewing",
        "    next:  kubectl -n ks get lease a -o yaml",
        "  leader-leases: lease ks/b: no running candidate",
        "    cause: no pod holds it",
        "    next:  kubectl -n ks get pods -o wide",
        "    see:   upstream: https://koordinator.sh",
    ]


def test_a_failing_parent_says_what_it_asked_for_its_dependants(capsys: pytest.CaptureFixture[str]) -> None:
    result = Result(
        check="apiserver-health",
        status=Status.ERROR,
        summary="apiserver-health: connection refused",
        errors=["apiserver-health: connection refused"],
        details={"hold_back": "held back koord-manager-health 5 min, koord-webhook 5 min"},
    )
    print_results([result])
    lines = capsys.readouterr().out.splitlines()[2:]
    assert lines == ["  apiserver-health: hold-back: held back koord-manager-health 5 min, koord-webhook 5 min"]


def test_table_and_lines_show_server_controls_as_escapes(capsys: pytest.CaptureFixture[str]) -> None:
    result = Result(
        check="apiserver-health",
        status=Status.FAILED,
        summary="failing: etcd\x1b]0;owned\x07 \x9b2J",
        errors=["apiserver /readyz: etcd\x1b[2J failed\x7f\rALL OK\nsecond line"],
    )
    print_results([result])
    out = capsys.readouterr().out
    assert not RAW_CONTROL.search(out), repr(out)
    lines = out.splitlines()
    assert len(lines) == 3  # header, one row, one error line: a newline from a server does not add a line
    assert lines[1].endswith("failing: etcd\\x1b]0;owned\\x07 \\x9b2J")
    assert lines[2] == "  apiserver-health: apiserver /readyz: etcd\\x1b[2J failed\\x7f\\rALL OK\\nsecond line"


def test_stderr_lines_are_one_line_and_escaped(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(_args: object) -> int:
        raise OutpostError("server said \x1b[31mno\x1b[0m\nand more")

    monkeypatch.setattr(cli, "cmd_validate", broken)
    code, _, err = run(capsys, "validate")
    assert code == 2
    assert err == "outpost validate: server said \\x1b[31mno\\x1b[0m\\nand more\n"


def test_ctrl_c_in_another_command_is_one_line_and_130(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(_args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_validate", interrupted)
    code, _, err = run(capsys, "validate")
    assert code == 130
    assert err == "outpost validate: interrupted by SIGINT\n"


def test_run_restores_the_signal_handlers_it_installed(capsys: pytest.CaptureFixture[str]) -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    code, _, _ = run(capsys, "run", "no-such-check")
    assert code == 64
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_run_many_runs_on_daemon_threads_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, bool]] = []

    def fake_run_check(_settings: object, name: str, **_kwargs: object) -> Result:
        seen.append((name, threading.current_thread().daemon))
        return Result(check=name, status=Status.OK, summary="fine")

    monkeypatch.setattr(cli, "run_check", fake_run_check)
    settings = Settings(environment="adhoc", cluster=ClusterSettings(name="c", auth=KubeconfigAuth(mode="kubeconfig")))
    results = cli.run_many(settings, ["a", "b", "c"])
    assert [r.check for r in results] == ["a", "b", "c"]
    assert sorted(seen) == [("a", True), ("b", True), ("c", True)]
