"""Label selectors as Kubernetes defines them, and metadata selectors for "label or annotation".

Guarantees:
- `LabelSelector` reads the API shape (`matchLabels`, `matchExpressions` with In, NotIn, Exists,
  DoesNotExist), matches locally exactly as the API server does, and renders the `labelSelector`
  query string (equality for matchLabels, set-based syntax for expressions), so a check may filter on
  the server or locally with the same result;
- an EMPTY selector matches EVERYTHING (Kubernetes semantics for `{}`; a DaemonSet or webhook with no
  selector applies to every object). Callers that mean "nothing" must not pass an empty selector;
- `parse_label_selector` reads the string form (as written in configuration) and refuses what it
  cannot read (ValueError quoting the text) rather than guessing;
- `MetadataSelector` picks objects by a label OR an annotation (KWOK fake nodes are marked by the
  annotation `kwok.x-k8s.io/node=fake`, which no label selector can select).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Operator = Literal["In", "NotIn", "Exists", "DoesNotExist"]
_OPERATORS: tuple[str, ...] = ("In", "NotIn", "Exists", "DoesNotExist")
_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


def _key(key: str) -> str:
    if not isinstance(key, str) or not _KEY.match(key):
        raise ValueError(f"invalid label key: {key!r}")
    return key


def _value(value: str) -> str:
    if not isinstance(value, str) or not _VALUE.match(value) or len(value) > 63:
        raise ValueError(f"invalid label value: {value!r}")
    return value


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
        for value in self.values:
            _value(value)

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "Exists":
            return self.key in labels
        if self.operator == "DoesNotExist":
            return self.key not in labels
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        return self.key not in labels or labels[self.key] not in self.values  # NotIn

    def to_query(self) -> str:
        if self.operator == "Exists":
            return self.key
        if self.operator == "DoesNotExist":
            return f"!{self.key}"
        if self.operator == "In" and len(self.values) == 1:
            return f"{self.key}={self.values[0]}"
        verb = "in" if self.operator == "In" else "notin"
        return f"{self.key} {verb} ({','.join(sorted(self.values))})"


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
            requirements.append(Requirement(str(expression.get("key", "")), expression.get("operator"),  # type: ignore[arg-type]
                                            tuple(str(v) for v in values)))
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


_SET = re.compile(r"^(?P<key>\S+)\s+(?P<op>in|notin)\s+\((?P<values>[^()]*)\)$")


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    depth, start = 0, 0
    for index, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced parentheses in label selector {text!r}")
        elif char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    if depth:
        raise ValueError(f"unbalanced parentheses in label selector {text!r}")
    parts.append(text[start:])
    return parts


def parse_label_selector(text: str) -> LabelSelector:
    """The string form: `a=b`, `a==b`, `a!=b`, `a`, `!a`, `a in (x,y)`, `a notin (x)`, comma-joined.

    `a!=b` is NotIn (it also matches objects without the label, as in Kubernetes). "" is empty.
    """
    requirements: list[Requirement] = []
    if not text.strip():
        return LabelSelector()
    try:
        for raw_part in _split_top_level(text):
            part = raw_part.strip()
            if not part:
                raise ValueError("empty requirement")
            set_based = _SET.match(part)
            if set_based:
                values = tuple(v.strip() for v in set_based["values"].split(",") if v.strip())
                operator: Operator = "In" if set_based["op"] == "in" else "NotIn"
                requirements.append(Requirement(set_based["key"], operator, values))
            elif "!=" in part:
                key, _, value = part.partition("!=")
                requirements.append(Requirement(key.strip(), "NotIn", (value.strip(),)))
            elif "=" in part:
                key, _, value = part.partition("==") if "==" in part else part.partition("=")
                requirements.append(Requirement(key.strip(), "In", (value.strip(),)))
            elif part.startswith("!"):
                requirements.append(Requirement(part[1:].strip(), "DoesNotExist"))
            else:
                requirements.append(Requirement(part, "Exists"))
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
