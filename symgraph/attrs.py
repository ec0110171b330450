"""MXNet attribute strings: parse ``"(3, 3)"``, ``"False"``, ``"None"`` into values and back.

MXNet keeps every operator attribute as the string Python's ``str()`` made of the
keyword argument; JSON files store those strings. An op's :class:`Param` schema parses
them (with MXNet's leniency: ``"1"`` is a bool, ``"[3,3]"`` a shape) into a
:class:`Params` record the shape rules and kernels read.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from .base import AttrError, DTypeError, dtype_name

REQUIRED = object()

_TRUE = {"true", "1"}
_FALSE = {"false", "0"}


def to_attr_string(value: Any) -> str:
    """Python value to the string MXNet's frontend stores (``str(value)``; dtypes by name).

    >>> to_attr_string((3, 3)), to_attr_string(True), to_attr_string(0.5), to_attr_string(None)
    ('(3, 3)', 'True', '0.5', 'None')
    """
    if isinstance(value, str):
        return value
    if isinstance(value, type) and issubclass(value, np.generic) or isinstance(value, np.dtype):
        return np.dtype(value).name
    return str(_plain(value))


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as Python numbers and tuples (numpy 2 prints ``np.int64(3)``).

    >>> _plain((np.int64(3), np.float32(0.5))), _plain(np.array([2, 3]))
    ((3, 0.5), (2, 3))
    """
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return tuple(_plain(v) for v in value.tolist()) if value.ndim else value.item()
    if isinstance(value, (tuple, list)):
        return type(value)(_plain(v) for v in value)
    return value


def _parse_bool(s: str) -> bool:
    low = s.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ValueError(f"expected a boolean, got {s!r}")


# Attribute strings parsed as numbers or tuples are bounded (a shape of 32 dims is ~400
# characters) and parsed without recursion; integers beyond 2**62 are refused, as MXNet's
# int32/int64 fields refuse what they cannot hold (shape arithmetic stays in int64).
MAX_NUMERIC_CHARS = 4096
MAX_INT = 2**62
# The most inputs or outputs a variadic op (Concat, add_n, SliceChannel...) may declare: its
# input names are listed before the inputs are counted, so the count is bounded first.
MAX_VARIADIC = 2**20
_INT = re.compile(r"[+-]?\d+L?")  # "3L": Python 2's longs, as MXNet's parser takes them
_TUPLE = re.compile(r"\((.*)\)|\[(.*)\]", re.DOTALL)


def _bounded(s: str) -> str:
    if len(s) > MAX_NUMERIC_CHARS:
        raise ValueError(f"{len(s)} characters, more than the limit of {MAX_NUMERIC_CHARS}")
    return s.strip()


def _checked_int(value: int) -> int:
    if abs(value) > MAX_INT:
        raise ValueError(f"{value} is out of range (|value| <= 2**62)")
    return value


def _int_item(item: str, allow_none: bool = False) -> int | None:
    item = item.strip()
    if allow_none and item == "None":
        return None
    if not _INT.fullmatch(item):
        raise ValueError(f"{item[:40]!r} is not an integer")
    return _checked_int(int(item.rstrip("L")))


def _items(s: str, allow_none: bool = False) -> tuple:
    """``"(3, 3)"``, ``"[3,3]"``, ``"(3,)"`` or ``"3"``: the integers (or Nones) listed."""
    s = _bounded(s)
    match = _TUPLE.fullmatch(s)
    if match is None:
        return (_int_item(s, allow_none),)
    inner = (match.group(1) if match.group(1) is not None else match.group(2)).strip()
    if not inner:
        return ()
    parts = inner.split(",")
    if not parts[-1].strip() and len(parts) > 1:
        parts.pop()  # "(3,)"
    return tuple(_int_item(p, allow_none) for p in parts)


