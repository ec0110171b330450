"""Composite operators (symgraph.compiler.composite): expansion at bind, names, JSON, derived
inference, eager and autograd calls, and the Triton path; values against MXNet 1.9.1
(tests/fixtures/composite/generate.py)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import symgraph as mx
from symgraph import config
from symgraph.compiler.composite import expand
from symgraph.ops.base import canonical_ops
from symgraph.symbol.graph import dfs_post_order

FIXTURES = json.loads((Path(__file__).parent / "fixtures" / "composite" / "ops.json")
                      .read_text())
COMPOSITE_CASES = [pytest.param(op.name, i, id=f"{op.name}-{i}") for op in canonical_ops()
                   if op.decompose is not None for i in range(len(op.cases))]


def _group_norm():
    x = mx.sym.Variable("x")
    return mx.sym.GroupNorm(x, num_groups=2, name="gn0")


def _nd_function(op: str):
    """``mx.nd.<op>``, dotted for a namespace (``linalg.gemm``, ``contrib.arange_like``)."""
    fn = mx.nd
    for part in op.split("."):
        fn = getattr(fn, part)
    return fn


@pytest.mark.parametrize("record", FIXTURES, ids=lambda r: r["op"] + "-" + str(r["attrs"]))
def test_eager_call_matches_mxnet(record):
    attrs = {k: tuple(v) if isinstance(v, list) else v for k, v in record["attrs"].items()}
    outs = _nd_function(record["op"])(*[mx.nd.array(a) for a in record["inputs"]], **attrs)
    outs = outs if isinstance(outs, list) else [outs]
    assert len(outs) == len(record["outputs"])
    for got, want, dtype in zip(outs, record["outputs"], record["dtypes"]):
        assert np.dtype(got.dtype).name == dtype
        np.testing.assert_allclose(got.asnumpy(), np.array(want), rtol=1e-5, atol=1e-5)


def test_expansion_replaces_composites_with_named_primitives():
    sym = _group_norm()
    heads = expand(sym._outputs)
    nodes = [n for n in dfs_post_order(heads) if n.op is not None]
    assert all(n.op.decompose is None for n in nodes)
    names = [n.name for n in nodes]
    assert "gn0" in names and "gn0_mean" in names and "gn0_data3" in names
    assert names == [n.name for n in dfs_post_order(expand(sym._outputs)) if n.op is not None]
    assert sym._outputs[0][0].op.name == "GroupNorm"  # the user's graph is untouched


def test_bound_executor_runs_expanded_graph_and_names_it():
    exe = _group_norm().simple_bind(mx.cpu(), x=(2, 4, 3))
    text = exe.debug_str()
    assert "GroupNorm" not in text and "gn0_mean" in text
    assert exe.output_dict.keys() == {"gn0_output"}


def test_json_round_trip_keeps_the_composite():
    sym = _group_norm()
    doc = json.loads(sym.tojson())
    assert [n["op"] for n in doc["nodes"]] == ["null", "null", "null", "GroupNorm"]
    assert doc["nodes"][-1]["attrs"] == {"num_groups": "2"}
    back = mx.sym.load_json(sym.tojson())
    assert back.tojson() == sym.tojson()


def test_derived_partial_inference():
    x = mx.sym.Variable("x")
    m = mx.sym.moments(x, axes=(1,), name="m")
    args, outs, _ = m.infer_shape_partial(x=(0, 3, 4))
    assert args == [(0, 3, 4)] and outs == [(0, 4), (0, 4)]
    _, types, _ = m.infer_type(x="float64")
    assert types == [np.float64, np.float64]
    with pytest.raises(mx.base.MXNetError, match="moments"):
        mx.sym.moments(x, axes=(3,)).infer_shape(x=(2, 3))


def test_explicit_shape_rule_fills_weights():
    args, outs, _ = _group_norm().infer_shape(x=(2, 4, 3))
    assert args == [(2, 4, 3), (2,), (2,)] and outs == [(2, 4, 3)]


def _reference_group_norm(x, gamma, beta):
    x3 = x.reshape(x.shape[0], 2, -1)
    xhat = (x3 - x3.mean(2, keepdims=True)) / torch.sqrt(x3.var(2, unbiased=False,
                                                                 keepdims=True) + 1e-5)
    return (xhat * gamma.view(1, 2, 1) + beta.view(1, 2, 1)).reshape(x.shape)


def test_executor_forward_backward_equal_reference():
    rng = np.random.RandomState(0)
    vals = {"x": rng.uniform(-1, 1, (2, 4, 3)), "gn0_gamma": rng.uniform(0.5, 1.5, 2),
            "gn0_beta": rng.uniform(-1, 1, 2)}
    exe = _group_norm().simple_bind(mx.cpu(), **{k: v.shape for k, v in vals.items()})
    for k, v in vals.items():
        exe.arg_dict[k][:] = v
    head = rng.uniform(-1, 1, (2, 4, 3))
    out = exe.forward(is_train=True)[0].asnumpy()
    exe.backward(mx.nd.array(head))
    ts = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in vals.items()}
    ref = _reference_group_norm(ts["x"], ts["gn0_gamma"], ts["gn0_beta"])
    (ref * torch.tensor(head)).sum().backward()
    np.testing.assert_allclose(out, ref.detach().numpy(), rtol=1e-4, atol=1e-5)
    for k, t in ts.items():
        np.testing.assert_allclose(exe.grad_dict[k].asnumpy(), t.grad.numpy(), rtol=1e-3,
                                   atol=1e-4, err_msg=k)


def test_autograd_on_ndarrays():
    x = mx.nd.array(np.random.RandomState(1).uniform(-1, 1, (1, 2, 3, 3)))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Pad(x, mode="reflect", pad_width=(0, 0, 0, 0, 1, 1, 2, 0))
    y.backward(mx.nd.ones(y.shape))
    t = torch.tensor(x.asnumpy(), requires_grad=True)
    torch.nn.functional.pad(t, (2, 0, 1, 1), mode="reflect").sum().backward()
    np.testing.assert_allclose(x.grad.asnumpy(), t.grad.numpy(), rtol=1e-6)


def test_create_graph_differentiates_through_the_decomposition():
    x = mx.nd.array([[[1.0, 2.0, 4.0]]])
    x.attach_grad()
    with mx.autograd.record():
        var = mx.nd.moments(x, axes=(2,))[1]
        dx = mx.autograd.grad(var, x, create_graph=True)[0]
    t = torch.tensor([[[1.0, 2.0, 4.0]]])
    np.testing.assert_allclose(dx.asnumpy(), (2 * (t - t.mean()) / 3).numpy(), rtol=1e-5)


@pytest.mark.parametrize("name,index", COMPOSITE_CASES)
def test_triton_backend_launches_no_reference(name, index):
    """Every case of a composite op under SYMGRAPH_BACKEND=triton (interpreted on CPU)."""
    from .op_harness import bind, draw_inputs
    op = next(o for o in canonical_ops() if o.name == name)
    case = op.cases[index]
    values = draw_inputs(case, np.float32)
    with config.override(backend="triton"):
        _, exe = bind(op, case, values, grad=True)
        labels = sorted({v for v in exe._plan.impl.values() if v.startswith("torch:")})
        assert not labels, f"{name} launches torch references: {labels}"
        outs = [o.asnumpy() for o in exe.forward(is_train=True)]
        exe.backward([mx.nd.ones(o.shape) for o in outs])
    if any(n.op is not None and n.op.draws_random(n.params) for n in exe._plan.graph.nodes):
        return  # Philox draws differ from torch's: the op's own tests check its values
    with config.override(backend="torch"):
        _, ref = bind(op, case, values, grad=True)
        want = [o.asnumpy() for o in ref.forward(is_train=True)]
        ref.backward([mx.nd.ones(o.shape) for o in want])
    for got, exp in zip(outs, want):
        np.testing.assert_allclose(got, exp, rtol=1e-4, atol=1e-5)
    for k, g in ref.grad_dict.items():
        if g is not None:
            np.testing.assert_allclose(exe.grad_dict[k].asnumpy(), g.asnumpy(), rtol=1e-3,
                                       atol=1e-4, err_msg=k)


def test_nan_reductions_have_zero_gradient_at_nan():
    """nansum / nanprod differentiate through ``where``: NaN entries get 0, as in MXNet."""
    vals = np.array([[1.0, np.nan, 2.0], [3.0, 0.5, np.nan]])
    head = np.array([1.0, 2.0])
    clean = np.where(np.isnan(vals), 1.0, vals)
    others = clean.prod(axis=1, keepdims=True) / clean
    want = {"nansum": np.where(np.isnan(vals), 0.0, head[:, None]),
            "nanprod": np.where(np.isnan(vals), 0.0, head[:, None] * others)}
    for op, expected in want.items():
        x = mx.nd.array(vals)
        x.attach_grad()
        with mx.autograd.record():
            y = getattr(mx.nd, op)(x, axis=1)
        y.backward(mx.nd.array(head))
        np.testing.assert_allclose(x.grad.asnumpy(), expected, rtol=1e-6, err_msg=op)


def test_shape_readers_infer_int64_and_namespaces_resolve():
    x = mx.sym.Variable("x")
    _, types, _ = mx.sym.shape_array(x).infer_type(x="float16")
    assert types == [np.int64]
    assert mx.sym.size_array(x).infer_shape(x=(2, 3))[1] == [(1,)]
    assert mx.sym.contrib.arange_like(x, axis=1).infer_shape(x=(2, 3))[1] == [(3,)]
    gemm = mx.sym.linalg.gemm2(mx.sym.Variable("a"), mx.sym.Variable("b"), name="g")
    assert json.loads(gemm.tojson())["nodes"][-1]["op"] == "_linalg_gemm2"
    assert mx.nd.linalg_gemm is not None and mx.sym.linalg.gemm is not None


@pytest.mark.parametrize("call,shape,match", [
    (lambda x: mx.sym.depth_to_space(x, block_size=2), (1, 6, 2, 2), "multiple of 'block\\^2'"),
    (lambda x: mx.sym.space_to_depth(x, block_size=2), (1, 2, 3, 2), "multiple of 'block'"),
    (lambda x: mx.sym.depth_to_space(x, block_size=2), (1, 8, 2), "exactly 4D"),
    (lambda x: mx.sym.linalg.gemm2(x, x), (2, 3, 4), "do not match"),
    (lambda x: mx.sym.reshape_like(x, x, lhs_begin=1, lhs_end=1), (2, 3), "invalid begin"),
])
def test_shape_rules_raise_mxnet_checks(call, shape, match):
    """The checks MXNet 1.9.1 makes in these ops' shape functions, as ShapeError."""
    with pytest.raises(mx.base.MXNetError, match=match):
        call(mx.sym.Variable("x")).infer_shape(x=shape)


def test_monitors_report_the_composite_not_its_inner_nodes():
    """MXNet's test_op_output_names_monitor: an LRN reports 'lrn_output' only."""
    data = mx.sym.Variable("data", shape=(2, 3, 4, 4))
    net = mx.sym.LRN(data, nsize=3, name="lrn")
    exe = net.simple_bind(mx.cpu(), grad_req="null")
    names = []
    exe.set_monitor_callback(lambda name, arr: names.append(str(name)), monitor_all=False)
    exe.arg_dict["data"][:] = 1.0
    exe.forward()
    assert names == ["lrn_output"]
    all_names = []
    exe.set_monitor_callback(lambda name, arr: all_names.append(str(name)), monitor_all=True)
    exe.forward()
    assert all_names[-1] == "lrn_output" and not any("square" in n for n in all_names)
