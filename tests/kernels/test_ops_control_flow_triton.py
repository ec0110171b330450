"""Control flow under ``backend='triton'`` (kernels under Triton's interpreter on CPU): the
fixture cases of ``tests/test_control_flow.py`` give MXNet's outputs and gradients, and no
launch falls back to a torch reference, neither in the outer plan (``_foreach``, ``_cond``,
``_while_loop`` and their backward ops) nor in the sub-executors running their subgraphs."""
from __future__ import annotations

import pytest

import symgraph as mx
from symgraph import config
from symgraph.ops import control_flow_exec
from tests.test_control_flow import GEN, check, run_bound

# rnn_foreach's dot/FullyConnected GEMMs make it the slow one under the interpreter
CASES = ["multi_data_foreach", "cond_branches", "while_accumulate"]


def _torch_labels(exe) -> list[str]:
    return [v for v in exe._plan.impl.values() if v.startswith("torch:")]


@pytest.mark.parametrize("name", CASES)
def test_triton_backend_matches_mxnet(name):
    control_flow_exec._EXECUTORS.clear()
    sym = GEN.build(mx, name)
    with config.override(backend="triton"):
        outs, grads, outer = run_bound(sym, name)
        subs = [exe for _, exe in control_flow_exec._EXECUTORS.values()]
    check(name, outs, grads)
    assert subs, "no subgraph ran"
    assert any(v.startswith("triton:_") for v in outer._plan.impl.values()), outer._plan.impl
    for exe in [outer, *subs]:
        assert not _torch_labels(exe), exe._plan.impl


def test_triton_dropout_in_the_body_replays_its_masks():
    """Philox dropout in a foreach body: the backward's recomputation draws the same masks."""
    from tests.test_control_flow import test_dropout_in_the_body_gets_the_forwards_masks_in_backward
    with config.override(backend="triton"):
        test_dropout_in_the_body_gets_the_forwards_masks_in_backward()