def _parse_tuple(s: str) -> tuple[int, ...]:
    """A shape: ``"(3, 3)"`` -> ``(3, 3)``; ``""`` and ``"()"`` -> ``()``.

    >>> _parse_tuple('[2,3]'), _parse_tuple('4'), _parse_tuple('(1,)')
    ((2, 3), (4,), (1,))
    """
    if not s.strip():
        return ()
    try:
        return _items(s)
    except ValueError as err:
        raise ValueError(f"expected a shape such as (3, 3), got {s[:80]!r}: {err}") from None


def _parse_tuple_with_none(s: str) -> tuple:
    """A tuple of ints where entries may be None: slice's ``begin``/``end``/``step``; a bare
    ``None`` (a Python ``step=None``) is the empty tuple, as MXNet reads it."""
    if not s.strip() or s.strip() == "None":
        return ()
    try:
        return _items(s, allow_none=True)
    except ValueError as err:
        raise ValueError(f"expected a tuple of int or None such as (None, 1), got "
                         f"{s[:80]!r}: {err}") from None


def _parse_optional(inner):
    def parse(s: str):
        return None if s.strip() in ("None", "") else inner(s)
    return parse


def _parse_axis(s: str):
    """An axis attribute: ``None``, an int or a tuple of ints."""
    s = _bounded(s)
    if s in ("None", ""):
        return None
    if _INT.fullmatch(s):
        return _int_item(s)
    return _parse_tuple(s)


def _parse_dtype(s: str) -> str:
    try:
        return dtype_name(s.strip())
    except DTypeError as err:
        raise ValueError(str(err)) from err


def _parse_float(s: str) -> float:
    return float(_bounded(s))


def _parse_floats(s: str) -> tuple[float, ...]:
    """MXNet's ``tuple of <float>``: ``"(0.1, 0.2)"``, ``"[0.1,0.2]"`` or ``"0.1"``.

    >>> _parse_floats('(0.5, 1)'), _parse_floats('2')
    ((0.5, 1.0), (2.0,))
    """
    s = _bounded(s)
    match = _TUPLE.fullmatch(s)
    inner = s if match is None else (match.group(1) if match.group(1) is not None
                                      else match.group(2))
    return tuple(float(x) for x in inner.split(",") if x.strip())


def _parse_int(s: str) -> int:
    """An integer; an integral float spelling (``"3.0"``, ``"1e3"``) is taken too."""
    s = _bounded(s)
    if _INT.fullmatch(s):
        return _int_item(s)
    f = float(s)
    if not math.isfinite(f) or f != int(f):
        raise ValueError(f"{s[:40]!r} is not an integer")
    return _checked_int(int(f))


_PARSERS = {
    "int": _parse_int,
    "float": _parse_float,
    "floats": _parse_floats,
    "floats_or_none": _parse_optional(_parse_floats),
    "bool": _parse_bool,
    "str": str,
    "shape": _parse_tuple,
    "int_or_none": _parse_optional(_parse_int),
    "float_or_none": _parse_optional(_parse_float),
    "shape_or_none": _parse_optional(_parse_tuple),
    "shape_with_none": _parse_tuple_with_none,
    "bool_or_none": _parse_optional(_parse_bool),
    "axis": _parse_axis,
    "dtype": _parse_dtype,
    "dtype_or_none": _parse_optional(_parse_dtype),
}


@dataclass(frozen=True)
class Param:
    """One operator parameter: name, kind (a key of ``_PARSERS``), default, allowed values."""

    name: str
    kind: str
    default: Any = REQUIRED
    choices: tuple = ()
    doc: str = ""
    lower: float | None = None  # inclusive lower bound, checked like MXNet's set_lower_bound
    upper: float | None = None  # inclusive upper bound (counts of variadic inputs/outputs)

    def __post_init__(self):
        assert self.kind in _PARSERS, self.kind

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def parse(self, text: str) -> Any:
        """Parse an attribute string; raises ``ValueError`` with the reason."""
        if not isinstance(text, str):
            raise TypeError(f"attribute values are strings, got {type(text).__name__}")
        value = _PARSERS[self.kind](text)
        if self.choices and value not in self.choices:
            raise ValueError(f"Invalid Input: {text!r}, valid values are: "
                             f"{set(self.choices)}")
        if self.lower is not None and value is not None and value < self.lower:
            raise ValueError(f"value {value} for Parameter {self.name} should be greater "
                             f"equal to {self.lower:g}")
        if self.upper is not None and value is not None and value > self.upper:
            raise ValueError(f"value {value} for Parameter {self.name} should be less "
                             f"equal to {self.upper:g}")
        return value

    def describe(self) -> str:
        default = "required" if self.required else f"default={self.default!r}"
        choices = f", one of {list(self.choices)}" if self.choices else ""
        return f"{self.name} : {self.kind}, {default}{choices}"


