"""Label selectors as Kubernetes defines them, and metadata selectors for "label or annotation".

`parse_label_selector` ports k8s.io/apimachinery@v0.37.2 `pkg/labels/selector.go` Lexer and Parser token for
token (tables in test_upstream_selectors.py) and refuses what upstream refuses, so local matching and the
rendered `labelSelector` query agree with the API server. An EMPTY selector matches EVERYTHING, as in
Kubernetes: callers meaning "nothing" must not pass one. `MetadataSelector` also selects by annotation, which
KWOK's fake-node marker needs. Differences from upstream: docs/contracts.md "Parsing as upstream".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
_OPERATORS: tuple[str, ...] = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_API_OPERATORS: tuple[str, ...] = ("In", "NotIn", "Exists", "DoesNotExist")
"""`metav1.LabelSelectorOperator`: the object form has no Gt/Lt (`LabelSelectorAsSelector` refuses them)."""
_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_INT64 = re.compile(r"[+-]?[0-9]+")


def _key_problem(key: str) -> str | None:
    """upstream `IsLabelKey`: None when valid, else why not."""
    parts = key.split("/")
    if len(parts) > 2:
        return "a valid label key has at most one '/' (an optional DNS subdomain prefix and a name)"
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            return "prefix part must be non-empty"
        if len(prefix) > 253:
            return "prefix part must be no more than 253 characters"
        if not _DNS_SUBDOMAIN.fullmatch(prefix):
            return "prefix part must be a lowercase RFC 1123 subdomain"
    name = parts[-1]
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _NAME.fullmatch(name):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character"
        )
    return None


def _key(key: str) -> str:
    problem = _key_problem(key) if isinstance(key, str) else "not a string"
    if problem:
        raise ValueError(f"invalid label key {key!r}: {problem}")
    return key


def _value(value: str) -> str:
    """upstream `IsLabelValue`: empty, or a name of at most 63 characters."""
    if not isinstance(value, str) or len(value) > 63 or not (value == "" or _NAME.fullmatch(value)):
        raise ValueError(f"invalid label value: {value!r}")
    return value


def _int64(text: str) -> int | None:
    """`strconv.ParseInt(text, 10, 64)`, or None where Go returns an error."""
    if not _INT64.fullmatch(text):
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


@dataclass(frozen=True)
class Requirement:
    """One `matchExpressions` entry (matchLabels entries become `In` with one value)."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _key(self.key)
        if self.operator not in _OPERATORS:
            raise ValueError(f"unknown selector operator {self.operator!r} for key {self.key!r}")
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"selector operator {self.operator} on {self.key!r} needs at least one value")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"selector operator {self.operator} on {self.key!r} takes no values")
        if self.operator in ("Gt", "Lt"):
            if len(self.values) != 1:
                raise ValueError(f"selector operator {self.operator} on {self.key!r} takes exactly one value")
            if _int64(self.values[0]) is None:
                raise ValueError(
                    f"selector operator {self.operator} on {self.key!r} needs an integer value, got {self.values[0]!r}"
                )
        for value in self.values:
            _value(value)

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "Exists":
            return self.key in labels
        if self.operator == "DoesNotExist":
            return self.key not in labels
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        if self.operator in ("Gt", "Lt"):
            present = _int64(labels[self.key]) if self.key in labels else None
            wanted = _int64(self.values[0])
            if present is None or wanted is None:
                return False
            return present > wanted if self.operator == "Gt" else present < wanted
        return self.key not in labels or labels[self.key] not in self.values  # NotIn

    def to_query(self) -> str:
        if self.operator == "Exists":
            return self.key
        if self.operator == "DoesNotExist":
            return f"!{self.key}"
        if self.operator in ("Gt", "Lt"):
            return f"{self.key}{'>' if self.operator == 'Gt' else '<'}{self.values[0]}"
        if self.operator == "In" and len(set(self.values)) == 1:
            return f"{self.key}={self.values[0]}"
        verb = "in" if self.operator == "In" else "notin"
        return f"{self.key} {verb} ({','.join(sorted(set(self.values)))})"


