"""The one redaction registry: what it scrubs, where it applies, and what it refuses to hold."""

from __future__ import annotations

import datetime as dt
import io
import json
import logging

from outpost import redaction
from outpost.logs import install_redaction
from outpost.notify.message import AlarmFacts, compose, parse_run_line
from outpost.result import Result, Status

TOKEN = "registry-test-Qm4Zx9Lp2Rt"


def test_a_registered_value_is_scrubbed_from_any_text() -> None:
    redaction.register(TOKEN)
    assert redaction.redact(f"the server said: {TOKEN} is invalid") == "the server said: *** is invalid"


def test_short_values_are_not_held() -> None:
    count = redaction.registered_count()
    redaction.register("abc")
    redaction.register("")
    redaction.register(None)
    assert redaction.registered_count() == count
    assert redaction.redact("abc def") == "abc def"


def test_ordinary_words_next_to_token_survive() -> None:
    line = "[+]poststarthook/start-legacy-token-tracking-controller ok"
    assert redaction.redact(line) == line


def test_keyed_and_bearer_shapes_are_scrubbed_even_unregistered() -> None:
    assert redaction.redact('{"token": "abcdefgh12345678"}') == '{"token": "***"}'
    assert redaction.redact("Authorization: Bearer abcdefgh12345678") == "Authorization: Bearer ***"
    assert redaction.redact("api_key=abcdefgh12345678&x") == "api_key=***&x"


def test_every_logger_is_scrubbed_third_party_ones_and_exception_text_included() -> None:
    install_redaction()
    redaction.register(TOKEN)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    root.addHandler(handler)
    previous = root.level
    root.setLevel(logging.DEBUG)
    try:
        logging.getLogger("kubernetes.config.exec_provider").error("exec: process returned 1. %s", f"token {TOKEN}")
        try:
            raise RuntimeError(f"refresh failed for {TOKEN}")
        except RuntimeError:
            logging.getLogger("google.auth.transport").exception("oops")
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)
    text = stream.getvalue()
    assert TOKEN not in text
    assert "exec: process returned 1." in text
    assert "RuntimeError: refresh failed for ***" in text


def test_results_are_scrubbed_when_built() -> None:
    redaction.register(TOKEN)
    result = Result(
        check="c",
        status=Status.FAILED,
        summary=f"HTTP 500 {TOKEN}",
        errors=[f"echo {TOKEN}"],
        details={"body": f"<pre>{TOKEN}</pre>", "nested": [{"k": TOKEN}]},
    )
    assert TOKEN not in result.model_dump_json()
    assert Result.error("c", "line one\nline two").summary == "line one line two"


def test_json_text_stays_json_when_a_url_with_a_query_is_redacted_in_it() -> None:
    # The API server's webhook errors quote the URL it called, query included; the CLI redacts the JSON it prints.
    message = 'failed calling webhook "mpod.kb.io": Post "https://svc.ns.svc:443/mutate-pod?timeout=10s": EOF'
    printed = redaction.redact(json.dumps({"summary": redaction.redact(message)}))
    assert json.loads(printed) == {
        "summary": 'failed calling webhook "mpod.kb.io": Post "https://svc.ns.svc:443/mutate-pod?***": EOF'
    }


def test_the_notifiers_message_is_scrubbed_whole() -> None:
    # A run line read back from a log (any process's, any age) and an alarm message made of it: every field of the
    # message, its subject and attributes included, passes the registry again (outpost.notify.message).
    redaction.register(TOKEN)
    line = {
        "check": "apiserver-health",
        "status": "failed",
        "summary": f"HTTP 500 {TOKEN}",
        "next_steps": [{"failure": TOKEN, "cause": f"echo {TOKEN}", "command": f"curl {TOKEN}", "see": TOKEN}],
        "run_id": TOKEN,
        "time": TOKEN,
        "cluster": TOKEN,
    }
    facts = AlarmFacts("prod", "apiserver-health", "failed", "ALARM", dt.datetime(2026, 1, 1, tzinfo=dt.UTC), "a")
    message = compose(facts, parse_run_line(json.dumps(line), "apiserver-health"), missing=TOKEN, max_bytes=4096)
    assert TOKEN not in message.subject + message.body + json.dumps(message.attributes)
    assert compose(facts, None, missing=f"denied: {TOKEN}", cluster=TOKEN, max_bytes=4096).body.count(TOKEN) == 0
