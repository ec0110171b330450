"""``mx.profiler``: timing of executed kernels and user ranges, as a Chrome trace.

While the profiler runs (``set_state('run')``, not paused), every step an executor runs
(forward and backward, Module and Gluon alike) and every imperative ``mx.nd`` operator is
timed and recorded as one complete event (``"ph": "X"``): an executor step is named
``<node>:<op>`` with the node, the operator and the implementation the plan chose in
``args``; an imperative operator is named after MXNet's operator (``sqrt``,
``_plus_scalar``). Steps on a CUDA device are timed with CUDA events, so their times are
GPU times (resolved at the next ``dump``/``dumps``/``set_state('stop')``). User objects
add their own events: ``Task``/``Frame``/``Event`` ranges, ``Counter`` values (``"C"``)
and ``Marker`` instants (``"i"``).

``dump()`` writes ``{"traceEvents": [...], "displayTimeUnit": "ms"}`` to the configured
file (atomically; a continuous dump rewrites it with everything recorded so far), which
chrome://tracing and Perfetto open. ``dumps()`` returns MXNet's aggregate table (or its
JSON layout) when ``aggregate_stats=True``: per category and name, count and total / min /
max / average time in ms.

The executor checks one flag per run (not per step) and switches to a timed copy of its
step loop only while the profiler runs, so an idle profiler costs nothing.

Examples
--------
>>> import json, os, tempfile
>>> import symgraph as mx
>>> path = os.path.join(tempfile.mkdtemp(), 'profile.json')
>>> mx.profiler.set_config(filename=path, aggregate_stats=True)
>>> mx.profiler.set_state('run')
>>> y = mx.nd.sqrt(mx.nd.ones((2, 2))) + 1
>>> mx.profiler.set_state('stop')
>>> mx.profiler.dump()
>>> events = json.load(open(path))['traceEvents']
>>> [e['name'] for e in events if e['ph'] == 'X']
['_ones', 'sqrt', '_plus_scalar']
>>> json.loads(mx.profiler.dumps(format='json'))['Time']['operator']['sqrt']['Count']
1
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import threading
import time
import warnings
from collections.abc import Callable

from .base import MXNetError
from .fileio import atomic_write
from .profiler_stats import Stat as _Stat
from .profiler_stats import render_json as _json
from .profiler_stats import render_table as _table

__all__ = ["set_config", "profiler_set_config", "set_state", "profiler_set_state", "state",
           "dump", "dump_profile", "dumps", "pause", "resume", "Domain", "Task", "Frame",
           "Event", "Counter", "Marker", "scope", "set_kvstore_handle"]


class _Active:
    """What the hooks read: whether symbolic / imperative operators are being recorded."""

    __slots__ = ("symbolic", "imperative")

    def __init__(self):
        self.symbolic = self.imperative = False


ACTIVE = _Active()


@dataclasses.dataclass
class _Config:
    """MXNet's ProfileConfigParam fields and defaults."""

    profile_all: bool = False
    profile_symbolic: bool = True
    profile_imperative: bool = True
    profile_memory: bool = True
    profile_api: bool = True
    filename: str = "profile.json"
    continuous_dump: bool = True
    dump_period: float = 1.0
    aggregate_stats: bool = False
    profile_process: str = "worker"


_BOOLS = {"true": True, "1": True, "false": False, "0": False}


def _parse_config(current: _Config, kwargs: dict) -> _Config:
    """``current`` updated by ``kwargs`` (values or their strings); every entry checked."""
    fields = {f.name: f.type for f in dataclasses.fields(_Config)}
    changes = {}
    for key, value in kwargs.items():
        if key not in fields:
            raise MXNetError(f"profiler.set_config: cannot find argument {key!r}; arguments "
                             f"are {sorted(fields)}")
        kind = fields[key]
        if kind == "bool":
            flag = _BOOLS.get(str(value).strip().lower())
            if flag is None:
                raise MXNetError(f"profiler.set_config: {key}={value!r} is not a boolean")
            value = flag
        elif kind == "float":
            value = float(value)
            if value <= 0:
                raise MXNetError(f"profiler.set_config: dump_period must be > 0, got {value}")
        elif key == "profile_process" and value not in ("worker", "server"):
            raise MXNetError(f"profiler.set_config: profile_process must be 'worker' or "
                             f"'server', got {value!r}")
        changes[key] = str(value) if kind == "str" else value
    return dataclasses.replace(current, **changes)


