"""`outpost package` run as a user runs it, and clean virtual environments to build or run its artifacts in.

- `package` runs `<python> -m outpost.cli package` in a process of its own, from whichever interpreter it is
  given (the test's own, or another virtualenv's), with no `PYTHONPATH` inherited: what the build sees is that
  interpreter's environment alone. A refused or failed build fails with its output.
- `clean_venv` makes a virtualenv with `python -m venv` (the standard library's own, so its pip is
  ensurepip's) and installs exactly one requirements file into it with pip from the package index, hashes
  required when the file carries them. Downloads go through pip's own cache, so a second session is fast.
- `sees` writes a `.pth` into a venv so it imports this repository's sources (and, optionally, another
  environment's site-packages after its own): a second environment without reinstalling the product.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCES = (REPO / "shared",)
"""What `outpost` imports from: this checkout's product sources."""
PIP_TIMEOUT_SECONDS = 600


@dataclass(frozen=True)
class Built:
    """One `outpost package` output: the stage's directory, its artifact and its build record."""

    stage: Path
    artifact: Path
    deployment: dict[str, object]

    @property
    def record(self) -> dict[str, object]:
        record = self.deployment["build"]
        assert isinstance(record, dict)
        return record


def package(
    python: Path | str, environment: str, output: Path, root: Path = REPO, platform: str | None = None
) -> Built:
    """`<python> -m outpost.cli package --env ENV --root ROOT --output OUTPUT [--platform P]`, in its own process."""
    command = [str(python), "-m", "outpost.cli", "package", "--env", environment, "--root", str(root)]
    command += ["--output", str(output), *(["--platform", platform] if platform else [])]
    variables = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    process = subprocess.run(
        command, capture_output=True, text=True, env=variables, cwd=root, check=False, timeout=PIP_TIMEOUT_SECONDS
    )
    assert process.returncode == 0, f"{' '.join(command[1:])} exited {process.returncode}: {process.stderr[-3000:]}"
    stage = output / environment
    deployment = json.loads((stage / "deployment.json").read_text())
    return Built(stage, stage / deployment["build"]["artifact"], deployment)


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def clean_venv(venv: Path, requirements: Path | None = None, *pip_options: str) -> Path:
    """A new virtualenv at `venv` holding only pip and `requirements` (installed from the index); its python."""
    if not venv_python(venv).exists():
        _run([sys.executable, "-m", "venv", str(venv)])
    if requirements is not None:
        hashed = "--hash=" in requirements.read_text()
        _run(
            [
                str(venv_python(venv)),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--only-binary=:all:",
                *(["--require-hashes"] if hashed else []),
                *pip_options,
                "--requirement",
                str(requirements),
            ]
        )
    return venv_python(venv)


def pip_install(venv: Path, *requirements: str) -> None:
    """Install `requirements` (pinned specifiers) into `venv` from the index."""
    _run([str(venv_python(venv)), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *requirements])


def sees(venv: Path, *paths: Path) -> None:
    """Make `venv` import from `paths` too, after its own site-packages (a `.pth` file: one path a line)."""
    site = Path(
        subprocess.run(
            [str(venv_python(venv)), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "zz-outpost-sources.pth").write_text("".join(f"{path}\n" for path in paths))


def this_site_packages() -> Path:
    """The site-packages of the interpreter running the tests."""
    return Path(sysconfig.get_paths()["purelib"])


def distribution_versions(python: Path | str) -> dict[str, str]:
    """`{name: version}` of the distributions `python` imports (`importlib.metadata`), to show two differ."""
    probe = (  # the first of a name on sys.path is the one imported
        "import importlib.metadata as m, json; found = {}; "
        "[found.setdefault(d.metadata['Name'].lower(), d.version) for d in m.distributions()]; "
        "print(json.dumps(found))"
    )
    variables = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    process = subprocess.run(
        [str(python), "-I", "-c", probe], capture_output=True, text=True, env=variables, check=True
    )
    versions: dict[str, str] = json.loads(process.stdout)
    return versions


def unpack(archive: Path, into: Path) -> Path:
    """Extract `archive` into `into` with the modes its entries record (zipfile alone drops them)."""
    with zipfile.ZipFile(archive) as bundle:
        for entry in bundle.infolist():
            target = Path(bundle.extract(entry, into))
            mode = (entry.external_attr >> 16) & 0o777
            if mode and not entry.is_dir():
                target.chmod(mode)
    return into


def _run(command: list[str]) -> None:
    variables = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    process = subprocess.run(
        command, capture_output=True, text=True, env=variables, check=False, timeout=PIP_TIMEOUT_SECONDS
    )
    assert process.returncode == 0, f"{' '.join(command)} exited {process.returncode}: {process.stderr[-3000:]}"
