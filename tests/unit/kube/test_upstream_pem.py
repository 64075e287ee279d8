"""`outpost.kube.certificates` PEM framing and caBundle trust against upstream: Go 1.26 `encoding/pem` Decode with
`pem_test.go`'s tests, and the API server's caBundle path (k8s.io/client-go@v0.37.2 `transport/transport.go`
rootCertPool over `x509.CertPool.AppendCertsFromPEM`).

BUNDLES and PEM_DATA_BLOCKS were computed by the real Go code and recorded as static tables (with TestGetLine's, in
`tests/unit/fixtures/upstream/{ca_bundle,pem}.json`, read by `kit.upstream_vectors`); the CA certificates are public
test certificates (no key kept). Deliberate differences: pemData's encrypted key block is replaced by a harmless
block of the same shape (no key material checked in); TestCVE202224675 repeats 10^5 times, not 10^7; DER is parsed
by `cryptography`, not Go's x509.
"""

from __future__ import annotations

import base64
import time
from datetime import UTC, datetime

import pytest

from kit.upstream_vectors import rows, source
from outpost.kube.certificates import (
    NotACertificate,
    _get_line,
    earliest_expiry,
    parse_base64_pem_bundle,
    parse_base64_pem_chain,
    parse_ca_bundle,
    parse_pem_bundle,
    pem_decode,
)

PEM_TEST = source("pem")
CA_BUNDLE = source("ca_bundle")

CA_OLD = (
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBPjCB5aADAgECAgIKETAKBggqhkjOPQQDAjAeMRwwGgYDVQQDDBN3ZWJob29r\n"
    "LWNlcnQtY2Egb2xkMB4XDTI2MDEwMTAwMDAwMFoXDTM2MDEwMTAwMDAwMFowHjEc\n"
    "MBoGA1UEAwwTd2ViaG9vay1jZXJ0LWNhIG9sZDBZMBMGByqGSM49AgEGCCqGSM49\n"
    "AwEHA0IABMTaNkkBj4xltMXxBH5/okee5NDS63dvP9n6+6yYqNmvSSjX6L8u0UbH\n"
    "cU1pXJIdzDnnkiaKIaytwRNUSVyBdjWjEzARMA8GA1UdEwEB/wQFMAMBAf8wCgYI\n"
    "KoZIzj0EAwIDSAAwRQIhAIXKK6cHR6d+00tixX7M9x8WpLXbzv+PNVes1mKHITMc\n"
    "AiARh0sy6s9QE1KPu9xsoILdXwU5L9+P6jK0PqPBBU7eEw==\n"
    "-----END CERTIFICATE-----\n"
)
CA_NEW = (
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBPjCB5aADAgECAgILIjAKBggqhkjOPQQDAjAeMRwwGgYDVQQDDBN3ZWJob29r\n"
    "LWNlcnQtY2EgbmV3MB4XDTI2MDYwMTAwMDAwMFoXDTI3MDMwMTAwMDAwMFowHjEc\n"
    "MBoGA1UEAwwTd2ViaG9vay1jZXJ0LWNhIG5ldzBZMBMGByqGSM49AgEGCCqGSM49\n"
    "AwEHA0IABJN/U1ZVP9P2g48Zck67iOUc1sR5dHZniSOPY6wCxXbC2MZlKltWbr2r\n"
    "gylzu5IPIrzZYrxhGx9ZSYUd6gSDkQWjEzARMA8GA1UdEwEB/wQFMAMBAf8wCgYI\n"
    "KoZIzj0EAwIDSAAwRQIgEv20/ih/JRbWaQwjyxdi3gjlzebN2Q5XapRpdO6goqIC\n"
    "IQCavSRa2toM8ppwAFMwVxm7kfPfeEPGlA+czZnqJYy6yA==\n"
    "-----END CERTIFICATE-----\n"
)

CA_NOT_AFTER = {"CA_OLD": datetime(2036, 1, 1, tzinfo=UTC), "CA_NEW": datetime(2027, 3, 1, tzinfo=UTC)}