class _Clock:
    """Microseconds since the epoch from a monotonic counter (set on first use)."""

    offset: float | None = None

    @classmethod
    def now(cls) -> float:
        perf = time.perf_counter_ns() / 1000.0
        if cls.offset is None:
            cls.offset = time.time_ns() / 1000.0 - perf
        return perf + cls.offset


class _Profiler:
    """The process's profiler state: configuration, recorded events, aggregates."""

    def __init__(self):
        self.config = _Config()
        self.state = "stop"
        self.paused = False
        self.output = False  # MXNet's enable_output_: set by 'run', cleared by a last dump
        self.dumping = False
        self.pending: list[dict] = []  # events not yet written
        self.written: list[dict] = []  # events in the file (continuous dumps rewrite it)
        self.dumps_done = 0
        self.last_dump = 0.0
        self.dump_cost = 0.0  # seconds the last dump took
        self.stats: dict[str, dict[str, _Stat]] | None = None
        self.pids: dict[str, int] = {}
        self.gpu = _GpuTimer()
        self.local = threading.local()  # per thread: scopes (category, name prefix)
        self.lock = threading.RLock()

    @property
    def scopes(self) -> list[tuple[str, str]]:
        """This thread's open scopes, innermost last."""
        scopes = getattr(self.local, "scopes", None)
        if scopes is None:
            scopes = self.local.scopes = []
        return scopes

    def update_active(self) -> None:
        on = self.state == "run" and not self.paused
        cfg = self.config
        ACTIVE.symbolic = on and (cfg.profile_symbolic or cfg.profile_all)
        ACTIVE.imperative = on and (cfg.profile_imperative or cfg.profile_all)

    @property
    def recording(self) -> bool:
        return self.state == "run" and not self.paused

    def pid(self, category: str) -> int:
        """The trace process id of a category (one per category, named by metadata)."""
        pid = self.pids.get(category)
        if pid is None:
            pid = self.pids[category] = len(self.pids)
            self.pending.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                                 "args": {"name": category}})
        return pid

    def add(self, event: dict, stat: float | None = None, key: str | None = None) -> None:
        """Record ``event`` (its ``cat`` names the category); ``stat``: its aggregate value,
        kept under ``key`` (default: the event's name)."""
        with self.lock:
            event["pid"] = self.pid(event["cat"])
            event.setdefault("tid", threading.get_native_id())
            self.pending.append(event)
            if self.stats is not None:
                table = self.stats.setdefault(event["cat"], {})
                if stat is not None:
                    name = event["name"] if key is None else key
                    table.setdefault(name, _Stat(counter=event["ph"] == "C")).add(stat)
        # a continuous dump rewrites the whole file: spaced so that it costs <= 10% of the time
        if self.config.continuous_dump and self.output and not self.dumping and \
                time.monotonic() - self.last_dump > max(self.config.dump_period,
                                                        10 * self.dump_cost):
            try:
                self.dump(finished=False)
            except MXNetError as err:  # a periodic dump never fails the operator it follows
                self.last_dump = time.monotonic()
                warnings.warn(str(err), RuntimeWarning, stacklevel=3)

    def dump(self, finished: bool) -> None:
        """Write the trace file: MXNet's DumpProfile (a file per non-continuous dump)."""
        with self.lock:
            if not self.output:
                return
            self.dumping = True
            try:
                self.gpu.flush(self)
            finally:
                self.dumping = False
            last = finished or not self.config.continuous_dump
            appending = self.dumps_done > 0 and self.config.continuous_dump
            events = self.written + self.pending if appending else self.pending
            began = time.monotonic()
            try:
                atomic_write(self.config.filename, _trace_text(events).encode())
            except OSError as err:  # nothing changes: a later dump writes the same events
                raise MXNetError(f"profiler.dump: cannot write the trace file "
                                 f"{self.config.filename!r}: {err}") from None
            self.written, self.pending = events, []
            self.dumps_done += 1
            self.last_dump = time.monotonic()
            self.dump_cost = self.last_dump - began
            if last:
                self.output, self.written, self.dumps_done, self.pids = False, [], 0, {}

    def reset_output(self) -> None:
        """A new configuration: MXNet removes the old output file and starts afresh."""
        with contextlib.suppress(OSError):
            os.unlink(self.config.filename)
        self.pending, self.written, self.dumps_done, self.pids = [], [], 0, {}
        self.last_dump = self.dump_cost = 0.0


