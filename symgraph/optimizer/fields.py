"""What an optimizer-states file may set: validators of optimizer and scheduler fields.

An optimizer saved with ``get_states(dump_optimizer=True)`` is rebuilt from its attributes,
and a file is data, not code: each optimizer class declares the attributes it saves
(``savable_fields``: name -> validator, merged over the class hierarchy), and each value is
checked by type and range before the optimizer is built. Numbers must be finite; the
hyper-parameters that scale an update (learning rate, weight decay, rescale, momentum and
their multipliers) are bounded by ``MAX_MAGNITUDE``, so that a product of three of them
stays within float32's range and a step from finite weights stays finite. Schedulers are
rebuilt the same way from the allow-list of their class (``SCHEDULER_FIELDS``).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from .. import lr_scheduler as _lrs
from ..ndarray import NDArray

MAX_MAGNITUDE = 1e10
MAX_COUNT = 2 ** 62
# the most loop iterations a FactorScheduler may need to catch up with num_update
MAX_SCHEDULER_CATCHUP = 1_000_000


class FieldError(ValueError):
    """A saved field is not of its type or out of its range (the loader names the file and
    the field)."""


class SavedScheduler(NamedTuple):
    """A scheduler as the file describes it: class name and attribute dict."""
    name: str
    state: object


def _kind(value) -> str:
    return "None" if value is None else type(value).__name__


@dataclass(frozen=True)
class Real:
    """A finite number (int or float, not bool) in ``[low, high]`` (bounds excluded when
    ``open_low``/``open_high``); also None when ``optional``. Ints stay ints."""
    low: float = -MAX_MAGNITUDE
    high: float = MAX_MAGNITUDE
    open_low: bool = False
    open_high: bool = False
    optional: bool = False

    def __call__(self, value):
        if value is None and self.optional:
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FieldError(f"expected a number, got {_kind(value)}")
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not (math.isfinite(number) and self.low <= number <= self.high) \
                or (self.open_low and number == self.low) \
                or (self.open_high and number == self.high):
            raise FieldError(f"{value!r} is not a finite number in "
                             f"{'(' if self.open_low else '['}{self.low:g}, {self.high:g}"
                             f"{')' if self.open_high else ']'}")
        return value


def boolean(value):
    """``True`` or ``False``."""
    if not isinstance(value, bool):
        raise FieldError(f"expected a bool, got {_kind(value)}")
    return value


def count(value):
    """An int in ``[0, MAX_COUNT]`` (update counts, steps, sizes)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise FieldError(f"expected an int in [0, 2**62], got {value!r:.40}")
    return value


def no_aggregation(value):
    """``aggregate_num`` of a rule that updates one weight per call: 0."""
    if isinstance(value, bool) or value != 0 or not isinstance(value, int):
        raise FieldError(f"must be 0 (this optimizer updates one weight at a time), got "
                         f"{value!r:.40}")
    return value


def text(value):
    """A string."""
    if not isinstance(value, str):
        raise FieldError(f"expected a string, got {_kind(value)}")
    return value


def one_of(*choices: str) -> Callable:
    """One of the strings ``choices``."""
    def check(value):
        if value not in choices or not isinstance(value, str):
            raise FieldError(f"expected one of {list(choices)}, got {value!r:.40}")
        return value
    return check


def _key(key):
    if isinstance(key, bool) or not isinstance(key, (int, str)):
        raise FieldError(f"dict keys must be ints or strings, got {_kind(key)}")
    return key


def dict_of(value_check: Callable, key_check: Callable = _key) -> Callable:
    """A dict whose keys pass ``key_check`` (ints or strings) and values ``value_check``."""
    def check(value):
        if not isinstance(value, dict):
            raise FieldError(f"expected a dict, got {_kind(value)}")
        for k, v in value.items():
            key_check(k)
            try:
                value_check(v)
            except FieldError as err:
                raise FieldError(f"entry {k!r:.40}: {err}") from None
        return value
    return check


def array(value):
    """An NDArray."""
    if not isinstance(value, NDArray):
        raise FieldError(f"expected an array, got {_kind(value)}")
    return value


def _sym_info(value):
    """``()`` or ``(attribute dict, argument names)`` of the optimizer's symbol."""
    if isinstance(value, tuple) and not value:
        return value
    if not (isinstance(value, tuple) and len(value) == 2):
        raise FieldError(f"expected () or a pair, got {_kind(value)}")
    dict_of(dict_of(text, text), text)(value[0])
    if not (isinstance(value[1], list) and all(isinstance(n, str) for n in value[1])):
        raise FieldError("argument names must be a list of strings")
    return value


def _cumgrad(value):
    """LBSGD's per-index macro-batch sum: ``{'cum_grad': array or 0, 'num_cums': int}``."""
    if not (isinstance(value, dict) and set(value) == {"cum_grad", "num_cums"}):
        raise FieldError("expected {'cum_grad': ..., 'num_cums': ...}")
    if not isinstance(value["cum_grad"], NDArray):
        REAL(value["cum_grad"])
    count(value["num_cums"])
    return value


def lr_scheduler(value):
    """None or a scheduler of :mod:`symgraph.lr_scheduler`, rebuilt from its allow-list."""
    if value is None:
        return None
    if not isinstance(value, SavedScheduler):
        raise FieldError(f"expected a scheduler, got {_kind(value)}")
    klass = _SCHEDULERS.get(value.name) if isinstance(value.name, str) else None
    if klass is None:
        raise FieldError(f"{value.name!r:.40} is not a scheduler class that can be loaded "
                         f"(one of {sorted(_SCHEDULERS)})")
    allowed = SCHEDULER_FIELDS[klass]
    state = check_fields(value.state, allowed, f"{value.name} field")
    _check_scheduler(klass, state)
    sched = klass.__new__(klass)
    for name, field in state.items():
        setattr(sched, name, field)
    return sched


