"""Which container images the process node can run: the upstream binaries `infra/sandbox/go/build.sh` built.

An image is `<repository>:<tag>`; the sandbox "has" an image when build.sh built that repository's binary from
the release module of exactly that tag (the pins in infra/sandbox/go/versions.env, recorded by build.sh in
`<bin dir>/versions.json`). Any other image of those repositories is not present (ErrImageNeverPull, as a
kubelet says for an image it may not pull), and an image of another repository is a stand-in: the pod is
reported Running without a process (koordlet and kruise-daemon need a real node; the sandbox's backend daemon
answers their ports). One image can hold more than one program: the Helm chart runs kruise-daemon from the
kruise-manager image (openkruise/charts versions/kruise/1.8.0 templates/manager.yaml, command /kruise-daemon), so a
container's command picks the program, as its entrypoint would in the image.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

# image repository -> (binary name in the bin dir, the module whose release it is)
RUNNABLE: dict[str, tuple[str, str]] = {
    "openkruise/kruise-manager": ("kruise-manager", "github.com/openkruise/kruise"),
    "koordinator-sh/koord-manager": ("koord-manager", "github.com/koordinator-sh/koordinator"),
    "koordinator-sh/koord-scheduler": ("koord-scheduler", "github.com/koordinator-sh/koordinator"),
    "koordinator-sh/koord-descheduler": ("koord-descheduler", "github.com/koordinator-sh/koordinator"),
}


STAND_IN_COMMANDS = {("openkruise/kruise-manager", "/kruise-daemon")}
"""(repository, command) of programs a runnable image also holds that need a real node: stand-ins."""


@dataclass(frozen=True)
class Image:
    """What the node makes of a container's image."""

    binary: Path | None  # the binary to run; None for a stand-in or an image that is not present
    missing: str | None = None  # why a runnable repository's image is not present (ErrImageNeverPull)


def built_versions(bin_dir: Path) -> dict[str, str]:
    """module -> version, as build.sh recorded what it built; empty when nothing was recorded."""
    try:
        data = json.loads((bin_dir / "versions.json").read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def resolve(image: str, bin_dir: Path, command: str | None = None) -> Image:
    repository, _, tag = image.rpartition(":") if ":" in image.rsplit("/", 1)[-1] else (image, "", "latest")
    entry = RUNNABLE.get(repository)
    if entry is None or (repository, command) in STAND_IN_COMMANDS:
        return Image(None)
    name, module = entry
    built = built_versions(bin_dir).get(module)
    if built != tag or not (bin_dir / name).is_file():
        have = f"{module}@{built}" if built else "none built"
        return Image(None, f"image {image}: the sandbox has {name} from {have} only (infra/sandbox/go/versions.env)")
    return Image(bin_dir / name)