def _trace_text(events: list[dict]) -> str:
    """Chrome's JSON object format, one event per line."""
    lines = ",\n".join("  " + json.dumps(e) for e in events)
    return f'{{"traceEvents": [\n{lines}\n],\n"displayTimeUnit": "ms"}}\n'


class _GpuTimer:
    """CUDA-event timing of steps: events recorded around each launch, resolved later."""

    def __init__(self):
        self.records: list[tuple] = []  # (start, end CUDA events, event dict, stat key)
        self.ref = None  # (reference CUDA event, its host time in us)

    def start(self):
        import torch
        if self.ref is None:
            torch.cuda.synchronize()
            ref = torch.cuda.Event(enable_timing=True)
            ref.record()
            self.ref = (ref, _Clock.now())
        begin = torch.cuda.Event(enable_timing=True)
        begin.record()
        return begin

    def stop(self, begin, event: dict, key: str | None = None) -> None:
        import torch
        end = torch.cuda.Event(enable_timing=True)
        end.record()
        self.records.append((begin, end, event, key))

    def flush(self, prof: _Profiler) -> None:
        """Give the recorded GPU steps their times and record them."""
        if not self.records:
            return
        import torch
        torch.cuda.synchronize()
        ref, host = self.ref
        records, self.records, self.ref = self.records, [], None
        for begin, end, event, key in records:
            event["ts"] = host + ref.elapsed_time(begin) * 1000.0
            event["dur"] = begin.elapsed_time(end) * 1000.0
            prof.add(event, event["dur"], key)


_PROF = _Profiler()


# ---------------------------------------------------------------- hooks

def _op_name(node) -> str:
    """The operator a plan step runs (a fused chain lists its members' operators)."""
    if node.op is not None:
        return node.op.name
    members = getattr(node, "members", None) or ()
    return "_fused(" + "+".join(m.op.name for m in members) + ")"


def run_steps(steps: list, values: list, rt, labels: dict, phase: str) -> None:
    """An executor's step loop with each step timed and recorded (the profiled twin of
    ``executor._run``); ``labels``: node name -> implementation label."""
    cuda = getattr(rt, "device", None) is not None and rt.device.type == "cuda"
    gpu, prefix = _PROF.gpu, _PROF.scopes[-1][1] if _PROF.scopes else ""
    for fn, p, ins, aux, outs, frees, node in steps:
        op = _op_name(node)
        event = {"name": f"{prefix}{node.name}:{op}", "cat": "operator", "ph": "X",
                 "args": {"node": node.name, "op": op, "phase": phase,
                          "impl": labels.get(node.name, "")}}
        if cuda:
            begin = gpu.start()
            r = fn(p, [values[i] for i in ins], [values[i] for i in aux], rt)
            gpu.stop(begin, event, op)
        else:
            start = _Clock.now()
            r = fn(p, [values[i] for i in ins], [values[i] for i in aux], rt)
            event["ts"], event["dur"] = start, _Clock.now() - start
            _PROF.add(event, event["dur"], op)
        for o, t in zip(outs, r):
            values[o] = t
        for f in frees:
            values[f] = None


