"""Run Outpost in a child process and measure what the fault matrix asserts about it.

A case that makes Outpost hold a gigabyte must not make the tests hold it, and the kernel measures a child's peak
RSS exactly (`wait4`). `run_child` runs in its own session with output to files (no pipe to fill), kills the
session past `timeout`; `assert_bounded` is the common contract: ended within budget + `SLACK_SECONDS`, RSS under
`MAX_RSS_MB`, no secret in the output, no traceback.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

SLACK_SECONDS = 5.0
"""What a case may take beyond its deadline (interpreter start-up, imports, a killed plugin)."""
MAX_RSS_MB = 200.0
"""The ceiling of a child's peak resident set, whatever the peer sends."""


@dataclass(frozen=True)
class ChildOutcome:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    peak_rss_mb: float
    killed: bool
    """True when the child outlived `timeout` and was killed (the case then fails)."""

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


_LAUNCHER = r"""
import os, signal, sys
report, argv = sys.argv[1], sys.argv[2:]
pid = os.posix_spawnp(argv[0], argv, os.environ)
for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(number, lambda received, _frame: os.kill(pid, received))
_, status, usage = os.wait4(pid, 0)
with open(report, "w") as out:
    out.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
sys.exit(128 - code if code < 0 else code)
"""
"""Starts the case's process and reports its peak RSS. Why a launcher: the kernel's `ru_maxrss` of a child
includes the memory of the process it was forked from until its `exec` (the high-water mark of the old
address space is kept), so a child forked straight from a pytest process holding 400 MB would report 400 MB.
Forked from this small launcher, the case's figure is its own. Signals to the launcher are forwarded; its
exit code is the case's (128 + N for a signal N, as a shell reports it)."""


def run_child(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 60.0,
    stdin: bytes | None = None,
    cwd: str | None = None,
    after_start: float | None = None,
    send_signal: int | None = None,
) -> ChildOutcome:
    """Run `argv`; optionally send `send_signal` to it `after_start` seconds after it started."""
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.TemporaryFile() as inp,
        tempfile.TemporaryDirectory() as scratch,
    ):
        if stdin is not None:
            inp.write(stdin)
            inp.seek(0)
        report = os.path.join(scratch, "maxrss")
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-S", "-c", _LAUNCHER, report, *argv],
            stdin=inp,
            stdout=out,
            stderr=err,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
        killed = False
        signalled = False
        while True:
            code = process.poll()
            if code is not None:
                break
            elapsed = time.monotonic() - started
            if send_signal is not None and not signalled and after_start is not None and elapsed >= after_start:
                os.kill(process.pid, send_signal)
                signalled = True
            if elapsed > timeout:
                killed = True
                os.killpg(process.pid, signal.SIGKILL)
                code = process.wait()
                break
            time.sleep(0.01)
        seconds = time.monotonic() - started
        try:
            peak_kb = int(open(report).read() or 0)  # noqa: SIM115 - one short read
        except FileNotFoundError:  # killed before the case ended: no figure
            peak_kb = 0
        out.seek(0)
        err.seek(0)
        return ChildOutcome(
            returncode=code,
            stdout=out.read().decode("utf-8", "replace"),
            stderr=err.read().decode("utf-8", "replace"),
            seconds=seconds,
            peak_rss_mb=peak_kb / 1024.0,  # Linux: kilobytes
            killed=killed,
        )


def child_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment (so the child finds the same packages), plus `extra`."""
    environment = dict(os.environ)
    environment.pop("PYTEST_CURRENT_TEST", None)
    environment.update(extra or {})
    return environment


def run_cli(args: Sequence[str], **kwargs: object) -> ChildOutcome:
    """The real command line: `outpost ARGS` in a child."""
    code = "import sys; from outpost.cli import main; sys.exit(main(sys.argv[1:]))"
    return run_child([sys.executable, "-c", code, *args], **kwargs)  # type: ignore[arg-type]


def run_python(code: str, **kwargs: object) -> ChildOutcome:
    return run_child([sys.executable, "-c", code], **kwargs)  # type: ignore[arg-type]


def assert_bounded(outcome: ChildOutcome, budget: float, secrets: Sequence[str] = ()) -> None:
    """The matrix's common contract (see the module doc); the message says which part broke."""
    assert not outcome.killed, (
        f"still running {outcome.seconds:.1f} s after start (killed); output: {outcome.output[-500:]}"
    )
    assert outcome.seconds <= budget + SLACK_SECONDS, (
        f"took {outcome.seconds:.1f} s, more than the budget {budget:g} s + {SLACK_SECONDS:g} s"
    )
    assert outcome.peak_rss_mb < MAX_RSS_MB, f"peak RSS {outcome.peak_rss_mb:.0f} MB, over {MAX_RSS_MB:g} MB"
    assert "Traceback (most recent call last)" not in outcome.output, outcome.output[-2000:]
    for secret in secrets:
        assert secret not in outcome.output, "a credential appeared in the output"


def alive(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie, ended but not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


class Named(Protocol):
    @property
    def name(self) -> str: ...


def assert_matrix(cases: Sequence[Named], least: int) -> None:
    """A matrix keeps at least `least` cases (one that shrinks has lost a guarantee), each with a name of its own."""
    assert len(cases) >= least
    assert len({case.name for case in cases}) == len(cases)


def each_case(cases: Sequence[Named]) -> pytest.MarkDecorator:
    """A matrix test run once per case, each run named after its case."""
    return pytest.mark.parametrize("case", cases, ids=[case.name for case in cases])
