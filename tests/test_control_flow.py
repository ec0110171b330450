"""Control flow (``contrib.foreach``, ``while_loop``, ``cond``) against MXNet 1.9.1
(``tests/fixtures/control_flow``): symbolic and imperative outputs and gradients (of the
inputs, the states and the captured variables), and the JSON MXNet writes (byte for byte,
and loaded back)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError
from tests.fixture_scripts import FIXTURES, load

GEN = load("control_flow/generate.py")
ARRAYS = np.load(FIXTURES / "control_flow" / "control_flow.npz")
META = json.loads((FIXTURES / "control_flow" / "control_flow.json").read_text())


def _args(name):
    return {k: ARRAYS[f"{name}:arg:{k}"] for k in GEN.CASES[name][1]}


def _heads(name):
    return [ARRAYS[f"{name}:head:{i}"] for i in range(len(META[name]["outputs"]))]


def run_bound(sym, name):
    """(outputs, gradients, executor) of ``sym`` on the case's values and head gradients."""
    args = {k: mx.nd.array(v) for k, v in _args(name).items()}
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
    exe = sym.bind(mx.cpu(), args, args_grad=grads)
    outs = exe.forward(is_train=True)
    exe.backward([mx.nd.array(h) for h in _heads(name)])
    return [o.asnumpy() for o in outs], {k: g.asnumpy() for k, g in grads.items()}, exe


def _run(sym, name):
    return run_bound(sym, name)[:2]


def check(name, outs, grads):
    for i, out in enumerate(outs):
        np.testing.assert_allclose(out, ARRAYS[f"{name}:out:{i}"], rtol=1e-5, atol=1e-5,
                                   err_msg=f"output {i}")
    for k, g in grads.items():
        np.testing.assert_allclose(g, ARRAYS[f"{name}:grad:{k}"], rtol=1e-4, atol=1e-5,
                                   err_msg=f"gradient of {k}")


@pytest.mark.parametrize("name", sorted(GEN.CASES))
def test_symbol_matches_mxnet(name):
    sym = GEN.build(mx, name)
    assert sym.list_arguments() == META[name]["arguments"]
    assert sym.list_outputs() == META[name]["outputs"]
    check(name, *_run(sym, name))


@pytest.mark.parametrize("name", sorted(GEN.CASES))
def test_ndarray_matches_mxnet(name):
    check(name, *GEN.imperative(mx, name, _args(name), _heads(name)))


@pytest.mark.parametrize("name", sorted(GEN.CASES))
def test_json_as_mxnet_writes_it(name):
    text = META[name]["json"]
    assert GEN.build(mx, name).tojson() == text
    loaded = mx.sym.load_json(text)
    assert loaded.tojson() == text
    check(name, *_run(loaded, name))


def _foreach_doc() -> dict:
    return json.loads(META["multi_data_foreach"]["json"])


def _loop_node(doc: dict) -> dict:
    return next(n for n in doc["nodes"] if n["op"] == "_foreach")


@pytest.mark.parametrize("change,error", [
    (lambda n: n.update(subgraphs={"nodes": []}), "field 'subgraphs' must be a list"),
    (lambda n: n["subgraphs"][0]["heads"].append([99, 0, 0]), "node index 99"),
    (lambda n: n["subgraphs"][0]["nodes"][0].update(op=7), "field 'op' must be a string"),
])
def test_json_subgraphs_are_validated(change, error):
    doc = _foreach_doc()
    change(_loop_node(doc))
    with pytest.raises(MXNetError, match=error):
        mx.sym.load_json(json.dumps(doc))


@pytest.mark.parametrize("change,error", [
    (lambda n: n.pop("subgraphs"), "needs 1 subgraphs, has 0"),
    (lambda n: n["attrs"].update(remain_locs="[2, 9]"), "must place the"),
])
def test_inconsistent_loop_node_fails_at_inference(change, error):
    doc = _foreach_doc()
    change(_loop_node(doc))
    sym = mx.sym.load_json(json.dumps(doc))
    with pytest.raises(MXNetError, match=error):
        sym.infer_shape(a=(3, 4), b=(3, 4), s1=(4,), s2=(1,))


def test_unused_state_is_an_assertion_as_in_mxnet():
    with pytest.raises(AssertionError, match="state arrays have to be used"):
        mx.sym.contrib.foreach(lambda x, s: (x, [x]), mx.sym.var("x"), [mx.sym.var("s")])