def call_imperative(op: str, fn: Callable, *args, device=None, info: dict | None = None):
    """``fn(*args)`` timed as one imperative operator ``op`` (inside a scope: the scope's
    category and ``<scope>::<op>``); ``info`` goes into the event's ``args``."""
    category, name = "operator", op
    if _PROF.scopes:
        category, prefix = _PROF.scopes[-1]
        name = f"{prefix}{op}"
    event = {"name": name, "cat": category, "ph": "X", "args": {"op": op, **(info or {})}}
    if device is not None and device.type == "cuda":
        begin = _PROF.gpu.start()
        out = fn(*args)
        _PROF.gpu.stop(begin, event)
        return out
    start = _Clock.now()
    out = fn(*args)
    event["ts"], event["dur"] = start, _Clock.now() - start
    _PROF.add(event, event["dur"])
    return out


# MXNet's operators behind NDArray arithmetic: name -> (array op, scalar op, reflected op)
_ARITH = {
    "add": ("broadcast_add", "_plus_scalar", "_plus_scalar"),
    "sub": ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
    "mul": ("broadcast_mul", "_mul_scalar", "_mul_scalar"),
    "div": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
    "mod": ("broadcast_mod", "_mod_scalar", "_rmod_scalar"),
    "pow": ("broadcast_power", "_power_scalar", "_rpower_scalar"),
    "maximum": ("broadcast_maximum", "_maximum_scalar", "_maximum_scalar"),
    "minimum": ("broadcast_minimum", "_minimum_scalar", "_minimum_scalar"),
    "eq": ("broadcast_equal", "_equal_scalar", "_equal_scalar"),
    "ne": ("broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar"),
    "gt": ("broadcast_greater", "_greater_scalar", "_lesser_scalar"),
    "ge": ("broadcast_greater_equal", "_greater_equal_scalar", "_lesser_equal_scalar"),
    "lt": ("broadcast_lesser", "_lesser_scalar", "_greater_scalar"),
    "le": ("broadcast_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar"),
}


def arithmetic_name(name: str, scalar: bool, reflected: bool) -> str:
    """MXNet's operator for NDArray arithmetic ``name`` (``x + 1`` runs ``_plus_scalar``)."""
    ops = _ARITH.get(name)
    if ops is None:
        return name
    return ops[0] if not scalar else ops[2 if reflected else 1]


@contextlib.contextmanager
def custom_op_scope(op_type: str, backward: bool = False):
    """Time a custom operator's Python ``forward``/``backward`` as MXNet does: one
    ``<op_type>::pure_python`` event (``_backward_<op_type>::pure_python``) in category
    ``Custom Operator``, and the imperative operators it runs as ``<op_type>::<op>``."""
    if not _PROF.recording:
        yield
        return
    name = f"_backward_{op_type}" if backward else op_type
    _PROF.scopes.append(("Custom Operator", f"{op_type}::"))
    start = _Clock.now()
    try:
        yield
    finally:
        _PROF.scopes.pop()
        dur = _Clock.now() - start
        _PROF.add({"name": f"{name}::pure_python", "cat": "Custom Operator", "ph": "X",
                   "ts": start, "dur": dur}, dur)


@contextlib.contextmanager
def scope(name: str = "<unk>:", append_mode: bool = False):
    """Prefix the names of the operators recorded inside the block with ``name``
    (MXNet 2's ``profiler.scope``; ``append_mode`` appends to the enclosing scope's).

    Examples
    --------
    >>> import symgraph as mx
    >>> with mx.profiler.scope('step1:'):
    ...     y = mx.nd.ones((2,)) * 2
    """
    prefix = name
    if append_mode and _PROF.scopes:
        prefix = _PROF.scopes[-1][1] + name
    _PROF.scopes.append(("operator", prefix))
    try:
        yield
    finally:
        _PROF.scopes.pop()


# ---------------------------------------------------------------- control

