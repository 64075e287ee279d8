"""`python -m outpost_sandbox up|down|status`: the sandbox commands without the main CLI."""

from __future__ import annotations

import argparse
import sys

from outpost_sandbox.cli import add_commands


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="outpost sandbox")
    add_commands(parser)
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
