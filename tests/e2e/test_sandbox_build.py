"""The sandbox's binaries are built from pinned upstream modules plus the patches in
infra/sandbox/go/patches, and the Go tests that guard those patches pass against exactly what
build.sh compiles.

kwok v0.8.0 aborts at random right after it starts ("fatal error: concurrent map writes" in
easycel, seen in CI); the patch fixes that, and its Go test re-runs the race 1000 times.
"""

from __future__ import annotations

import subprocess

from outpost_sandbox.cluster import build_script, ensure_binaries

GO_DIR = build_script().parent


def test_every_patch_names_a_module_version_and_files_it_changes() -> None:
    patches = sorted((GO_DIR / "patches").rglob("*.patch"))
    assert patches, "no patches: drop this test together with the patches directory"
    for patch in patches:
        module, _, version = str(patch.relative_to(GO_DIR / "patches")).removesuffix(".patch").rpartition("@")
        assert module, f"{patch}: name it <module>@<version>.patch"
        assert version.startswith("v"), f"{patch}: name it <module>@<version>.patch"
        changed = [line[len("+++ b/"):] for line in patch.read_text().splitlines() if line.startswith("+++ b/")]
        assert changed, f"{patch}: no file changed"


def test_patched_modules_pass_their_go_tests() -> None:
    proc = subprocess.run(["bash", str(build_script()), "test"], capture_output=True, text=True, timeout=900,
                          check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    assert "ok  \toutpost.local/sandbox/kwok" in proc.stdout, output[-6000:]


def test_the_built_kwok_uses_the_patched_easycel() -> None:
    bin_dir = ensure_binaries()
    # The module list compiled into the binary records the replacement.
    info = subprocess.run(["go", "version", "-m", str(bin_dir / "kwok")], capture_output=True, text=True,
                          check=True).stdout
    easycel = [line for line in info.splitlines() if "github.com/wzshiming/easycel" in line]
    assert any(line.strip().startswith("=>") and "/patched/" in line for line in easycel), info