_KVSTORE = [None]


def set_kvstore_handle(handle) -> None:
    """Remember the kvstore whose server a ``profile_process='server'`` call targets."""
    _KVSTORE[0] = handle


def _check_process(profile_process: str, what: str) -> None:
    if profile_process == "worker":
        return
    if profile_process != "server":
        raise MXNetError(f"profiler.{what}: profile_process must be 'worker' or 'server', "
                         f"got {profile_process!r}")
    raise MXNetError(f"profiler.{what}: profile_process='server' profiles a kvstore server "
                     f"process; symgraph's dist kvstore has no server processes to profile")


def set_config(**kwargs) -> None:
    """Configure the profiler (keyword arguments only; MXNet's names and defaults).

    Parameters
    ----------
    filename : str
        Trace file written by :func:`dump` (default ``profile.json``).
    profile_all, profile_symbolic, profile_imperative : bool
        Which operators are recorded: executor steps, imperative ``mx.nd`` calls, or both.
    profile_memory, profile_api : bool
        Accepted for compatibility (memory and C-API events are not recorded).
    continuous_dump : bool
        Each dump rewrites the file with everything recorded so far, and recording dumps
        every ``dump_period`` seconds (default True, as in MXNet).
    dump_period : float
        Seconds between continuous dumps.
    aggregate_stats : bool
        Keep per-operator statistics for :func:`dumps`.
    profile_process : str
        'worker' ('server' needs kvstore server processes, which symgraph has not).

    Examples
    --------
    >>> import symgraph as mx
    >>> mx.profiler.set_config(profile_all=True, filename='prof.json', dump_perid=1)
    Traceback (most recent call last):
    ...
    symgraph.base.MXNetError: profiler.set_config: cannot find argument 'dump_perid'; \
arguments are [...]
    """
    config = _parse_config(_PROF.config, kwargs)
    _check_process(config.profile_process, "set_config")
    with _PROF.lock:
        _PROF.config = config
        _PROF.reset_output()
        if not config.aggregate_stats:
            _PROF.stats = None
        elif _PROF.stats is None:
            _PROF.stats = {}
        _PROF.update_active()


def profiler_set_config(mode: str = "symbolic", filename: str = "profile.json") -> None:
    """Deprecated: ``set_config(profile_<mode>=True, filename=filename)``."""
    warnings.warn("profiler.profiler_set_config() is deprecated. Please use "
                  "profiler.set_config() instead", DeprecationWarning, stacklevel=2)
    set_config(**{f"profile_{mode}": True, "filename": filename})


def set_state(state: str = "stop", profile_process: str = "worker") -> None:
    """Start ('run') or stop ('stop') recording.

    Examples
    --------
    >>> import symgraph as mx
    >>> mx.profiler.set_state('walk')
    Traceback (most recent call last):
    ...
    symgraph.base.MXNetError: profiler.set_state: state must be 'run' or 'stop', got 'walk'
    """
    if state not in ("run", "stop"):
        raise MXNetError(f"profiler.set_state: state must be 'run' or 'stop', got {state!r}")
    _check_process(profile_process, "set_state")
    with _PROF.lock:
        if state == "run":
            if not _PROF.output and _PROF.state == "stop":
                _register_exit_dump()
            _PROF.output = True
        else:
            _PROF.gpu.flush(_PROF)
        _PROF.state, _PROF.paused = state, False
        _PROF.update_active()


def _register_exit_dump() -> None:
    """At exit, write what is left, as MXNet's profiler does when it is destroyed."""
    import atexit
    if not getattr(_register_exit_dump, "done", False):
        atexit.register(_exit_dump)
        _register_exit_dump.done = True


def _exit_dump() -> None:
    try:
        _PROF.dump(finished=True)
    except MXNetError as err:
        warnings.warn(str(err), RuntimeWarning, stacklevel=1)


def state() -> str:
    """The profiler's state: 'run' or 'stop'."""
    return _PROF.state