@dataclass(frozen=True)
class LabelSelector:
    """A conjunction of requirements. Empty matches everything (Kubernetes semantics)."""

    requirements: tuple[Requirement, ...] = ()

    @classmethod
    def from_api(cls, raw: Mapping[str, Any] | None) -> LabelSelector:
        """From the API shape `{matchLabels: {...}, matchExpressions: [...]}`; None or {} is empty."""
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise ValueError(f"a label selector must be an object, got {type(raw).__name__}")
        requirements: list[Requirement] = []
        match_labels = raw.get("matchLabels") or {}
        if not isinstance(match_labels, Mapping):
            raise ValueError("matchLabels must be an object")
        for key, value in match_labels.items():
            requirements.append(Requirement(key, "In", (_value(str(value)),)))
        expressions = raw.get("matchExpressions") or []
        if not isinstance(expressions, list):
            raise ValueError("matchExpressions must be a list")
        for expression in expressions:
            if not isinstance(expression, Mapping):
                raise ValueError("each matchExpressions entry must be an object")
            values = expression.get("values") or []
            if not isinstance(values, list):
                raise ValueError(f"matchExpressions values for {expression.get('key')!r} must be a list")
            if expression.get("operator") not in _API_OPERATORS:
                raise ValueError(
                    f"unknown selector operator {expression.get('operator')!r} for key "
                    f"{expression.get('key')!r} (not a valid label selector operator: "
                    f"{', '.join(_API_OPERATORS)})"
                )
            requirements.append(
                Requirement(
                    str(expression.get("key", "")),
                    expression.get("operator"),  # type: ignore[arg-type]
                    tuple(str(v) for v in values),
                )
            )
        return cls(tuple(requirements))

    @classmethod
    def from_labels(cls, labels: Mapping[str, str]) -> LabelSelector:
        """Equality on every pair (what `matchLabels` alone means)."""
        return cls(tuple(Requirement(k, "In", (v,)) for k, v in labels.items()))

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        present = labels or {}
        return all(requirement.matches(present) for requirement in self.requirements)

    def to_query(self) -> str:
        """The `labelSelector` query parameter ("" for the empty selector: no filter)."""
        return ",".join(requirement.to_query() for requirement in self.requirements)

    def __str__(self) -> str:
        return self.to_query() or "(everything)"


_WHITESPACE = " \t\r\n"
_SPECIAL = "=!(),><"
_TOKENS = {
    ")": "ClosedPar",
    ",": "Comma",
    "!": "DoesNotExist",
    "==": "DoubleEquals",
    "=": "Equals",
    ">": "GreaterThan",
    "in": "In",
    "<": "LessThan",
    "!=": "NotEquals",
    "notin": "NotIn",
    "(": "OpenPar",
}
"""upstream `string2token` (selector.go): every token but Identifier, EndOfString and Error."""


def lex(text: str) -> list[tuple[str, str]]:
    """upstream `Lexer.Lex` until EndOfString (or the first Error): (kind, literal) pairs, the kind named as
    upstream names its constant without the `Token` suffix (`Identifier`, `Comma`, `NotIn`, ...).

    Go's lexer reads a NUL byte as it reads the end of the string: where a kind starts it ends the input;
    inside an identifier or a run of symbols it ends that kind and is consumed (`k\\x00=v` is `k=v`)."""
    tokens: list[tuple[str, str]] = []
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= end or text[pos] == "\0":
            tokens.append(("EndOfString", ""))
            return tokens
        if text[pos] in _SPECIAL:
            buffer, last = "", ("", "")
            while pos < end:
                char = text[pos]
                if char == "\0":
                    pos += 1
                    break
                if char not in _SPECIAL:
                    break
                buffer += char
                if buffer in _TOKENS:
                    last = (_TOKENS[buffer], buffer)
                elif last[0]:
                    break
                pos += 1
            if not last[0]:
                tokens.append(("Error", f"error expected: keyword found '{buffer}'"))
                return tokens
            tokens.append(last)
            continue
        start = pos
        while pos < end and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE and text[pos] != "\0":
            pos += 1
        literal = text[start:pos]
        if pos < end and text[pos] == "\0":
            pos += 1
        tokens.append((_TOKENS.get(literal, "Identifier"), literal))