def fields_of(klass: type) -> dict[str, Callable]:
    """The fields an optimizer class saves: ``savable_fields`` merged over its bases."""
    merged: dict = {}
    for base in reversed(klass.__mro__):
        merged.update(vars(base).get("savable_fields", {}))
    return merged


def check_fields(attrs, allowed: dict, what: str) -> dict:
    """``attrs`` checked against ``allowed``: the same names, each value valid; returns the
    validators' values (a scheduler comes back rebuilt)."""
    if not isinstance(attrs, dict) or not all(isinstance(k, str) for k in attrs):
        raise FieldError(f"expected a dict of {what}s")
    unknown = sorted(set(attrs) - set(allowed))
    if unknown:
        raise FieldError(f"unknown {what} {unknown[0]!r:.60}")
    missing = sorted(set(allowed) - set(attrs))
    if missing:
        raise FieldError(f"missing {what} {missing[0]!r}")
    checked = {}
    for name, value in attrs.items():
        try:
            checked[name] = allowed[name](value)
        except FieldError as err:
            raise FieldError(f"{what} {name!r}: {err}") from None
    return checked


def _check_scheduler(klass: type, state: dict) -> None:
    """What a scheduler's fields must satisfy together (its constructor's checks)."""
    if state["warmup_begin_lr"] > state["warmup_final_lr"]:
        raise FieldError("warmup_begin_lr is above warmup_final_lr")
    if klass is _lrs.MultiFactorScheduler:
        steps = state["step"]
        if not (isinstance(steps, list) and steps and all(
                count(s) >= 1 for s in steps) and all(a < b for a, b in zip(steps, steps[1:]))):
            raise FieldError("step must be an increasing list of ints >= 1")
        if state["cur_step_ind"] > len(steps):
            raise FieldError("cur_step_ind is past the end of step")
    if klass in (_lrs.PolyScheduler, _lrs.CosineScheduler):
        if state["max_steps"] != state["max_update"] - state["warmup_steps"] \
                or state["max_steps"] < 1:
            raise FieldError("max_steps must be max_update - warmup_steps, at least 1")


def check_optimizer(values: dict) -> None:
    """What an optimizer's base fields must satisfy together."""
    if values["lr"] is None and values["lr_scheduler"] is None:
        raise FieldError("lr is None and there is no lr_scheduler")
    num_update = values["num_update"]
    if values["begin_num_update"] > num_update:
        raise FieldError("begin_num_update is above num_update")
    for counts in values["_all_index_update_counts"].values():
        if any(c > num_update for c in counts.values()):
            raise FieldError("an update count is above num_update")
    sched = values["lr_scheduler"]
    # the next call loops once per step it is behind (none while warming up)
    if isinstance(sched, _lrs.FactorScheduler) and num_update + 1 >= sched.warmup_steps \
            and (num_update + 1 - sched.count) / sched.step > MAX_SCHEDULER_CATCHUP:
        raise FieldError(f"lr_scheduler.count {sched.count} is too far behind num_update "
                         f"{num_update} (more than {MAX_SCHEDULER_CATCHUP} steps to catch up)")


REAL = Real()
OPTIONAL_REAL = Real(optional=True)
NON_NEGATIVE = Real(low=0.0)
POSITIVE = Real(low=0.0, open_low=True)
POSITIVE_LR = Real(low=0.0, open_low=True, optional=True)  # rules dividing by lr
DECAY = Real(0.0, 1.0, open_high=True)  # betas: 1 - beta**t must not be 0
UNIT = Real(0.0, 1.0)
# a clipping bound only ever shrinks values: any finite magnitude
BOUND = Real(-math.inf, math.inf, optional=True)
MULTIPLIERS = dict_of(REAL)
UPDATE_COUNTS = dict_of(dict_of(count), key_check=count)
CUMGRADS = dict_of(_cumgrad)

OPTIMIZER_FIELDS = {
    "rescale_grad": REAL, "lr_scheduler": lr_scheduler, "lr": OPTIONAL_REAL, "wd": REAL,
    "lr_mult": MULTIPLIERS, "wd_mult": MULTIPLIERS, "begin_num_update": count,
    "num_update": count, "_all_index_update_counts": UPDATE_COUNTS, "clip_gradient": BOUND,
    "multi_precision": boolean, "aggregate_num": no_aggregation, "idx2name": dict_of(text),
    "sym_info": _sym_info, "allow_np_array": boolean,
}

_WARMUP = {"base_lr": REAL, "warmup_steps": count, "warmup_final_lr": REAL,
           "warmup_begin_lr": REAL, "warmup_mode": one_of("linear", "constant")}
_DECAY_TO = {"base_lr_orig": REAL, "max_update": count, "final_lr": REAL, "max_steps": count}
SCHEDULER_FIELDS: dict[type, dict[str, Callable]] = {
    _lrs.FactorScheduler: {**_WARMUP, "step": Real(1.0), "factor": UNIT,
                           "stop_factor_lr": REAL, "count": Real(0.0, math.inf)},
    _lrs.MultiFactorScheduler: {**_WARMUP, "step": lambda v: v, "cur_step_ind": count,
                                "factor": UNIT, "count": count},
    _lrs.PolyScheduler: {**_WARMUP, **_DECAY_TO, "power": NON_NEGATIVE},
    _lrs.CosineScheduler: {**_WARMUP, **_DECAY_TO},
}
_SCHEDULERS = {klass.__name__: klass for klass in SCHEDULER_FIELDS}
