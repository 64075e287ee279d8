"""Which container images the process node can run: the upstream binaries `infra/sandbox/go/build.sh` built.

An image is `<repository>:<tag>`; the sandbox "has" an image when build.sh built that repository's binary from
the release module of exactly that tag (the pins in infra/sandbox/go/versions.env, recorded by build.sh in
`<bin dir>/versions.json`). Any other image of those repositories is not present (ErrImageNeverPull, as a
kubelet says for an image it may not pull), and an image of another repository is a stand-in: the pod is
reported Running without a process. One image can hold more than one program: the Helm chart runs kruise-daemon
from the kruise-manager image (openkruise/charts versions/kruise/1.8.0 templates/manager.yaml, command
/kruise-daemon; kruise@v1.8.0 Dockerfile copies both binaries into it), so a container's command picks the program,
as its entrypoint would in the image.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

KRUISE = "github.com/openkruise/kruise"
KOORDINATOR = "github.com/koordinator-sh/koordinator"

# image repository -> (binary name in the bin dir, the module whose release it is)
RUNNABLE: dict[str, tuple[str, str]] = {
    "openkruise/kruise-manager": ("kruise-manager", KRUISE),
    "openkruise/kruise-daemon": ("kruise-daemon", KRUISE),  # config/ (kustomize) names the daemon's own image
    "koordinator-sh/koord-manager": ("koord-manager", KOORDINATOR),
    "koordinator-sh/koord-scheduler": ("koord-scheduler", KOORDINATOR),
    "koordinator-sh/koord-descheduler": ("koord-descheduler", KOORDINATOR),
    "koordinator-sh/koordlet": ("koordlet", KOORDINATOR),
}

PROGRAMS: dict[tuple[str, str], str] = {("openkruise/kruise-manager", "/kruise-daemon"): "kruise-daemon"}
"""(repository, command) -> binary, for the programs an image holds besides its main one."""

USERLAND: frozenset[str] = frozenset({"koordinator-sh/koordlet"})
"""Images built on a distribution whose programs the binary runs: koordlet runs `lscpu` and `getconf` for the node's
CPU topology and clock tick (koordinator@v1.6.0 pkg/koordlet/util/system/lscpu.go, system_file.go); its image is
Ubuntu-based (docker/koordlet.dockerfile), with util-linux. The node lends the binary the machine's /usr, read-only."""


@dataclass(frozen=True)
class Image:
    """What the node makes of a container's image."""

    binary: Path | None  # the binary to run; None for a stand-in or an image that is not present
    missing: str | None = None  # why a runnable repository's image is not present (ErrImageNeverPull)
    userland: bool = False  # the image has a distribution's /usr (see USERLAND)


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
    if entry is None:
        return Image(None)
    name, module = entry
    name = PROGRAMS.get((repository, command or ""), name)
    built = built_versions(bin_dir).get(module)
    if built != tag or not (bin_dir / name).is_file():
        have = f"{module}@{built}" if built else "none built"
        return Image(None, f"image {image}: the sandbox has {name} from {have} only (infra/sandbox/go/versions.env)")
    return Image(bin_dir / name, userland=repository in USERLAND)