def _end(pem: str, new: str) -> str:
    return pem.replace("-----END CERTIFICATE-----", new)


def _headers(pem: str, headers: str) -> str:
    return pem.replace("-----BEGIN CERTIFICATE-----\n", "-----BEGIN CERTIFICATE-----\n" + headers, 1)


NOT_DER = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
OTHER_BLOCK = "-----BEGIN EXAMPLE DATA-----\naGVsbG8=\n-----END EXAMPLE DATA-----\n"


def variants(a: str, b: str) -> dict[str, str]:
    """caBundle shapes built from two CA certificates (PEM text ending in a newline)."""
    lines = a.splitlines(keepends=True)
    return {
        "one certificate": a,
        "rotation bundle: old and new CA": a + b,
        "no final newline": a.rstrip("\n"),
        "CRLF line endings": a.replace("\n", "\r\n"),
        "text after the bundle": a + b + "trailing text\n",
        "text before the bundle": "subject=CN = webhook-cert-ca\n" + a,
        "text between the blocks": a + "junk between\n" + b,
        "text on the END line": _end(a, "-----END CERTIFICATE----- trailing"),
        "text glued to the END line": _end(a, "-----END CERTIFICATE-----trailing"),
        "END line with four dashes": _end(a, "-----END CERTIFICATE----"),
        "END line with six dashes": _end(a, "-----END CERTIFICATE------"),
        "END of another type": _end(a, "-----END CERT-----"),
        "no END line": "".join(lines[:-1]),
        "END line with trailing spaces": _end(a, "-----END CERTIFICATE-----  \t"),
        "BEGIN line with trailing spaces": a.replace("-----BEGIN CERTIFICATE-----", "-----BEGIN CERTIFICATE-----  "),
        "BEGIN not at a line start": "junk " + a,
        "indented BEGIN": "  " + a,
        "lower-case type": a.replace("CERTIFICATE", "certificate"),
        "second certificate's END malformed": a + _end(b, "-----END CERTIFICATE----- trailing"),
        "first certificate's END malformed": _end(a, "-----END CERTIFICATE----") + b,
        "headers on the certificate": _headers(a, "Proc-Type: 4,ENCRYPTED\n\n"),
        "headers on the first of two": _headers(a, "Comment: old\n\n") + b,
        "another block type before": OTHER_BLOCK + a,
        "only another block type": OTHER_BLOCK,
        "certificate block that is not DER": NOT_DER,
        "not-DER block, then a certificate": NOT_DER + a,
        "spaces and tabs inside the body": "".join(
            line if line.startswith("-----") else " " + line.replace("A", "A\t", 1) for line in lines
        ),
        "body that is not base64": a.replace(lines[1], "*" + lines[1][1:]),
        "body without its padding": a.replace("=\n", "\n"),
        "the same certificate twice": a + a,
        "a NUL byte after": a + "\x00",
        "whitespace only": "\n \n",
        "plain text": "not a certificate at all\n",
    }


BUNDLES = rows("ca_bundle", "bundles")
"""(shape, the certificates the API server trusts (None: it refuses the bundle))."""

