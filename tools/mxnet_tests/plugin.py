"""pytest plugin of the MXNet test harness: one JSON line per test outcome.

Loaded with ``-p plugin`` in each per-file pytest process that ``run.py`` starts; writes to
the file named by ``MXNET_HARNESS_REPORT``. A record holds the test id, the phase, the
outcome and, for a failure, the exception's type, message and where it was raised.
"""
from __future__ import annotations

import functools
import json
import os
import traceback

import numpy as np
import pytest

# MXNet 1.9.1's tests were written against numpy < 1.24; the aliases numpy has removed since
# are put back for them (test-side only: symgraph itself never uses them)
for _alias, _value in (("NaN", np.nan), ("Inf", np.inf), ("int", int), ("float", float),
                       ("object", object), ("str", str), ("complex", complex)):
    if not hasattr(np, _alias):
        setattr(np, _alias, _value)

_numpy_arange = np.arange


@functools.wraps(_numpy_arange)  # numpy.ma builds its docs from arange's
def _arange_wrapping(*args, **kwargs):
    """numpy < 2's ``arange`` for integer dtypes: bounds outside the dtype wrap around
    (``arange(-100, 100, dtype=uint8)``); numpy 2 raises OverflowError instead."""
    try:
        return _numpy_arange(*args, **kwargs)
    except OverflowError:
        dtype = np.dtype(kwargs.pop("dtype"))
        return _numpy_arange(*args, dtype=np.int64, **kwargs).astype(dtype)


if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
    np.arange = _arange_wrapping

_REPORT = os.environ.get("MXNET_HARNESS_REPORT", "harness_report.jsonl")


def _origin(excinfo) -> str:
    """``file:line`` of the innermost frame: symgraph's code, or the test's."""
    frames = traceback.extract_tb(excinfo.tb)
    if not frames:
        return ""
    last = frames[-1]
    return f"{os.path.relpath(last.filename)}:{last.lineno}"


def _write(record: dict) -> None:
    with open(_REPORT, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" and report.outcome == "passed":
        return
    record = {"test": item.nodeid, "when": report.when, "outcome": report.outcome}
    if call.excinfo is not None and report.outcome != "skipped":
        exc = call.excinfo.value
        record.update(exc_type=f"{type(exc).__module__}.{type(exc).__name__}",
                      exc_mro=[c.__name__ for c in type(exc).__mro__],
                      message=str(exc)[:600], origin=_origin(call.excinfo))
    elif report.outcome == "skipped" and isinstance(report.longrepr, tuple):
        record["message"] = str(report.longrepr[2])[:300]
    _write(record)


def pytest_collectreport(report):
    if report.outcome == "failed":
        text = str(report.longrepr)
        errors = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
        _write({"test": report.nodeid or "<collection>", "when": "collect", "outcome": "failed",
                "exc_type": "collection", "exc_mro": [],
                "message": (errors[-1] if errors else text[-600:]), "origin": ""})
