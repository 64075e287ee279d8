"""`outpost sandbox ...`: the command line of the local simulated cluster.

Guarantees: every subcommand returns an exit status instead of raising: 0 on success, 1 when the
sandbox could not be brought to (or is not in) the asked-for state, with one line naming the cause
and component on stderr, followed by that component's log tail. `register` only adds parsers; the
fault subcommands (`break`, `heal`) are added by `outpost_sandbox.faults`.

Convention shared with `outpost.cli`: each leaf parser sets `func(args) -> int` via set_defaults.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from outpost_sandbox import alert_times, faults, pages, systems
from outpost_sandbox.cluster import Sandbox
from outpost_sandbox.state import SandboxError


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add `sandbox` (with up/down/status, and break/heal if available) to `subparsers`."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "sandbox",
        help="the local simulated cluster (real control plane + kwok nodes)",
        description="Run a local Kubernetes control plane with kwok fake nodes for Outpost's checks.",
    )
    add_commands(parser)
    return parser


def add_commands(parser: argparse.ArgumentParser) -> Any:
    """Add the sandbox subcommands to `parser`; returns the subparsers object."""
    parser.set_defaults(func=lambda _args: _usage(parser))
    sub = parser.add_subparsers(dest="sandbox_command", metavar="COMMAND")

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--state-dir", default=None, help="sandbox state directory (default $OUTPOST_SANDBOX_DIR or ~/.outpost/sandbox)"
    )

    p_up = sub.add_parser("up", parents=[common], help="start the sandbox (idempotent)")
    p_up.add_argument("--nodes", type=int, default=100, help="number of kwok fake nodes (default 100)")
    p_up.add_argument(
        "--timeout", type=float, default=None, help="seconds to wait for all nodes Ready (default scales with --nodes)"
    )
    p_up.add_argument(
        "--no-systems",
        action="store_true",
        help="do not install Koordinator/OpenKruise/kwok extras (control plane only)",
    )
    p_up.add_argument(
        "--install",
        choices=systems.INSTALLS,
        default=systems.DEFAULT_INSTALL,
        help="how Koordinator and OpenKruise are installed: `helm`, their official charts with default values "
        "(the default: what people run), or `kustomize`, upstream's own config/",
    )
    p_up.set_defaults(func=cmd_up)

    p_down = sub.add_parser("down", parents=[common], help="stop every sandbox process")
    p_down.add_argument("--purge", action="store_true", help="also delete the state directory")
    p_down.set_defaults(func=cmd_down)

    p_status = sub.add_parser("status", parents=[common], help="liveness of each component and /readyz")
    p_status.add_argument("--json", action="store_true", help="print JSON")
    p_status.set_defaults(func=cmd_status)

    faults.register(sub)
    alert_times.register(sub)
    pages.register(sub)
    return sub


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 64


def _fail(exc: SandboxError) -> int:
    print(f"error: {exc.detail()}", file=sys.stderr)
    return 1


def cmd_up(args: argparse.Namespace) -> int:
    try:
        result = Sandbox(args.state_dir).up(
            nodes=args.nodes, timeout=args.timeout, install_systems=not args.no_systems, install=args.install
        )
    except SandboxError as exc:
        code = _fail(exc)
        print(
            "what did start is left running for inspection; `outpost sandbox status` shows it and "
            "`outpost sandbox down` stops it",
            file=sys.stderr,
        )
        return code
    print(result.usage())
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    try:
        stopped = Sandbox(args.state_dir).down(purge=args.purge)
    except SandboxError as exc:
        return _fail(exc)
    print(f"sandbox down: stopped {', '.join(stopped)}" if stopped else "sandbox down: nothing was running")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    try:
        st = Sandbox(args.state_dir).status()
    except SandboxError as exc:
        return _fail(exc)
    if args.json:
        print(json.dumps(st.to_dict(), indent=2))
        return 0 if st.up else 1
    if not st.exists:
        print(f"no sandbox at {st.state_dir}")
        return 1
    print(f"sandbox {st.state_dir}: {'UP' if st.up else 'NOT UP'}  ({st.server})")
    for c in st.components:
        state = f"running pid {c.pid}" if c.alive else "stopped"
        print(f"  {c.name:<24} {state:<20} {c.detail}")
    readyz = st.apiserver_readyz if st.apiserver_readyz is not None else "unreachable"
    print(f"  apiserver /readyz        {readyz}")
    nodes = f"{st.nodes_ready}/{st.nodes_expected}" if st.nodes_ready is not None else "unknown"
    print(f"  kwok nodes Ready         {nodes}")
    return 0 if st.up else 1