class _Parser:
    """upstream `Parser`: lookahead/consume over the scanned tokens, `in`/`notin` read as identifiers where a
    value (or a key) is expected (ParserContext Values)."""

    def __init__(self, text: str) -> None:
        self.items = lex(text)
        self.position = 0

    def _token(self, index: int, values: bool) -> tuple[str, str]:
        kind, literal = self.items[min(index, len(self.items) - 1)]
        if values and kind in ("In", "NotIn"):
            kind = "Identifier"
        return kind, literal

    def lookahead(self, values: bool = True) -> tuple[str, str]:
        return self._token(self.position, values)

    def consume(self, values: bool = True) -> tuple[str, str]:
        self.position += 1
        return self._token(self.position - 1, values)

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            kind, literal = self.lookahead()
            if kind in ("Identifier", "DoesNotExist"):
                try:
                    requirements.append(self.requirement())
                except ValueError as error:
                    raise ValueError(f"unable to parse requirement: {error}") from None
                kind, literal = self.consume()
                if kind == "EndOfString":
                    return requirements
                if kind == "Comma":
                    after, after_literal = self.lookahead()
                    if after not in ("Identifier", "DoesNotExist"):
                        raise ValueError(f"found '{after_literal}', expected: identifier after ','")
                    continue
                raise ValueError(f"found '{literal}', expected: ',' or 'end of string'")
            if kind == "EndOfString":
                return requirements
            raise ValueError(f"found '{literal}', expected: !, identifier, or 'end of string'")

    def requirement(self) -> Requirement:
        kind, literal = self.consume()
        negated = kind == "DoesNotExist"
        if negated:
            kind, literal = self.consume()
        if kind != "Identifier":
            raise ValueError(f"found '{literal}', expected: identifier")
        key = _key(literal)
        if negated:  # whatever follows `!key` is for the caller to judge (`!x=a`: "found '='")
            return Requirement(key, "DoesNotExist")
        if self.lookahead()[0] in ("EndOfString", "Comma"):
            return Requirement(key, "Exists")
        kind, literal = self.consume(values=False)
        operators: dict[str, Operator] = {
            "In": "In",
            "NotIn": "NotIn",
            "Equals": "In",
            "DoubleEquals": "In",
            "NotEquals": "NotIn",
            "GreaterThan": "Gt",
            "LessThan": "Lt",
        }
        if kind not in operators:
            raise ValueError(f"found '{literal}', expected: in, notin, =, ==, !=, gt, lt")
        operator = operators[kind]
        values = self.value_set() if kind in ("In", "NotIn") else self.exact_value()
        return Requirement(key, operator, tuple(sorted(values)))

    def value_set(self) -> set[str]:
        kind, literal = self.consume()
        if kind != "OpenPar":
            raise ValueError(f"found '{literal}' expected: '('")
        kind, literal = self.lookahead()
        if kind in ("Identifier", "Comma"):
            values = self.identifiers()
            if self.consume()[0] != "ClosedPar":
                raise ValueError(f"found '{literal}', expected: ')'")
            return values
        if kind == "ClosedPar":  # "()" is the empty value
            self.consume()
            return {""}
        raise ValueError(f"found '{literal}', expected: ',', ')' or identifier")

    def identifiers(self) -> set[str]:
        values: set[str] = set()
        while True:
            kind, literal = self.consume()
            if kind == "Identifier":
                values.add(literal)
                after, after_literal = self.lookahead()
                if after == "Comma":
                    continue
                if after == "ClosedPar":
                    return values
                raise ValueError(f"found '{after_literal}', expected: ',' or ')'")
            if kind == "Comma":
                if not values:
                    values.add("")  # "(,"
                after = self.lookahead()[0]
                if after == "ClosedPar":
                    values.add("")  # ",)"
                    return values
                if after == "Comma":
                    values.add("")  # ",,"
                continue
            raise ValueError(f"found '{literal}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        if self.lookahead()[0] in ("EndOfString", "Comma"):
            return {""}
        kind, literal = self.consume()
        if kind == "Identifier":
            return {literal}
        raise ValueError(f"found '{literal}', expected: identifier")


def parse_label_selector(text: str) -> LabelSelector:
    """The string form, parsed as upstream's `labels.Parse` parses it (module doc). "" is empty.

    `a=b` and `a==b` are In with one value, `a!=b` NotIn with one value (it also matches objects without the
    label, as in Kubernetes). Requirements keep their written order (upstream sorts them by key; the
    conjunction means the same).
    """
    if not isinstance(text, str):
        raise ValueError(f"invalid label selector {text!r}: not a string")
    try:
        requirements = _Parser(text).parse()
    except ValueError as error:
        raise ValueError(f"invalid label selector {text!r}: {error}") from None
    return LabelSelector(tuple(requirements))


@dataclass(frozen=True)
class MetadataSelector:
    """Select by one label or annotation: present (value None) or equal to `value`."""

    source: Literal["label", "annotation"]
    key: str
    value: str | None = None

    def __post_init__(self) -> None:
        if self.source not in ("label", "annotation"):
            raise ValueError(f"metadata selector source must be label or annotation, got {self.source!r}")
        _key(self.key)

    def matches(self, labels: Mapping[str, str] | None, annotations: Mapping[str, str] | None) -> bool:
        present = (labels if self.source == "label" else annotations) or {}
        if self.key not in present:
            return False
        return self.value is None or present[self.key] == self.value

    def label_query(self) -> str | None:
        """The server-side `labelSelector` when this selects by label; None for annotations (filter locally)."""
        if self.source != "label":
            return None
        return self.key if self.value is None else f"{self.key}={self.value}"

    def __str__(self) -> str:
        return f"{self.source} {self.key}" + (f"={self.value}" if self.value is not None else "")
