"""Reading local input files (configuration, kubeconfigs, tokens, CA bundles, client certificates) with bounds.

A configured path can name a FIFO, `/dev/zero`, a directory or a huge sparse file, each of which would hang or
grow a run until the platform kills it. So symlinks are followed but the opened descriptor must be a regular
file (stat first, then `O_NONBLOCK`), each kind has a size limit enforced before and while reading, and a
`Deadline` is checked between chunks. Every refusal is a `LocalFileError` naming kind, path and reason, never the
content. Not bounded: a read blocked in the kernel (hung NFS/FUSE), which only the platform timeout ends.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from outpost.bounded import Deadline
from outpost.errors import OutpostError

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
CHUNK_BYTES = 64 * KiB


@dataclass(frozen=True)
class FileKind:
    """A kind of local input and the largest size Outpost reads of it."""

    name: str
    limit: int

    @property
    def limit_text(self) -> str:
        return _size(self.limit)


# Limits: far above anything real, far below what would hurt a run (docs/contracts.md "Local inputs").
CONFIGURATION = FileKind("configuration", 1 * MiB)
"""An environment file: the shipped ones are 4-5 KB. 1 MiB parses in well under a second."""
KUBECONFIG = FileKind("kubeconfig", 4 * MiB)
"""About 600 clusters with inline CA, client certificate and key (about 7 KB each); a probe's kubeconfig is 2-10
KB. 4 MiB parses in about 0.1 s with libyaml."""
TOKEN = FileKind("token file", 64 * KiB)
"""A service-account JWT is about 1 KB, an OIDC token with many groups tens of KB at most."""
CA_BUNDLE = FileKind("CA bundle", 4 * MiB)
"""Debian's whole ca-certificates bundle is 220 KB (144 certificates); the count is capped as well
(`outpost.cluster.auth.credentials.MAX_CA_CERTIFICATES`)."""
CLIENT_CERTIFICATE = FileKind("client certificate", 256 * KiB)
"""A certificate and its chain: a few KB."""
CLIENT_KEY = FileKind("client key", 64 * KiB)
"""An RSA-8192 private key in PEM is about 6.3 KB."""

KINDS = (CONFIGURATION, KUBECONFIG, TOKEN, CA_BUNDLE, CLIENT_CERTIFICATE, CLIENT_KEY)


class LocalFileError(OutpostError):
    """A local input was refused or could not be read; the message is one line: kind, path, reason."""

    def __init__(self, kind: FileKind, path: str | os.PathLike[str], reason: str) -> None:
        self.kind = kind
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{kind.name} {_shown(self.path)}: {reason}")


def read_bytes(path: str | os.PathLike[str], kind: FileKind, deadline: Deadline | None = None) -> bytes:
    """The content of the regular file at `path` (symlinks followed), at most `kind.limit` bytes (module doc)."""
    file = os.fspath(Path(path).expanduser())
    try:
        _require_regular(os.stat(file).st_mode, kind, file)
        descriptor = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        raise LocalFileError(kind, file, f"cannot be read: {error.strerror or type(error).__name__}") from None
    try:
        status = os.fstat(descriptor)
        _require_regular(status.st_mode, kind, file)  # what was opened, whatever the path names by now
        if status.st_size > kind.limit:
            raise LocalFileError(
                kind, file, f"is {_size(status.st_size)}, over the {kind.limit_text} limit for a {kind.name}"
            )
        chunks: list[bytes] = []
        total = 0
        while True:
            if deadline is not None and deadline.expired:
                raise LocalFileError(kind, file, f"not read within the deadline of {deadline.seconds:g} s")
            try:
                chunk = os.read(descriptor, min(CHUNK_BYTES, kind.limit + 1 - total))
            except OSError as error:
                raise LocalFileError(kind, file, f"cannot be read: {error.strerror or type(error).__name__}") from None
            if not chunk:
                return b"".join(chunks)
            total += len(chunk)
            if total > kind.limit:
                raise LocalFileError(
                    kind, file, f"grew past the {kind.limit_text} limit for a {kind.name} while it was read"
                )
            chunks.append(chunk)
    finally:
        os.close(descriptor)


def read_text(path: str | os.PathLike[str], kind: FileKind, deadline: Deadline | None = None) -> str:
    """`read_bytes`, decoded as UTF-8 (a file that is not UTF-8 text is refused, its bytes never quoted)."""
    data = read_bytes(path, kind, deadline)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise LocalFileError(kind, Path(path).expanduser(), f"is not UTF-8 text (byte {error.start})") from None


_NOT_REGULAR = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISSOCK, "a socket"),
)


def _require_regular(mode: int, kind: FileKind, path: str) -> None:
    if stat.S_ISREG(mode):
        return
    what = next((name for test, name in _NOT_REGULAR if test(mode)), "not a file")
    raise LocalFileError(kind, path, f"is {what}, not a regular file")


def _size(size: int) -> str:
    for unit, factor in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if size >= factor:
            return f"{size / factor:.1f}".removesuffix(".0") + f" {unit}"
    return f"{size} bytes"


def _shown(path: str) -> str:
    """The path on one line (a control character in a file name must not break the message)."""
    return "".join(c if c.isprintable() else "?" for c in path)
