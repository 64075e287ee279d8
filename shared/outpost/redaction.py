"""One redaction registry for the whole process, and the one function that applies it.

Every credential is registered the moment it is learned; `redact` replaces registered values, then scrubs
credential shapes (URL userinfo, queries and token-like segments, `Bearer`, `token:`, `api_key=`) so even an
unregistered echo is unlikely to pass. `install()` adds a log-record factory so third-party records are scrubbed
before any handler. Values shorter than `MIN_SECRET_LENGTH` are not held (they would scrub ordinary words).
It imports nothing from Outpost, so every layer may use it.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any, Final

REDACTED: Final = "***"
MIN_SECRET_LENGTH: Final = 6

_values: set[str] = set()
_sorted: list[str] = []
_lock = threading.Lock()

# A URL ends where a quote, space, angle bracket or backslash begins: a backslash is never part of a URL, and in
# JSON text it escapes the quote that ends one (the CLI redacts its JSON output as printed).
_URL = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<rest>[^\s\"'<>\\]+)")
# `Bearer X`, and `token: X` / `api_key=X` / `authorization: X` (a separator is required after those words,
# so "token-tracking-controller" in a readyz line stays as it is).
_BEARER = re.compile(r"(?i)\b(bearer)(\s+)([A-Za-z0-9._~+/=-]{8,})")
_KEYED = re.compile(
    r"(?i)\b((?:access[_-]?|id[_-]?)?token|api[_-]?key|authorization|password|secret)"
    r"([\"']?\s*[:=]\s*[\"']?)([A-Za-z0-9._~+/=-]{8,})"
)
# A path segment that looks generated (long, or mixing letters and digits at length >= 12) is a token.
_TOKENISH = re.compile(r"^(?=.*[A-Za-z])(?=.*\d)[A-Za-z0-9_\-.~]{12,}$|^[A-Za-z0-9_\-.~]{32,}$")


def register(value: str | None) -> None:
    """Remember a credential so every later output containing it is scrubbed (short values are ignored)."""
    if not isinstance(value, str):
        return
    value = value.strip()
    if len(value) < MIN_SECRET_LENGTH:
        return
    global _sorted
    with _lock:
        if value not in _values:
            _values.add(value)
            _sorted = sorted(_values, key=len, reverse=True)


def registered_count() -> int:
    """How many values are registered (for tests; the values themselves are never handed out)."""
    with _lock:
        return len(_values)


def _known() -> list[str]:
    with _lock:
        return _sorted


def _redact_url(match: re.Match[str]) -> str:
    scheme, rest = match.group("scheme"), match.group("rest")
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = REDACTED + "@" + authority.rpartition("@")[2]
    path, question, _query = path.partition("?")
    path, hash_sign, _fragment = path.partition("#")
    segments = [REDACTED if _TOKENISH.match(segment) else segment for segment in path.split("/")]
    redacted = scheme + authority + slash + "/".join(segments)
    if question:
        redacted += "?" + REDACTED
    if hash_sign:
        redacted += "#" + REDACTED
    return redacted


def redact(text: str) -> str:
    """`text` with registered values, credentials in URLs and bearer tokens replaced by `***`."""
    for value in _known():
        if value in text:
            text = text.replace(value, REDACTED)
    text = _URL.sub(_redact_url, text)
    text = _BEARER.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
    return _KEYED.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)


def redact_any(value: Any) -> Any:
    """A copy of `value` (str, list, dict, nested) with every string passed through `redact`."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact_any(key): redact_any(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_any(item) for item in value]
    return value


_installed = False
_install_lock = threading.Lock()
_formatter = logging.Formatter()


def scrub_record(record: logging.LogRecord) -> None:
    """Replace the record's message, exception and stack text by their redacted forms (in place)."""
    try:
        message = record.getMessage()
    except (TypeError, ValueError):
        message = str(record.msg)
    record.msg = redact(message)
    record.args = None
    if record.exc_info:
        # Format now and keep only the scrubbed text: a handler would otherwise format the raw exception.
        record.exc_text = redact(_formatter.formatException(record.exc_info))
        record.exc_info = None
    if record.stack_info:
        record.stack_info = redact(record.stack_info)


def install() -> None:
    """Scrub every log record of every logger at creation (idempotent, process-wide)."""
    global _installed
    with _install_lock:
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            scrub_record(record)
            return record

        logging.setLogRecordFactory(factory)
        _installed = True
