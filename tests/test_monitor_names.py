"""The names an executor's monitor gives each operator's inputs and outputs, against the
sequences MXNet 1.9.1 gives (tests/fixtures/monitor/generate.py): variables under their own
names, inputs as ``<node>_<FListInputNames>`` or ``<node>_input<i>``, then every output,
hidden ones included; a composite op reported as one operator."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import symgraph as mx
from symgraph.ops.base import OPS
from symgraph.symbol.op_api import invoke

RECORDS = json.loads((Path(__file__).parent / "fixtures" / "monitor" / "names.json")
                     .read_text())


def _names(record: dict) -> list[str]:
    op = OPS[record["op"]]
    variables = [mx.sym.Variable(f"in{i}") for i in range(len(record["shapes"]))]
    if op.key_var_num_args:
        sym = invoke(op.name, variables, dict(record["attrs"]), name="node")
    else:
        sym = invoke(op.name, [], {**dict(zip(record["slots"], variables)), **record["attrs"]},
                     name="node")
    exe = sym.simple_bind(mx.cpu(), grad_req="null",
                          **{f"in{i}": tuple(s) for i, s in enumerate(record["shapes"])})
    names: list[str] = []
    exe.set_monitor_callback(lambda name, arr: names.append(str(name)), monitor_all=True)
    exe.forward(is_train=False)
    return names


CASES = [pytest.param(r, id=op) for op, r in sorted(RECORDS.items())
         if op in OPS and not OPS[op].hidden]


@pytest.mark.parametrize("record", CASES)
def test_monitor_all_names_match_mxnet(record):
    """The same sequence, except that hidden outputs MXNet's kernels keep for their backward
    (LRN's tmp_norm, GroupNorm's mean and std, ...) may be missing at the end: symgraph's
    composites and gradients do not need them, so nothing computes them."""
    got, want = _names(record), record["names"]
    assert got == want[:len(got)]
    assert set(record["outputs"]) <= set(got)
    assert all(name.startswith("node_") and name not in record["outputs"]
               for name in want[len(got):]), want[len(got):]


def test_monitor_reports_a_composite_as_one_operator():
    """GroupNorm runs as a dozen primitives; the monitor shows its inputs and output only."""
    data = mx.sym.Variable("data")
    sym = mx.sym.GroupNorm(data, num_groups=2, name="gn")
    exe = sym.simple_bind(mx.cpu(), data=(2, 4, 3))
    names: list[str] = []
    exe.set_monitor_callback(lambda name, arr: names.append(str(name)), monitor_all=True)
    exe.forward()
    assert names == ["data", "gn_data", "gn_gamma", "gn_gamma", "gn_beta", "gn_beta",
                     "gn_output"]
