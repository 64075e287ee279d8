"""The `outpost` command line (docs/cli.md; exit codes: docs/contracts.md "Exit codes and platform mapping").

`run` exits with the worst of 0 ok/degraded, 1 failed, 2 error, 64 usage; other commands 0 or 64. Every problem
is one stderr line, unexpected exceptions included (exit 2, no traceback). Everything printed passes redaction,
then `logs.terminal_safe`, so neither a credential nor a server's control characters reach the terminal.
SIGINT/SIGTERM end `run` at once (`outpost.interrupt`: plugins killed, exit 128 + signal, no ping after it).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TextIO

from outpost import interrupt, redaction, registry
from outpost.config import Settings
from outpost.deploy import function_timeout_seconds, platform_max_timeout
from outpost.errors import ConfigError, OutpostError
from outpost.holdback.senders import sender_for
from outpost.logs import install_redaction, sanitize, terminal_safe
from outpost.result import NextStep, Result
from outpost.runner import run_check
from outpost.settings import (
    add_source_arguments,
    run_worst_case_seconds,
    settings_from_args,
)
from outpost.tooling import maintenance, monitors, rbac
from outpost.tooling.packaging import command as package

EXIT_USAGE = 64

PLUGIN_GROUP = "outpost.commands"
"""Entry-point group of the commands other distributions add (each a `register(subparsers)` callable)."""

SANDBOX_COMMANDS = ("demo", "sandbox")
"""Commands the `outpost-sandbox` distribution provides; without it they print how to install it."""

SANDBOX_INSTALL_HINT = (
    "the sandbox is not installed: `pip install -e infra/sandbox` (from the repository root), or `make setup`"
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every command; `command` (the one about to run): plugins are loaded only when it is not the product's own.

    Why: loading the sandbox plugin imports the sandbox (its faults, PKI and process supervision), about 0.15 s and
    13 MB that `outpost run` in a CronJob or a benchmark would pay on every invocation for nothing.
    """
    parser = _Parser(prog="outpost", description="Outside-in health checks for Kubernetes control-plane extensions.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    listing = commands.add_parser("list", help="every check: name, system, layer, severity, default schedule")
    listing.add_argument("--json", action="store_true", help="print a JSON array")
    listing.set_defaults(func=cmd_list)

    run = commands.add_parser("run", help="run checks and print their results")
    run.add_argument("names", nargs="*", metavar="NAME", help="check names (see `outpost list`)")
    run.add_argument("--all", action="store_true", help="every check enabled in the configuration")
    add_source_arguments(run)
    run.add_argument("--kubeconfig", help="use this kubeconfig (overrides the configured cluster auth)")
    run.add_argument("--context", help="kubeconfig context (with --kubeconfig or a kubeconfig-mode config)")
    run.add_argument("--json", action="store_true", help="print a JSON array of result objects")
    run.add_argument("--no-report", action="store_true", help="never ping heartbeats")
    run.set_defaults(func=cmd_run)

    validate = commands.add_parser("validate", help="validate a configuration, naming every bad field")
    add_source_arguments(validate)
    validate.set_defaults(func=cmd_validate)

    maintenance.register(commands)
    monitors.register(commands)
    package.register(commands)
    rbac.register(commands)
    if command is not None and command in commands.choices:
        return parser
    registered = _register_plugins(commands)
    for name in SANDBOX_COMMANDS:
        if name not in registered:
            _register_missing_sandbox(commands, name)
    return parser


def _register_plugins(commands: Any) -> set[str]:
    """Add every `outpost.commands` entry point's commands; the product never imports the sandbox itself."""
    registered: set[str] = set()
    entry_points = importlib.metadata.entry_points(group=PLUGIN_GROUP)
    for entry_point in sorted(entry_points, key=lambda ep: (ep.name not in SANDBOX_COMMANDS, ep.name)):
        register: Callable[[Any], object] = entry_point.load()
        register(commands)
        registered.add(entry_point.name)
    return registered


def _register_missing_sandbox(commands: Any, name: str) -> None:
    """`outpost <name> ...` still parses (any arguments) and says how to install the sandbox."""
    parser = commands.add_parser(name, help=f"(not installed) {SANDBOX_INSTALL_HINT}", add_help=False)
    parser.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    parser.set_defaults(func=_sandbox_missing)


def _sandbox_missing(args: argparse.Namespace) -> int:
    print(f"outpost {args.command}: {SANDBOX_INSTALL_HINT}", file=sys.stderr)
    return EXIT_USAGE


def cmd_list(args: argparse.Namespace) -> int:
    rows = [
        {
            "name": c.name,
            "system": c.system,
            "layer": c.layer,
            "severity": c.severity,
            "schedule": f"every {c.schedule_minutes} min",
            "fails_when": c.fails_when,
        }
        for c in registry.checks() + registry.jobs()
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        _print_table(rows, ["name", "system", "layer", "severity", "schedule"])
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    enabled = settings.enabled_checks()
    _out(
        f"configuration for environment {settings.environment!r} is valid: "
        f"cluster {settings.cluster.name!r} ({settings.cluster.auth.mode}), "
        f"{len(enabled)} check(s) enabled{': ' + ', '.join(enabled) if enabled else ''}; "
        f"worst-case run {run_worst_case_seconds(settings):g} s, function timeout "
        f"{function_timeout_seconds(settings)} s (at most {platform_max_timeout(settings)} s)"
    )
    deploy = settings.deploy
    _out(
        f"deployable to {deploy.platform} {deploy.region} (every enabled check has a heartbeat and a monitor)"
        if deploy
        else "not deployable (no deploy section): local runs only"
    )
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    if bool(args.names) == bool(args.all):
        raise _Usage("give check names or --all (not both)")
    unknown = [name for name in args.names if name not in registry.names()]
    if unknown:
        raise _Usage(f"unknown check(s): {', '.join(unknown)} (see `outpost list`)")
    settings = settings_from_args(args)
    names = list(dict.fromkeys(args.names))
    if args.all:
        # --all means the checks this environment enables, never the whole catalogue.
        names = settings.enabled_checks()
        if not names:
            raise _Usage(f"environment {settings.environment} enables no check (nothing to run for --all)")
    results = run_many(settings, names, report=not args.no_report)
    if args.json:
        _out(json.dumps([sanitize(r.model_dump(mode="json")) for r in results], indent=2))
    else:
        print_results(results)
    return max(r.status.exit_code for r in results)


MAX_CONCURRENT_CHECKS = 32
"""More than the catalogue and its jobs, so `run --all` is one wave; a bound all the same (threads)."""


def run_many(settings: Settings, names: Sequence[str], *, report: bool = True) -> list[Result]:
    """Run checks concurrently; results come back in the order asked.

    Every `run_check` is bounded by its own deadline and never raises, so joining the threads cannot hang.
    All start at once (checks wait on the network, not the CPU): a round takes about as long as its slowest
    check (apiserver-latency waits `interval_seconds` between its scrapes), not the sum of waves of them.
    The threads are daemons: at a stop (SIGINT/SIGTERM) the process ends without waiting for one blocked in a
    socket read, and `run_check` never starts a ping after a stop, so an abandoned thread cannot ping.
    """
    results: list[Result | None] = [None] * len(names)
    slots = threading.BoundedSemaphore(max(1, min(MAX_CONCURRENT_CHECKS, len(names))))
    # A failing check with dependants holds them back through the inhibitor called in process (hold_back.enabled).
    hold = sender_for(settings, "local") if report else None

    def work(index: int, name: str) -> None:
        try:
            results[index] = run_check(settings, name, report=report, log=False, hold=hold)
        finally:
            slots.release()

    threads = []
    for index, name in enumerate(names):
        slots.acquire()
        thread = threading.Thread(target=work, args=(index, name), name=f"outpost-run-{name}", daemon=True)
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    return [
        result if result is not None else Result.error(name, f"{name}: the run ended without a result")
        for name, result in zip(names, results, strict=True)
    ]


def _out(text: str, *, file: TextIO | None = None, one_line: bool = False) -> None:
    """Every line the CLI prints goes through the redaction registry, then `terminal_safe` (stdout by default).

    `one_line`: the text is one line (a stderr message), so a newline in it came from elsewhere and is shown
    as `\\n`; otherwise newlines are the text's own line breaks (JSON, a table).
    """
    safe = terminal_safe(redaction.redact(text), keep_newlines=not one_line)
    print(safe, file=file if file is not None else sys.stdout)


def _err(text: str) -> None:
    _out(text, file=sys.stderr, one_line=True)


def _cell(text: str) -> str:
    """One table cell or one listed line: server text on one line, every control character shown as an escape."""
    return terminal_safe(redaction.redact(text))


def print_results(results: Sequence[Result]) -> None:
    rows = [
        {
            "check": r.check,
            "status": r.status.value,
            "ms": str(r.duration_ms),
            "pinged": "yes" if r.reported else "no",
            "summary": r.summary,
        }
        for r in results
    ]
    _print_table(rows, ["check", "status", "ms", "pinged", "summary"])
    for result in results:
        steps: list[NextStep | None] = [*result.next_steps] or [None] * len(result.errors)
        for line, step in zip(result.errors, steps, strict=True):
            if line != result.summary or step is not None:
                _out(f"  {_cell(result.check)}: {_cell(line)}")
            if step is not None:
                # What the person paged does next, under the line it is about.
                _out(f"    cause: {_cell(step.cause)}")
                _out(f"    next:  {_cell(step.command)}")
                if step.see:
                    _out(f"    see:   {_cell(step.see)}")
        if "hold_back" in result.details:  # a failing parent: what it asked for its dependants
            _out(f"  {_cell(result.check)}: hold-back: {_cell(str(result.details['hold_back']))}")


def _print_table(rows: Sequence[dict[str, str]], columns: Sequence[str]) -> None:
    rows = [{c: _cell(str(row[c])) for c in columns} for row in rows]
    widths = {c: max([len(c)] + [len(str(row[c])) for row in rows]) for c in columns}
    _out("  ".join(c.upper().ljust(widths[c]) for c in columns).rstrip())
    for row in rows:
        _out("  ".join(str(row[c]).ljust(widths[c]) for c in columns).rstrip())


class _Usage(Exception):
    pass


def main(argv: Sequence[str] | None = None) -> int:
    install_redaction()
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(next((a for a in arguments if not a.startswith("-")), None))
    args, unknown = parser.parse_known_args(arguments)
    if unknown and args.func is not _sandbox_missing:  # the placeholders accept anything; the rest must not
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    undo = interrupt.install(_stop_line) if args.command == "run" else (lambda: None)
    try:
        code: int = args.func(args)
        return code
    except KeyboardInterrupt:  # a command without the stop handler (run has one: it never gets here)
        _err(f"outpost {args.command}: interrupted by SIGINT")
        return interrupt.exit_code(signal.SIGINT)
    except _Usage as error:
        _err(f"outpost {args.command}: {error}")
        return EXIT_USAGE
    except ConfigError as error:
        _err(f"outpost {args.command}: {error.headline}")
        for problem in error.problems:
            _err(f"  {problem}")
        return EXIT_USAGE
    except OutpostError as error:
        _err(f"outpost {args.command}: {error}")
        return 2
    except Exception as error:  # noqa: BLE001 - rendering or a bug: one line and "error", never a traceback
        lines = str(error).strip().splitlines()
        _err(f"outpost {args.command}: internal error {type(error).__name__}: {lines[0][:200] if lines else ''}")
        return 2
    finally:
        undo()


def _stop_line(signum: int) -> None:
    """The last line of a stopped `outpost run` (written by the signal handler straight to stderr)."""
    name, code = interrupt.signal_name(signum), interrupt.exit_code(signum)
    interrupt.write_line(
        2,
        f"outpost run: stopped by {name}: no result; credential plugins killed, "
        f"and no heartbeat is sent after a stop (exit {code})",
    )


if __name__ == "__main__":
    sys.exit(main())
