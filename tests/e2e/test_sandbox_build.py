"""The sandbox's binaries are built from pinned upstream modules plus the patches in
infra/sandbox/go/patches, and the Go tests that guard those patches pass against exactly what
build.sh compiles. The real managers are their pinned releases built as main modules (their own
replace directives held), and the upstream objects the sandbox applies are what the pins render.

kwok v0.8.0 aborts at random right after it starts ("fatal error: concurrent map writes" in
easycel, seen in CI); the patch fixes that, and its Go test re-runs the race 1000 times.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from outpost_sandbox.binaries import build_script, ensure_binaries

GO_DIR = build_script().parent


def test_every_patch_names_a_module_version_and_files_it_changes() -> None:
    patches = sorted((GO_DIR / "patches").rglob("*.patch"))
    assert patches, "no patches: drop this test together with the patches directory"
    for patch in patches:
        module, _, version = str(patch.relative_to(GO_DIR / "patches")).removesuffix(".patch").rpartition("@")
        assert module, f"{patch}: name it <module>@<version>.patch"
        assert version.startswith("v"), f"{patch}: name it <module>@<version>.patch"
        changed = [line[len("+++ b/") :] for line in patch.read_text().splitlines() if line.startswith("+++ b/")]
        assert changed, f"{patch}: no file changed"


def test_patched_modules_pass_their_go_tests() -> None:
    proc = subprocess.run(
        ["bash", str(build_script()), "test"], capture_output=True, text=True, timeout=900, check=False
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    assert "ok  \toutpost.local/sandbox/kwok" in proc.stdout, output[-6000:]


def test_the_built_kwok_uses_the_patched_easycel() -> None:
    bin_dir = ensure_binaries()
    # The module list compiled into the binary records the replacement.
    info = subprocess.run(
        ["go", "version", "-m", str(bin_dir / "kwok")], capture_output=True, text=True, check=True
    ).stdout
    easycel = [line for line in info.splitlines() if "github.com/wzshiming/easycel" in line]
    assert any(line.strip().startswith("=>") and "/patched/" in line for line in easycel), info


RELEASES = {  # binary -> (module, its version pin in versions.env, main package)
    "kruise-manager": ("github.com/openkruise/kruise", "KRUISE_VERSION", "github.com/openkruise/kruise"),
    "koord-manager": (
        "github.com/koordinator-sh/koordinator",
        "KOORDINATOR_VERSION",
        "github.com/koordinator-sh/koordinator/cmd/koord-manager",
    ),
    "koord-scheduler": (
        "github.com/koordinator-sh/koordinator",
        "KOORDINATOR_VERSION",
        "github.com/koordinator-sh/koordinator/cmd/koord-scheduler",
    ),
    "koord-descheduler": (
        "github.com/koordinator-sh/koordinator",
        "KOORDINATOR_VERSION",
        "github.com/koordinator-sh/koordinator/cmd/koord-descheduler",
    ),
    # The node agents the process node runs.
    "kruise-daemon": ("github.com/openkruise/kruise", "KRUISE_VERSION", "github.com/openkruise/kruise/cmd/daemon"),
    "koordlet": (
        "github.com/koordinator-sh/koordinator",
        "KOORDINATOR_VERSION",
        "github.com/koordinator-sh/koordinator/cmd/koordlet",
    ),
}


def pins() -> dict[str, str]:
    lines = (GO_DIR / "versions.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


@pytest.mark.parametrize("binary", sorted(RELEASES))
def test_each_manager_and_agent_is_its_pinned_release_built_as_the_main_module(binary: str) -> None:
    module, pin, package = RELEASES[binary]
    bin_dir = ensure_binaries()
    assert json.loads((bin_dir / "versions.json").read_text())[module] == pins()[pin]
    info = subprocess.run(
        ["go", "version", "-m", str(bin_dir / binary)], capture_output=True, text=True, check=True
    ).stdout
    assert f"\tpath\t{package}\n" in info
    assert f"\tmod\t{module}\t" in info  # the release itself is the main module, not a dependency
    # Its go.mod's replace directives held: every replaced dependency linked in is replaced as the release says.
    release_dir = json.loads(
        subprocess.run(
            ["go", "mod", "download", "-json", f"{module}@{pins()[pin]}"], capture_output=True, text=True, check=True
        ).stdout
    )["Dir"]
    go_mod = (Path(release_dir) / "go.mod").read_text()
    replaced = re.findall(r"^\t=>\t(\S+)\t(\S+)", info, flags=re.MULTILINE)
    assert replaced, f"{binary}: no replaced module linked in: built outside its release's go.mod?"
    for path, version in replaced:
        assert re.search(rf"=> {re.escape(path)} {re.escape(version)}\b", go_mod), (binary, path, version)


def test_the_upstream_objects_are_what_the_pins_render() -> None:
    proc = subprocess.run(
        [sys.executable, str(GO_DIR / "render_upstream.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]


def test_koordlet_is_built_with_cgo_and_linked_statically() -> None:
    """Its perf_group package is cgo-only (libpfm); static, so it runs in the pod's near-empty root."""
    koordlet = ensure_binaries() / "koordlet"
    info = subprocess.run(["go", "version", "-m", str(koordlet)], capture_output=True, text=True, check=True).stdout
    assert "\tbuild\tCGO_ENABLED=1\n" in info
    with koordlet.open("rb") as elf:
        header = elf.read(1 << 16)
    assert b"/lib64/ld-linux" not in header  # no program interpreter: nothing to load at run time