PEM_DATA = (
    "verify return:0\n"
    "-----BEGIN CERTIFICATE-----\n"
    "sdlfkjskldfj\n"
    "  -----BEGIN CERTIFICATE-----\n"
    "---\n"
    "Certificate chain\n"
    " 0 s:/C=AU/ST=Somewhere/L=Someplace/O=Foo Bar/CN=foo.example.com\n"
    "   i:/C=ZA/O=CA Inc./CN=CA Inc\n"
    "-----BEGIN CERTIFICATE-----\n"
    "testing\n"
    "-----BEGIN CERTIFICATE-----\n"
    "-----BEGIN CERTIFICATE-----\n"
    "MIID6TCCA1ICAQEwDQYJKoZIhvcNAQEFBQAwgYsxCzAJBgNVBAYTAlVTMRMwEQYD\n"
    "VQQIEwpDYWxpZm9ybmlhMRYwFAYDVQQHEw1TYW4gRnJhbmNpc2NvMRQwEgYDVQQK\n"
    "EwtHb29nbGUgSW5jLjEMMAoGA1UECxMDRW5nMQwwCgYDVQQDEwNhZ2wxHTAbBgkq\n"
    "hkiG9w0BCQEWDmFnbEBnb29nbGUuY29tMB4XDTA5MDkwOTIyMDU0M1oXDTEwMDkw\n"
    "OTIyMDU0M1owajELMAkGA1UEBhMCQVUxEzARBgNVBAgTClNvbWUtU3RhdGUxITAf\n"
    "BgNVBAoTGEludGVybmV0IFdpZGdpdHMgUHR5IEx0ZDEjMCEGA1UEAxMaZXVyb3Bh\n"
    "LnNmby5jb3JwLmdvb2dsZS5jb20wggIiMA0GCSqGSIb3DQEBAQUAA4ICDwAwggIK\n"
    "AoICAQC6pgYt7/EibBDumASF+S0qvqdL/f+nouJw2T1Qc8GmXF/iiUcrsgzh/Fd8\n"
    "pDhz/T96Qg9IyR4ztuc2MXrmPra+zAuSf5bevFReSqvpIt8Duv0HbDbcqs/XKPfB\n"
    "uMDe+of7a9GCywvAZ4ZUJcp0thqD9fKTTjUWOBzHY1uNE4RitrhmJCrbBGXbJ249\n"
    "bvgmb7jgdInH2PU7PT55hujvOoIsQW2osXBFRur4pF1wmVh4W4lTLD6pjfIMUcML\n"
    "ICHEXEN73PDic8KS3EtNYCwoIld+tpIBjE1QOb1KOyuJBNW6Esw9ALZn7stWdYcE\n"
    "qAwvv20egN2tEXqj7Q4/1ccyPZc3PQgC3FJ8Be2mtllM+80qf4dAaQ/fWvCtOrQ5\n"
    "pnfe9juQvCo8Y0VGlFcrSys/MzSg9LJ/24jZVgzQved/Qupsp89wVidwIzjt+WdS\n"
    "fyWfH0/v1aQLvu5cMYuW//C0W2nlYziL5blETntM8My2ybNARy3ICHxCBv2RNtPI\n"
    "WQVm+E9/W5rwh2IJR4DHn2LHwUVmT/hHNTdBLl5Uhwr4Wc7JhE7AVqb14pVNz1lr\n"
    "5jxsp//ncIwftb7mZQ3DF03Yna+jJhpzx8CQoeLT6aQCHyzmH68MrHHT4MALPyUs\n"
    "Pomjn71GNTtDeWAXibjCgdL6iHACCF6Htbl0zGlG0OAK+bdn0QIDAQABMA0GCSqG\n"
    "SIb3DQEBBQUAA4GBAOKnQDtqBV24vVqvesL5dnmyFpFPXBn3WdFfwD6DzEb21UVG\n"
    "5krmJiu+ViipORJPGMkgoL6BjU21XI95VQbun5P8vvg8Z+FnFsvRFY3e1CCzAVQY\n"
    "ZsUkLw2I7zI/dNlWdB8Xp7v+3w9sX5N3J/WuJ1KOO5m26kRlHQo7EzT3974g\n"
    "-----END CERTIFICATE-----\n"
    " 1 s:/C=ZA/O=Ca Inc./CN=CA Inc\n"
    "\n"
    "-----BEGIN HEADERS TEST-----\n"
    "Proc-Type: 4,ENCRYPTED\n"
    "DEK-Info: DES-EDE3-CBC,80C7C7A09690757A\n"
    "\n"
    "aGVsbG8=\n"
    "-----END HEADERS TEST-----\n"
    "\n"
    "\n"
    "-----BEGIN EMPTY-----\n"
    "-----END EMPTY-----\n"
    "\n"
    "-----BEGIN EMPTY-----\n"
    "\n"
    "-----END EMPTY-----\n"
    "\n"
    "-----BEGIN EMPTY-----\n"
    "\n"
    "\n"
    "-----END EMPTY-----\n"
    "\n"
    "# This shouldn't be recognised because of the missing newline after the\n"
    "headers.\n"
    "-----BEGIN INVALID HEADERS-----\n"
    "Header: 1\n"
    "-----END INVALID HEADERS-----\n"
    "\n"
    "# This should be valid, however.\n"
    "-----BEGIN VALID HEADERS-----\n"
    "Header: 1\n"
    "\n"
    "-----END VALID HEADERS-----"
)
PEM_DATA_BLOCKS = rows("pem", "pem_data_blocks")
"""(type, headers, body length) of each block pem.Decode returns, in order."""