def profiler_set_state(state: str = "stop") -> None:
    """Deprecated: :func:`set_state`."""
    warnings.warn("profiler.profiler_set_state() is deprecated. Please use "
                  "profiler.set_state() instead", DeprecationWarning, stacklevel=2)
    set_state(state)


def pause(profile_process: str = "worker") -> None:
    """Stop recording until :func:`resume` (the state stays 'run')."""
    _check_process(profile_process, "pause")
    with _PROF.lock:
        _PROF.paused = True
        _PROF.update_active()


def resume(profile_process: str = "worker") -> None:
    """Resume recording after :func:`pause`."""
    _check_process(profile_process, "resume")
    with _PROF.lock:
        _PROF.paused = False
        _PROF.update_active()


def dump(finished: bool = True, profile_process: str = "worker") -> None:
    """Write the trace file. ``finished``: this is the file's last dump (the next one
    starts a new file, and nothing is written until ``set_state('run')`` again)."""
    _check_process(profile_process, "dump")
    if not _PROF.output:
        raise MXNetError("profiler.dump: the profiler hasn't been run; call set_config and "
                         "set_state('run') first (a finished dump ends the file)")
    _PROF.dump(finished=finished is True)


def dump_profile() -> None:
    """Deprecated: ``dump(True)``."""
    warnings.warn("profiler.dump_profile() is deprecated. Please use profiler.dump() "
                  "instead", DeprecationWarning, stacklevel=2)
    dump(True)


_SORT_BY = ("total", "avg", "min", "max", "count")


def dumps(reset: bool = False, format: str = "table", sort_by: str = "total",
          ascending: bool = False) -> str:
    """The aggregate statistics (``aggregate_stats=True``) as MXNet's table or JSON: per
    category, per name, count and total/min/max/average time in ms ('' when not kept).

    Examples
    --------
    >>> import symgraph as mx
    >>> mx.profiler.dumps(format='xml')
    Traceback (most recent call last):
    ...
    symgraph.base.MXNetError: Invalid value provided for format: xml. Support: 'table', 'json'
    """
    if format not in ("table", "json"):
        raise MXNetError(f"Invalid value provided for format: {format}. Support: 'table', "
                         f"'json'")
    if sort_by not in _SORT_BY:
        raise MXNetError(f"Invalid value provided for sort_by: {sort_by}. Support: "
                         f"{', '.join(repr(s) for s in _SORT_BY)}")
    for name, value in (("ascending", ascending), ("reset", reset)):
        if value not in (False, True):
            raise MXNetError(f"Invalid value provided for {name}: {value}. Support: False, True")
    with _PROF.lock:
        if _PROF.output:  # MXNet registers what is recorded by dumping first
            _PROF.dump(finished=False)
        _PROF.gpu.flush(_PROF)
        stats = _PROF.stats
        if stats is None:
            return ""
        text = (_table if format == "table" else _json)(stats, sort_by, ascending)
        if reset:
            stats.clear()
    return text


# ---------------------------------------------------------------- user objects

class Domain:
    """A named group of tasks, frames, counters and markers (their trace category).

    Examples
    --------
    >>> import symgraph as mx
    >>> d = mx.profiler.Domain('train')
    >>> str(d), str(d.new_task('step')), str(d.new_counter('batches', 0))
    ('train', 'step', 'batches')
    """

    def __init__(self, name: str):
        self.name = str(name)

    def __str__(self) -> str:
        return self.name

    def new_task(self, name: str) -> Task:
        """A :class:`Task` of this domain."""
        return Task(self, name)

    def new_frame(self, name: str) -> Frame:
        """A :class:`Frame` of this domain."""
        return Frame(self, name)

    def new_counter(self, name: str, value=None) -> Counter:
        """A :class:`Counter` of this domain, starting at ``value`` when given."""
        return Counter(self, name, value)

    def new_marker(self, name: str) -> Marker:
        """A :class:`Marker` of this domain."""
        return Marker(self, name)