_KIND_WORDS = {"bool": "boolean", "bool_or_none": "boolean or None", "shape": "Shape(tuple)"}


class Params(dict):
    """Parsed operator parameters with attribute access (``p.num_hidden``).

    The instance's ``__dict__`` is the dict itself, so ``p.num_hidden`` is a plain attribute
    lookup (ops read params on every step; ``__getattr__`` costs 20x more).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.__dict__ = self

    def __reduce__(self):
        return (type(self), (dict(self),))


# Attributes MXNet always stores with double underscores (``lr_mult`` -> ``__lr_mult__``).
HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage")


def hide_keys(attrs: dict[str, str]) -> dict[str, str]:
    """MXNet's spelling of user attributes: hidden keys get their double underscores.

    >>> hide_keys({'lr_mult': '0.1', 'kernel': '(3, 3)'})
    {'__lr_mult__': '0.1', 'kernel': '(3, 3)'}
    """
    return {(f"__{k}__" if k in HIDDEN_KEYS else k): v for k, v in attrs.items()}


def with_plain_keys(attrs: dict[str, str]) -> dict[str, str]:
    """Attributes as MXNet lists them: hidden keys also appear without underscores."""
    out = dict(attrs)
    for key in HIDDEN_KEYS:
        if f"__{key}__" in attrs:
            out[key] = attrs[f"__{key}__"]
    return out


def check_string_values(attrs: dict) -> None:
    """MXNet only stores string attribute values."""
    for key, value in attrs.items():
        if not isinstance(value, str):
            raise ValueError(f"Set Attr only accepts string values, got {key}={value!r}")


def is_user_attr(key: str) -> bool:
    """Attributes MXNet keeps beside op params: ``__lr_mult__``, ``__shape__``, ``ctx_group``..."""
    return key.startswith("__") and key.endswith("__")


def parse_params(schema: tuple[Param, ...], attrs: dict[str, str], where: str) -> Params:
    """Parse the op-param subset of ``attrs``; unknown keys and bad values raise ``AttrError``
    (an op without parameters keeps unknown keys as plain attributes, as MXNet's ops
    without a parameter struct do).

    ``where`` names the node and op for the message, e.g. ``"operator fc1 (FullyConnected)"``.
    """
    by_name = {p.name: p for p in schema}
    for key in attrs:
        if schema and key not in by_name and not is_user_attr(key):
            raise AttrError(f"Error in {where}: Cannot find argument '{key}', Possible "
                            f"Arguments:\n" + "\n".join(p.describe() for p in schema))
    out = Params()
    for p in schema:
        if p.name in attrs:
            try:
                out[p.name] = p.parse(attrs[p.name])
            except (ValueError, SyntaxError, TypeError) as err:
                msg = str(err)
                if not msg.startswith(("Invalid Input", "value ")):
                    kind = _KIND_WORDS.get(p.kind, p.kind)
                    msg = (f"Invalid Parameter format for {p.name} expect {kind} but "
                           f"value='{attrs[p.name]}' ({err})")
                raise AttrError(f"Error in {where}: {msg}") from None
        elif p.required:
            raise AttrError(f"Error in {where}: Required parameter {p.name} of {p.kind} "
                            f"is not presented")
        else:
            out[p.name] = p.default
    return out