VARIANTS = variants(CA_OLD, CA_NEW)


@pytest.mark.parametrize(("shape", "trusted"), BUNDLES, ids=[s for s, _ in BUNDLES])
def test_ca_bundle_is_judged_as_the_api_server_judges_it(shape: str, trusted: tuple[str, ...] | None) -> None:
    text = VARIANTS[shape]
    if trusted is None:
        with pytest.raises(NotACertificate) as raised:
            parse_ca_bundle(text)
        assert "CERTIFICATE" not in str(raised.value).replace("PEM CERTIFICATE block", ""), "no input is quoted"
        with pytest.raises(NotACertificate):
            parse_base64_pem_bundle(base64.b64encode(text.encode("latin-1")).decode())
        return
    infos = parse_ca_bundle(text)
    assert [info.not_after for info in infos] == [CA_NOT_AFTER[name] for name in trusted], f"{CA_BUNDLE}: {shape}"
    assert parse_base64_pem_bundle(base64.b64encode(text.encode("latin-1")).decode()) == infos
    assert earliest_expiry(infos).not_after == min(CA_NOT_AFTER[name] for name in trusted)


@pytest.mark.parametrize(
    "shape",
    [
        "text on the END line",
        "END line with four dashes",
        "no END line",
        "headers on the certificate",
        "certificate block that is not DER",
    ],
)
def test_a_refused_bundle_is_never_given_days_left(shape: str) -> None:
    """The finding of issue 20: such a bundle was read and judged by its expiry although the API server refuses
    it (every call to the webhook fails)."""
    with pytest.raises(NotACertificate):
        parse_base64_pem_bundle(base64.b64encode(VARIANTS[shape].encode()).decode())


def test_serving_chain_is_strict() -> None:
    """A serving certificate (parse_pem_bundle): Go's framing, every CERTIFICATE block must parse."""
    assert [i.not_after for i in parse_pem_bundle(CA_OLD + CA_NEW)] == [CA_NOT_AFTER["CA_OLD"], CA_NOT_AFTER["CA_NEW"]]
    with pytest.raises(NotACertificate, match="PEM block 1 of 2 does not parse"):
        parse_pem_bundle(NOT_DER + CA_OLD)
    with pytest.raises(NotACertificate, match="no PEM CERTIFICATE block"):
        parse_pem_bundle(VARIANTS["text on the END line"])
    assert parse_base64_pem_chain(base64.b64encode(CA_OLD.encode()).decode())[0].not_after == CA_NOT_AFTER["CA_OLD"]


# -- pem_test.go ---------------------------------------------------------------------------------------------------

GET_LINE = rows("pem", "get_line")


@pytest.mark.parametrize(("text", "line", "rest"), GET_LINE)
def test_get_line(text: str, line: str, rest: str) -> None:
    got_line, got_rest, _ = _get_line(text.encode())
    assert (got_line, got_rest) == (line.encode(), rest.encode()), f"{PEM_TEST} TestGetLine"


