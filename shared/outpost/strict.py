"""Scalars as they were written: a number is not a bool or a string, a bool is not a number or a string.

pydantic's lax mode, which configurations need (YAML lists for tuples), also reads `deadline_seconds: true` as 1
and `"3"` as 3; full strict mode would refuse the lists too. `StrictScalars` refuses only the scalar coercions,
naming the field: a wrong type in a monitor's configuration is a mistake, never something to guess at.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, model_validator

_NUMBERS = (int, float)


def _members(annotation: Any) -> list[Any]:
    """The types `annotation` accepts, looking through Optional, unions and Annotated."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [member for argument in typing.get_args(annotation) for member in _members(argument)]
    return [annotation]


def _scalar_kinds(annotation: Any) -> set[type]:
    """The scalar types (bool, int, float) `annotation` accepts."""
    return {member for member in _members(annotation) if member in (bool, int, float)}


def _other_kinds(annotation: Any) -> set[Any]:
    """Every non-scalar member of a union (a field that also takes a string takes it as written)."""
    return {member for member in _members(annotation) if member not in (bool, int, float, type(None))}


class _WrongKind:
    """Stands in for a value of the wrong scalar kind, so that the field's own validation refuses it with the
    field's path (and every other field is still validated: all problems are reported at once)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


class StrictScalars(BaseModel):
    """Refuses lax scalar coercions on the model's bool/int/float fields (see the module docstring)."""

    @model_validator(mode="before")
    @classmethod
    def _scalars_as_written(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        checked = dict(data)
        for name, field in cls.model_fields.items():
            key = field.alias if field.alias is not None and field.alias in data else name
            if key not in data or data[key] is None:
                continue
            kinds = _scalar_kinds(field.annotation)
            if kinds and str not in _other_kinds(field.annotation) and _wrong_kind(kinds, data[key]):
                checked[key] = _WrongKind(data[key])
        return checked


def _wrong_kind(kinds: set[type], value: Any) -> bool:
    if isinstance(value, bool):
        return bool not in kinds
    if isinstance(value, _NUMBERS):
        return not kinds & {int, float}
    return isinstance(value, str | bytes)