class _Range:
    """A named time range recorded between ``start()`` and ``stop()``."""

    def __init__(self, category: str, name: str):
        self.name, self._category, self._start = str(name), category, None

    def start(self) -> None:
        """Start timing."""
        self._start = _Clock.now()

    def stop(self) -> None:
        """Stop timing and record the range (if the profiler is recording)."""
        if self._start is None:
            raise MXNetError(f"profiler: {type(self).__name__} {self.name!r} stopped "
                             f"without start()")
        begin, self._start = self._start, None
        if _PROF.recording:
            dur = _Clock.now() - begin
            _PROF.add({"name": self.name, "cat": self._category, "ph": "X", "ts": begin,
                       "dur": dur}, dur)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __str__(self) -> str:
        return self.name


class Task(_Range):
    """A range of work in ``domain`` (statistics of all passes are aggregated together).

    Examples
    --------
    >>> import symgraph as mx
    >>> task = mx.profiler.Task(mx.profiler.Domain('io'), 'decode')
    >>> task.start(); task.stop()
    """

    def __init__(self, domain: Domain, name: str):
        super().__init__(str(domain), name)


class Frame(_Range):
    """A range shown on the domain's frame track (category ``<domain>,frame``)."""

    def __init__(self, domain: Domain, name: str):
        super().__init__(f"{domain},frame", name)


class Event(_Range):
    """A range outside any domain (category ``event``)."""

    def __init__(self, name: str):
        super().__init__("event", name)


class Counter:
    """A value tracked over time (a ``"C"`` event at each change).

    Examples
    --------
    >>> import symgraph as mx
    >>> c = mx.profiler.Counter(mx.profiler.Domain('d'), 'queue', 5)
    >>> c += 2; c -= 1; c.increment(); c.decrement(3)
    >>> c.value
    4
    """

    def __init__(self, domain: Domain, name: str, value=None):
        self.name, self.domain, self.value = str(name), domain, 0
        if value is not None:
            self.set_value(value)

    def set_value(self, value) -> None:
        """Set the counter to ``value``."""
        self.value = int(value)
        if _PROF.recording:
            _PROF.add({"name": self.name, "cat": str(self.domain), "ph": "C",
                       "ts": _Clock.now(), "args": {self.name: self.value}}, self.value)

    def increment(self, delta=1) -> None:
        """Add ``delta``."""
        self.set_value(self.value + int(delta))

    def decrement(self, delta=1) -> None:
        """Subtract ``delta``."""
        self.set_value(self.value - int(delta))

    def __iadd__(self, delta) -> Counter:
        self.increment(delta)
        return self

    def __isub__(self, delta) -> Counter:
        self.decrement(delta)
        return self

    def __str__(self) -> str:
        return self.name


_MARKER_SCOPES = {"global": "g", "process": "p", "thread": "t", "task": "t", "marker": "t"}


class Marker:
    """An instant in time (an ``"i"`` event in category ``<domain>,instant_marker``)."""

    def __init__(self, domain: Domain, name: str):
        self.name, self.domain = str(name), domain

    def mark(self, scope: str = "process") -> None:
        """Record the instant; ``scope``: 'global', 'process', 'thread', 'task' or 'marker'.

        Examples
        --------
        >>> import symgraph as mx
        >>> mx.profiler.Marker(mx.profiler.Domain('d'), 'epoch').mark('galaxy')
        Traceback (most recent call last):
        ...
        symgraph.base.MXNetError: Marker.mark: scope must be one of ['global', 'process', \
'thread', 'task', 'marker'], got 'galaxy'
        """
        if scope not in _MARKER_SCOPES:
            raise MXNetError(f"Marker.mark: scope must be one of {list(_MARKER_SCOPES)}, "
                             f"got {scope!r}")
        if _PROF.recording:
            _PROF.add({"name": self.name, "cat": f"{self.domain},instant_marker", "ph": "i",
                       "ts": _Clock.now(), "s": _MARKER_SCOPES[scope]})
