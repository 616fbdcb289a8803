"""The S3 Vectors metadata filter grammar: one validator and evaluator for QueryVectors filters.

The grammar (AWS, "S3 Vectors metadata filtering"): a filter is a JSON object. Its keys are field
names or the logical operators `$and` / `$or`, each a non-empty array of filters; every key of one

object has to hold. A field maps either to a primitive (shorthand for `$eq`) or to an object of
operators, all of which have to hold:

    $eq, $ne            string, number or boolean
    $gt $gte $lt $lte   number
    $in, $nin           non-empty array of primitives
    $exists             boolean

Against a list-valued field, `$eq`, `$in` and the range operators hold when any element matches
(AWS: `{"category": {"$eq": "documentary"}}` matches `"category": ["documentary", "romance"]`);
`$ne` and `$nin` are their negations, so they also hold for a field the vector does not have.
Booleans are not numbers here (`True` does not equal `1`).

`compile_filter` validates once and returns a predicate; an invalid filter raises
`InvalidFilterError` naming where in the filter the problem is, as the service answers
ValidationException instead of running the query.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from streams.errors import MemstreamError

Predicate = Callable[[Mapping[str, Any]], bool]

LOGICAL = ("$and", "$or")
EQUALITY = ("$eq", "$ne")
RANGE = ("$gt", "$gte", "$lt", "$lte")
MEMBERSHIP = ("$in", "$nin")
OPERATORS = EQUALITY + RANGE + MEMBERSHIP + ("$exists",)


class InvalidFilterError(MemstreamError, ValueError):
    """The filter is not valid S3 Vectors filter grammar; the message says where and why."""


def compile_filter(spec: Any) -> Predicate:
    """Validate `spec` and return a predicate over one vector's metadata."""
    return _object(spec, "filter")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_primitive(value: Any) -> bool:
    return isinstance(value, (str, bool)) or _is_number(value)


def _same(a: Any, b: Any) -> bool:
    """Equality that keeps booleans apart from numbers."""
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def _object(spec: Any, where: str) -> Predicate:
    if not isinstance(spec, Mapping) or not spec:
        raise InvalidFilterError(f"{where}: expected a non-empty object, got {_shown(spec)}")
    parts = [_clause(key, value, f"{where}.{key}" if where != "filter" else key)
             for key, value in spec.items()]
    return lambda metadata: all(part(metadata) for part in parts)


def _clause(key: Any, value: Any, where: str) -> Predicate:
    if not isinstance(key, str) or not key:
        raise InvalidFilterError(f"{where}: field names are non-empty strings")
    if key in LOGICAL:
        if not isinstance(value, list) or not value:
            raise InvalidFilterError(f"{where}: expected a non-empty array of filters")
        subs = [_object(sub, f"{where}[{i}]") for i, sub in enumerate(value)]
        if key == "$and":
            return lambda metadata: all(sub(metadata) for sub in subs)
        return lambda metadata: any(sub(metadata) for sub in subs)
    if key.startswith("$"):
        raise InvalidFilterError(f"{where}: unknown operator {key!r} at the top of a filter "
                                 f"(only $and and $or; field operators go under a field)")
    if _is_primitive(value):
        return _operator(key, "$eq", value, where)
    if isinstance(value, Mapping) and value:
        ops = [_operator(key, op, arg, f"{where}.{op}") for op, arg in value.items()]
        return lambda metadata: all(op(metadata) for op in ops)
    raise InvalidFilterError(f"{where}: expected a string, number, boolean or an object of "
                             f"operators, got {_shown(value)}")


def _operator(field: str, op: Any, arg: Any, where: str) -> Predicate:
    if op in EQUALITY:
        if not _is_primitive(arg):
            raise InvalidFilterError(f"{where}: expected a string, number or boolean")
        equal = _any_element(field, lambda v: _same(v, arg))
        return equal if op == "$eq" else (lambda metadata: not equal(metadata))
    if op in RANGE:
        if not _is_number(arg):
            raise InvalidFilterError(f"{where}: expected a number")
        compare = {
            "$gt": lambda v: v > arg, "$gte": lambda v: v >= arg,
            "$lt": lambda v: v < arg, "$lte": lambda v: v <= arg,
        }[op]
        return _any_element(field, lambda v: _is_number(v) and compare(v))
    if op in MEMBERSHIP:
        if not isinstance(arg, list) or not arg or not all(_is_primitive(a) for a in arg):
            raise InvalidFilterError(f"{where}: expected a non-empty array of strings, numbers "
                                     f"or booleans")
        member = _any_element(field, lambda v: any(_same(v, a) for a in arg))
        return member if op == "$in" else (lambda metadata: not member(metadata))
    if op == "$exists":
        if not isinstance(arg, bool):
            raise InvalidFilterError(f"{where}: expected true or false")
        return lambda metadata: (field in metadata) == arg
    raise InvalidFilterError(f"{where}: unknown operator {op!r} (valid: {', '.join(OPERATORS)})")


def _any_element(field: str, test: Callable[[Any], bool]) -> Predicate:
    """The field's value passes `test`, or any element does when the value is a list."""

    def predicate(metadata: Mapping[str, Any]) -> bool:
        if field not in metadata:
            return False
        value = metadata[field]
        if isinstance(value, list):
            return any(test(v) for v in value)
        return test(value)

    return predicate


def _shown(value: Any) -> str:
    """The JSON type of a value, never the value: filters may carry personal data."""
    if isinstance(value, Mapping):
        return "an empty object" if not value else "an object"
    return {list: "an array", type(None): "null"}.get(type(value), type(value).__name__)