def test_cond_branches_must_agree_in_outputs():
    a = mx.sym.var("a")
    with pytest.raises(ValueError, match="Number of outputs differs"):
        mx.sym.contrib.cond(a > 0, lambda: [a, a], lambda: a)


def test_nested_foreach_and_one_dimensional_data():
    """An inner foreach in the body of an outer one (its node is cut like any other), over
    a 1-D array whose rows are (1,), against the same loops written in numpy."""
    def outer(x, states):
        inner, last = mx.sym.contrib.foreach(
            lambda y, s: (y * s[0], [s[0] + y]), x, [states[0]])
        return inner, last
    data = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    outs, states = mx.sym.contrib.foreach(outer, mx.sym.var("x"), [mx.sym.var("s")])
    exe = mx.sym.Group([outs, states[0]]).bind(
        mx.cpu(), {"x": mx.nd.array(data), "s": mx.nd.array([0.5])})
    got = [o.asnumpy() for o in exe.forward()]
    s, rows = 0.5, []
    for row in data:
        step = []
        for y in row:
            step.append([y * s])
            s = s + y
        rows.append(step)
    np.testing.assert_allclose(got[0], np.array(rows, np.float32), rtol=1e-6)
    np.testing.assert_allclose(got[1], [s], rtol=1e-6)


def test_while_loop_that_never_runs_keeps_its_inputs():
    """No step: outputs are zeros shaped by inference, loop variables unchanged
    (MXNet's test_while_loop_simple_forward case 2.3)."""
    i, s = mx.sym.var("i"), mx.sym.var("s")
    outs, final = mx.sym.contrib.while_loop(
        lambda i, s: i > 5, lambda i, s: (i * 2, [i + 1, s + i]), [i, s], max_iterations=3)
    exe = mx.sym.Group([outs] + final).bind(mx.cpu(), {"i": mx.nd.array([1]),
                                                       "s": mx.nd.array([7])})
    got = [o.asnumpy().tolist() for o in exe.forward()]
    assert got == [[[0.0], [0.0], [0.0]], [1.0], [7.0]]


def test_dropout_in_the_body_gets_the_forwards_masks_in_backward():
    """The backward runs the body again: it replays the forward's random draws, so each
    step's gradient is zero exactly where that step's forward dropped (kept: 1/(1-p) * s)."""
    def step(x, states):
        return mx.sym.Dropout(x * states[0], p=0.5), [states[0] * 1]
    outs, states = mx.sym.contrib.foreach(step, mx.sym.var("x"), [mx.sym.var("s")])
    x = np.random.RandomState(0).uniform(1, 2, (6, 50)).astype(np.float32)
    grads = {"x": mx.nd.zeros(x.shape), "s": mx.nd.zeros((50,))}
    exe = mx.sym.Group([outs, states[0]]).bind(
        mx.cpu(), {"x": mx.nd.array(x), "s": mx.nd.full((50,), 3.0)}, args_grad=grads)
    out = exe.forward(is_train=True)[0].asnumpy()
    exe.backward([mx.nd.ones(x.shape), mx.nd.zeros((50,))])
    kept = out != 0
    assert 0.2 < kept.mean() < 0.8
    np.testing.assert_allclose(grads["x"].asnumpy(), np.where(kept, 6.0, 0.0))


def test_copies_and_composition_keep_the_subgraphs():
    import copy
    sym = GEN.build(mx, "rnn_foreach")
    text = META["rnn_foreach"]["json"]
    assert copy.deepcopy(sym).tojson() == text
    composed = sym(data=mx.sym.var("seq") * 1)
    assert "seq" in composed.list_arguments() and '"subgraphs"' in composed.tojson()


def test_backward_without_the_forwards_steps_recomputes_them():
    """The steps a training forward keeps for the backward are an optimisation: forgotten
    (or stale), the backward runs the loop again and gets the same gradients."""
    from symgraph.ops import control_flow_exec
    sym = GEN.build(mx, "rnn_foreach")
    args = {k: mx.nd.array(v) for k, v in _args("rnn_foreach").items()}
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items()}
    exe = sym.bind(mx.cpu(), args, args_grad=grads)
    exe.forward(is_train=True)
    control_flow_exec._STEPS.clear()
    exe.backward([mx.nd.array(h) for h in _heads("rnn_foreach")])
    for k, g in grads.items():
        np.testing.assert_allclose(g.asnumpy(), ARRAYS[f"rnn_foreach:grad:{k}"], rtol=1e-4,
                                   atol=1e-5, err_msg=f"gradient of {k}")
