"""`outpost sandbox break FAULT [--target T]` and `outpost sandbox heal [FAULT]`.

Guarantees: each command returns an exit status (0 done, 1 with one `error:` line on stderr) and
`break` says which catalogue checks should now fail.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from outpost.errors import OutpostError
from outpost_sandbox.faults.catalogue import FAULTS
from outpost_sandbox.faults.records import break_fault, heal


# ---- command line ------------------------------------------------------------------------------------
def register(sandbox_subparsers: Any) -> None:
    """Add `break` and `heal` to the `outpost sandbox` subparsers (each sets func(args) -> int)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--state-dir", default=None, help="sandbox state directory (default $OUTPOST_SANDBOX_DIR or ~/.outpost/sandbox)"
    )
    listing = "\n".join(
        f"  {f.name:<24} {f.help}" + (f" [--target {f.target_help}]" if f.target_help else "") for f in FAULTS.values()
    )
    p_break = sandbox_subparsers.add_parser(
        "break",
        parents=[common],
        help="inject a fault",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=f"Inject a fault into the running sandbox.\n\nfaults:\n{listing}",
    )
    p_break.add_argument("fault", choices=sorted(FAULTS), metavar="FAULT")
    p_break.add_argument("--target", default=None, help="what the fault applies to (see the list)")
    p_break.add_argument("--delay-ms", type=int, default=None, help="backend-slow: delay (default 3000)")
    p_break.add_argument("--count", type=int, default=None, help="be-evictions: number of events (default 10)")
    p_break.add_argument("--days", type=float, default=None, help="webhook-cert-expiring: validity (default 5)")
    p_break.set_defaults(func=_cmd_break)
    p_heal = sandbox_subparsers.add_parser("heal", parents=[common], help="undo injected faults (all by default)")
    p_heal.add_argument("fault", nargs="?", default=None, metavar="FAULT")
    p_heal.add_argument("--target", default=None)
    p_heal.set_defaults(func=_cmd_heal)


def _cmd_break(args: argparse.Namespace) -> int:
    try:
        rec = break_fault(
            args.fault, args.target, args.state_dir, delay_ms=args.delay_ms, count=args.count, days=args.days
        )
    except (OutpostError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    checks = FAULTS[args.fault].checks_for(rec["target"])
    print(
        f"broken: {args.fault}"
        + (f" ({rec['target']})" if rec["target"] else "")
        + f" - should fail: {', '.join(sorted(checks)) or 'no catalogue check (metrics only)'}"
    )
    return 0


def _cmd_heal(args: argparse.Namespace) -> int:
    try:
        healed = heal(args.fault, args.target, args.state_dir)
    except (OutpostError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"healed: {', '.join(healed)}" if healed else "healed: nothing was broken")
    return 0