def test_decode_walks_pem_data() -> None:
    """TestDecode over pemData (key block replaced, module doc): the certificate after the noise, the headers
    block, three EMPTY blocks, the VALID HEADERS block; INVALID HEADERS (no blank line before END) is skipped;
    nothing remains."""
    rest = PEM_DATA.encode()
    seen = []
    while True:
        block, rest = pem_decode(rest)
        if block is None:
            break
        seen.append((block.type, block.headers, len(block.data)))
    assert seen == PEM_DATA_BLOCKS, f"{PEM_TEST} TestDecode"
    assert rest == b""


BAD = {
    "too few trailing dashes": "\n-----BEGIN FOO-----\ndGVzdA==\n-----END FOO----",
    "too many trailing dashes": "\n-----BEGIN FOO-----\ndGVzdA==\n-----END FOO------",
    "trailing non-whitespace": "\n-----BEGIN FOO-----\ndGVzdA==\n-----END FOO----- .",
    "incorrect ending type": "\n-----BEGIN FOO-----\ndGVzdA==\n-----END BAR-----",
    "missing ending space": "\n-----BEGIN FOO-----\ndGVzdA==\n-----ENDBAR-----",
    "repeating begin": "-----BEGIN \n" * 10,
    "missing end line": "\n-----BEGIN FOO-----\nHeader: 1",
    "just END (TestJustEnd)": "\n-----END PUBLIC KEY-----",
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_decode(name: str) -> None:
    block, rest = pem_decode(BAD[name].encode())
    assert block is None, f"{PEM_TEST} TestBadDecode {name}"
    assert rest == BAD[name].encode()


STRANGE = {
    "invalid section (not base64)": "-----BEGIN COMMENT-----\nfoo foo foo\n-----END COMMENT-----\n"
    "-----BEGIN TEST BLOCK-----\naGVsbG8=\n-----END TEST BLOCK-----",
    "leading garbage on block": "foo foo foo-----BEGIN CERTIFICATE-----\n"
    "MCowBQYDK2VwAyEApVjJeLW5MoP6uR3+OeITokM+rBDng6dgl1vvhcy+wws=\n-----END PUBLIC KEY-----\n"
    "-----BEGIN TEST BLOCK-----\naGVsbG8=\n-----END TEST BLOCK-----",
    "leading garbage": "foo foo foo\n-----BEGIN TEST BLOCK-----\naGVsbG8=\n-----END TEST BLOCK-----",
    "leading partial block": "foo foo foo\n-----END COMMENT-----\n-----BEGIN TEST BLOCK-----\naGVsbG8=\n"
    "-----END TEST BLOCK-----",
    "multiple BEGIN": "-----BEGIN TEST BLOCK-----\n-----BEGIN TEST BLOCK-----\n-----BEGIN TEST BLOCK-----\n"
    "aGVsbG8=\n-----END TEST BLOCK-----",
    "multiple END": "-----BEGIN TEST BLOCK-----\naGVsbG8=\n-----END TEST BLOCK-----\n-----END TEST BLOCK-----\n"
    "-----END TEST BLOCK-----",
    "leading malformed BEGIN": "-----BEGIN PUBLIC KEY\naGVsbG8=\n-----END PUBLIC KEY-----\n"
    "-----BEGIN TEST BLOCK-----\naGVsbG8=\n-----END TEST BLOCK-----",
}


@pytest.mark.parametrize("name", sorted(STRANGE))
def test_decode_strange_cases(name: str) -> None:
    block, _ = pem_decode(STRANGE[name].encode())
    assert block is not None, f"{PEM_TEST} TestDecodeStrangeCases {name}"
    assert (block.type, block.data) == ("TEST BLOCK", b"hello")


def test_missing_end_trailer() -> None:
    """TestMissingEndTrailer: must not fail (Go: must not panic)."""
    data = b"-----BEGIN " + b" " * 84 + b"\n-----END "
    assert pem_decode(data) == (None, data)


def test_many_begin_lines_do_not_blow_up() -> None:
    """TestCVE202224675 (10^5 lines here, module doc): no recursion, linear time."""
    data = b"-----BEGIN \n" * 100_000
    started = time.monotonic()
    assert pem_decode(data) == (None, data)
    assert time.monotonic() - started < 5
