"""The product CLI reaches the sandbox only through the `outpost.commands` entry points.

Without the `outpost-sandbox` distribution, `outpost sandbox ...` and `outpost demo` still parse
(with any arguments) and print one line saying how to install it, exit 64; importing the product
never imports the sandbox (it must not ship in a function bundle).
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest

from outpost import cli


@pytest.fixture
def sandbox_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_plugins(*, group: str) -> list[importlib.metadata.EntryPoint]:
        assert group == cli.PLUGIN_GROUP
        return []

    monkeypatch.setattr(importlib.metadata, "entry_points", no_plugins)


@pytest.mark.usefixtures("sandbox_absent")
@pytest.mark.parametrize(
    "argv",
    [
        ["sandbox", "up"],
        ["sandbox", "up", "--nodes", "3"],
        ["sandbox"],
        ["demo"],
        ["demo", "--nodes", "2", "--state-dir", "/tmp/x"],
    ],
)
def test_sandbox_commands_without_the_sandbox_say_how_to_install_it(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(argv) == cli.EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"outpost {argv[0]}: the sandbox is not installed: `pip install -e infra/sandbox` "
        "(from the repository root), or `make setup`"
    ]


@pytest.mark.usefixtures("sandbox_absent")
def test_other_commands_still_reject_unknown_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["list", "--bogus"])
    assert exit_info.value.code == cli.EXIT_USAGE
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_installed_sandbox_provides_its_commands_through_entry_points() -> None:
    names = {ep.name: ep.value for ep in importlib.metadata.entry_points(group=cli.PLUGIN_GROUP)}
    assert names == {"sandbox": "outpost_sandbox.cli:register", "demo": "outpost_sandbox.demo:register"}
    parser = cli.build_parser()
    args = parser.parse_args(["sandbox", "up", "--nodes", "3"])
    assert args.nodes == 3
    assert args.func is not cli._sandbox_missing


def test_importing_the_product_never_imports_the_sandbox() -> None:
    code = (
        "import sys, outpost, outpost.cli, outpost.runner, outpost.registry, outpost.tooling.rbac; "
        "print(sorted(m for m in sys.modules if m.startswith('outpost_sandbox')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("argv", [["list"], ["run", "--help"], ["validate", "--env", "local"]])
def test_the_products_own_commands_do_not_load_the_sandbox_plugin(argv: list[str]) -> None:
    """`outpost run` in a CronJob or a benchmark pays for the sandbox plugin's imports only when it runs it."""
    code = (
        "import sys; from outpost import cli\n"
        "try:\n    cli.main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('outpost_sandbox')), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True)
    assert done.stderr.strip().splitlines()[-1] == "[]"


def test_sandbox_commands_and_the_full_help_load_the_plugin() -> None:
    assert cli.build_parser("sandbox").parse_args(["sandbox", "status"]).func is not cli._sandbox_missing
    assert "demo,sandbox" in cli.build_parser(None).format_help()
    assert "sandbox" not in cli.build_parser("run").format_help()
