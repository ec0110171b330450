"""``mx.rnn`` against MXNet 1.9.1 (fixtures from ``tests/fixtures/rnn_cells/generate.py``).

The cell recipes live in ``tests/fixtures/rnn_cells/cases.py`` and build the same graphs under
MXNet and symgraph: names of every node, arguments, outputs, attributes, state infos and
begin-state names; unrolled forward and backward (outputs, input/weight/state gradients);
``unpack_weights``/``pack_weights``; ``FusedRNNCell``'s packed layout, its ``FusedRNN``
initializer and ``unfuse()`` (the unfused stack with unpacked weights against MXNet's fused
results); ``encode_sentences`` and seeded ``BucketSentenceIter`` epochs; RNN checkpoints.
"""
from __future__ import annotations

import builtins
import importlib.util
import json
import os
import random
import re
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx

FIX = Path(__file__).parent / "fixtures" / "rnn_cells"
RECORDS = json.loads((FIX / "rnn_cells.json").read_text())
ARRAYS = np.load(FIX / "rnn_cells.npz", allow_pickle=False)
_spec = importlib.util.spec_from_file_location("rnn_cell_cases", FIX / "cases.py")
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)

ALL = [pytest.param(c, id=c["id"]) for c in cases.CASES + cases.FUSED_CASES]
NUMERIC = [pytest.param(c, id=c["id"]) for c in cases.CASES if c["numeric"]]
EVAL = [pytest.param(c, id=c["id"]) for c in cases.CASES if c.get("eval")]
FUSED = [pytest.param(c, id=c["id"]) for c in cases.FUSED_CASES]


def _arr(cid: str, key: str) -> np.ndarray:
    return ARRAYS[f"{cid}:{key}"]


def _close(got, want, what: str) -> None:
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=1e-5, atol=2e-6, err_msg=what)


def _build(case):
    with mx.name.NameManager():
        return cases.build(mx, case)


@pytest.mark.parametrize("case", ALL)
def test_structure_matches_mxnet(case):
    """Names of every node, arguments, outputs, attributes, states (MXNet 1.9.1 rnn_cell.py)."""
    want = RECORDS["cases"][case["id"]]
    if "error" in want:
        kind, message = want["error"]
        with pytest.raises(getattr(builtins, kind), match=re.escape(message)):
            _build(case)
        return
    cell, group, n_out, begin = _build(case)
    assert group.list_arguments() == want["arguments"]
    assert group.list_outputs() == want["outputs"]
    assert group.list_auxiliary_states() == want["aux"]
    assert group.get_internals().list_outputs() == want["internals"]
    assert group.attr_dict() == want["attr_dict"]
    assert n_out == want["n_out"]
    assert json.loads(json.dumps(cell.state_info)) == want["state_info"]
    assert sorted(cell.params._params) == want["params"]
    assert [b.name for b in begin] == want["begin_vars"]
    with mx.name.NameManager():
        fresh = cases.make_cell(mx, case["cell"])
        assert [[s.name for s in fresh.begin_state()] for _ in range(2)] == want["begin_names"]


def _state_free_case(case) -> dict:
    """The case with its begin states as variables (bound to zeros below)."""
    return {**case, "begin": "var"}


def _bind(case, group, cell, begin):
    shapes = cases.input_shapes(case, cell, begin)
    return group.simple_bind(mx.cpu(), grad_req="write", **shapes)


@pytest.mark.parametrize("case", NUMERIC)
def test_unroll_forward_backward_matches_mxnet(case):
    """Outputs, states and gradients of the unrolled graph, fixed weights and inputs.

    Default ``begin_state()`` zeros are fed as zero-valued variables: their (0, H) shapes need
    output-to-input shape inference, see ``test_default_begin_state_binds``.
    """
    cid = case["id"]
    run = case if case.get("begin") == "var" else _state_free_case(case)
    cell, group, n_out, begin = _build(run)
    exe = _bind(run, group, cell, begin)
    recorded = RECORDS["cases"][cid]["arguments"]
    for name, arr in exe.arg_dict.items():
        arr[:] = _arr(cid, f"arg:{name}") if name in recorded else 0.0
    outs = exe.forward(is_train=True)
    n = len(RECORDS["cases"][cid]["outputs"])
    assert len(outs) == n
    for i, out in enumerate(outs):
        _close(out.asnumpy(), _arr(cid, f"out:{i}"), f"output {i}")
    exe.backward([mx.nd.array(_arr(cid, f"ograd:{i}")) for i in range(n)])
    for name in recorded:
        _close(exe.grad_dict[name].asnumpy(), _arr(cid, f"grad:{name}"), f"grad {name}")


@pytest.mark.parametrize("case", EVAL)
def test_inference_of_random_cells_matches_mxnet(case):
    """Dropout, zoneout and dropout between unfused layers are identities in inference."""
    cid = case["id"]
    cell, group, _, begin = _build(_state_free_case(case))
    shapes = cases.input_shapes(case, cell, begin)
    exe = group.simple_bind(mx.cpu(), grad_req="null", **shapes)
    recorded = RECORDS["cases"][cid]["arguments"]
    for name, arr in exe.arg_dict.items():
        arr[:] = _arr(cid, f"eval_arg:{name}") if name in recorded else 0.0
    outs = exe.forward(is_train=False)
    assert len(outs) == len(RECORDS["cases"][cid]["outputs"])
    for i, out in enumerate(outs):
        _close(out.asnumpy(), _arr(cid, f"eval_out:{i}"), f"output {i}")


@pytest.mark.parametrize("cid", ["rnn_tanh", "lstm_ntc_merge", "fused_lstm"])
def test_default_begin_state_binds(cid):
    """MXNet infers the batch size of ``begin_state()``'s ``zeros((0, H))`` from the graph."""
    case = next(c for c in cases.CASES + cases.FUSED_CASES if c["id"] == cid)
    cell, group, _, begin = _build(case)
    exe = _bind(case, group, cell, begin)
    for name, arr in exe.arg_dict.items():
        arr[:] = _arr(cid, f"arg:{name}")
    outs = exe.forward(is_train=True)
    for i, out in enumerate(outs):
        _close(out.asnumpy(), _arr(cid, f"out:{i}"), f"output {i}")


@pytest.mark.parametrize("case", NUMERIC)
def test_unpack_pack_weights(case):
    cid = case["id"]
    want = RECORDS["cases"][cid]
    cell, _, _, _ = _build(case)
    weights = {n: mx.nd.array(_arr(cid, f"arg:{n}")) for n in want["arguments"]
               if n in want["params"]}
    if "unpack_error" in want:  # MXNet looks the weights up under the cell's own prefix
        with pytest.raises(KeyError, match=want["unpack_error"]):
            cell.unpack_weights(weights)
        return
    unpacked = cell.unpack_weights(weights)
    assert sorted(unpacked) == want["unpacked"]
    for name, value in unpacked.items():
        np.testing.assert_array_equal(value.asnumpy(), _arr(cid, f"unpacked:{name}"), name)
    packed = cell.pack_weights(unpacked)
    assert sorted(packed) == sorted(weights)
    for name, value in packed.items():
        np.testing.assert_array_equal(value.asnumpy(), weights[name].asnumpy(), name)


def _fused_cell(case):
    with mx.name.NameManager():
        return mx.rnn.FusedRNNCell(**case["cell"][1])


@pytest.mark.parametrize("case", FUSED)
def test_fused_cell_layout_without_op(case):
    """state_info, parameter name, the packed layout and the FusedRNN initializer."""
    cid = case["id"]
    want = RECORDS["cases"][cid]
    cell = _fused_cell(case)
    assert json.loads(json.dumps(cell.state_info)) == want["state_info"]
    assert sorted(cell.params._params) == want["params"]
    assert cell._parameter.attr("__init__") == want["fused_init_attr"]
    assert [[s.name for s in cell.begin_state()] for _ in range(2)] == want["begin_names"]
    name = cell._parameter.name
    unpacked = cell.unpack_weights({name: mx.nd.array(_arr(cid, f"arg:{name}"))})
    assert sorted(unpacked) == want["unpacked"]
    for key, value in unpacked.items():
        np.testing.assert_array_equal(value.asnumpy(), _arr(cid, f"unpacked:{key}"), key)
    packed = cell.pack_weights(unpacked)
    np.testing.assert_array_equal(packed[name].asnumpy(), _arr(cid, f"arg:{name}"))
    for tag, glob in (("const", mx.init.Constant(0.25)), ("one", mx.init.One())):
        arr = mx.nd.zeros(_arr(cid, f"arg:{name}").shape)
        glob(mx.init.InitDesc(name, {"__init__": want["fused_init_attr"]}), arr)
        np.testing.assert_array_equal(arr.asnumpy(), _arr(cid, f"init:{tag}"), tag)


def _fused_begin_values(case, fused, unfused_begin) -> dict:
    """Slices of the fused (L*D, N, H) begin states for the unfused cells' (N, H) states."""
    cid = case["id"]
    names = RECORDS["cases"][cid]["begin_vars"]
    per_cell = 2 if fused._mode == "lstm" else 1
    values = {}
    for k, var in enumerate(unfused_begin):
        layer_dir, which = divmod(k, per_cell)
        values[var.name] = _arr(cid, f"arg:{names[which]}")[layer_dir]
    return values


def _unfused_states(fused, states: list) -> list:
    """The unfused cells' final states stacked as the fused op's (L*D, N, H) outputs."""
    per_cell = 2 if fused._mode == "lstm" else 1
    return [np.stack([s.asnumpy() for s in states[which::per_cell]])
            for which in range(per_cell)]


def _merge_repeated_heads(group, ograds: list) -> list:
    """Head gradients for a group listing one entry several times (an unfused stack's last
    output is also its state): MXNet, like symgraph, keeps the last listing's gradient, so
    the sum the fused operator sees goes there and earlier listings get zeros."""
    entries = [(id(node), k) for node, k in group._outputs]
    merged = [np.array(g, dtype=np.float32) for g in ograds]
    for i, entry in enumerate(entries):
        last = max(j for j, e in enumerate(entries) if e == entry)
        if last != i:
            merged[last] = merged[last] + merged[i]
            merged[i] = np.zeros_like(merged[i])
    return merged


@pytest.mark.parametrize("case", FUSED)
def test_unfuse_matches_mxnet_fused(case):
    """``unfuse()`` with ``unpack_weights`` computes MXNet's FusedRNNCell results; the packed
    gradient of the unfused weights equals the fused ``parameters`` gradient."""
    cid = case["id"]
    want = RECORDS["cases"][cid]
    fused = _fused_cell(case)
    pname = fused._parameter.name
    unfused_case = {**case, "cell": ["unfused", case["cell"][1]], "begin": "var"}
    cell, group, n_out, begin = _build(unfused_case)
    exe = _bind(unfused_case, group, cell, begin)
    # MXNet's recipe: the fused vector unpacked by the fused cell, packed by the unfused stack
    weights = cell.pack_weights(
        fused.unpack_weights({pname: mx.nd.array(_arr(cid, f"arg:{pname}"))}))
    begin_values = _fused_begin_values(case, fused, begin) if case.get("begin") == "var" else {}
    for name, arr in exe.arg_dict.items():
        if name in weights:
            arr[:] = weights[name]
        elif name in begin_values:
            arr[:] = begin_values[name]
        elif name in ("data",) or name.startswith("x"):
            arr[:] = _arr(cid, f"arg:{name}")
        else:
            arr[:] = 0.0
    outs = exe.forward(is_train=True)
    for i in range(want["n_out"]):
        _close(outs[i].asnumpy(), _arr(cid, f"out:{i}"), f"output {i}")
    n_states = len(want["outputs"]) - want["n_out"]
    stacked = _unfused_states(fused, outs[n_out:])[:n_states]
    for k, value in enumerate(stacked):
        _close(value, _arr(cid, f"out:{want['n_out'] + k}"), f"state {k}")
    ograds = [_arr(cid, f"ograd:{i}") for i in range(want["n_out"])]
    ograds += [np.zeros(o.shape, np.float32) for o in outs[n_out:]]
    if n_states:  # spread the fused state head gradients over the unfused states
        per_cell = 2 if fused._mode == "lstm" else 1
        for k in range(len(outs) - n_out):
            layer_dir, which = divmod(k, per_cell)
            ograds[n_out + k] = _arr(cid, f"ograd:{want['n_out'] + which}")[layer_dir]
    exe.backward([mx.nd.array(g) for g in _merge_repeated_heads(group, ograds)])
    grads = fused.pack_weights(cell.unpack_weights({n: exe.grad_dict[n] for n in weights}))
    _close(grads[pname].asnumpy(), _arr(cid, f"grad:{pname}"), "parameters gradient")
    _close(exe.grad_dict["data"].asnumpy(), _arr(cid, "grad:data"), "data gradient")


@pytest.mark.parametrize("case", FUSED)
def test_fused_unroll_matches_mxnet(case):
    """FusedRNNCell.unroll through ``mx.sym.RNN``: outputs, states, gradients."""
    cid = case["id"]
    run = case if case.get("begin") == "var" else _state_free_case(case)
    cell, group, n_out, begin = _build(run)
    exe = _bind(run, group, cell, begin)
    recorded = RECORDS["cases"][cid]["arguments"]
    for name, arr in exe.arg_dict.items():
        arr[:] = _arr(cid, f"arg:{name}") if name in recorded else 0.0
    outs = exe.forward(is_train=True)
    n = len(RECORDS["cases"][cid]["outputs"])
    for i in range(n):
        _close(outs[i].asnumpy(), _arr(cid, f"out:{i}"), f"output {i}")
    exe.backward([mx.nd.array(_arr(cid, f"ograd:{i}")) for i in range(n)])
    for name in recorded:
        _close(exe.grad_dict[name].asnumpy(), _arr(cid, f"grad:{name}"), f"grad {name}")


# ------------------------------------------------------------------------------ io

@pytest.mark.parametrize("rec", RECORDS["io"]["encode"], ids=lambda r: json.dumps(r["kw"]))
def test_encode_sentences_matches_mxnet(rec):
    kw = dict(rec["kw"])
    corpus = json.loads(json.dumps(_corpus()))
    if "vocab" in kw:
        corpus = corpus[:3]
    res, vocab = mx.rnn.encode_sentences(corpus, **kw)
    assert res == rec["res"]
    assert vocab == rec["vocab"]


def _corpus():
    spec = importlib.util.spec_from_file_location("rnn_cells_generate", FIX / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CORPUS


def test_encode_sentences_unknown_token_error():
    with pytest.raises(AssertionError, match="Unknown token z"):
        mx.rnn.encode_sentences([["a", "z"]], vocab={"a": 0})


def _desc(d) -> list:
    return [d.name, list(d.shape), d.layout]


@pytest.mark.parametrize("rec", RECORDS["io"]["iters"], ids=lambda r: json.dumps(r["kw"]))
def test_bucket_sentence_iter_matches_mxnet(rec):
    """Buckets, padding, shifted labels, bucket keys and descs; seeded shuffles as MXNet's."""
    random.seed(7)
    np.random.seed(7)
    kw = dict(rec["kw"])
    if "buckets" in kw:
        kw["buckets"] = list(kw["buckets"])
    it = mx.rnn.BucketSentenceIter(RECORDS["io"]["coded"], **kw)
    assert it.buckets == rec["buckets"]
    assert it.default_bucket_key == rec["default_bucket_key"]
    assert [_desc(d) for d in it.provide_data] == rec["provide_data"]
    assert [_desc(d) for d in it.provide_label] == rec["provide_label"]
    for epoch in rec["epochs"]:
        batches = list(it)
        assert len(batches) == len(epoch)
        for got, want in zip(batches, epoch):
            assert got.bucket_key == want["key"] and got.pad == want["pad"]
            assert got.data[0].asnumpy().tolist() == want["data"]
            assert got.label[0].asnumpy().tolist() == want["label"]
            assert got.data[0].dtype.__name__ == want["dtype"]
            assert [_desc(d) for d in got.provide_data] == want["pd"]
            assert [_desc(d) for d in got.provide_label] == want["pl"]
        it.reset()


def test_bucket_sentence_iter_sorts_given_buckets_in_place():
    buckets = [4, 2]
    mx.rnn.BucketSentenceIter([[1, 2], [3, 4, 5, 6]], 1, buckets=buckets)
    assert buckets == [2, 4]


# ------------------------------------------------------------------------------ checkpoints

def _seq_case():
    return next(c for c in cases.CASES if c["id"] == "seq_lstm_gru")


def test_load_mxnet_rnn_checkpoint():
    """A checkpoint MXNet's save_rnn_checkpoint wrote (unpacked) loads packed."""
    case = _seq_case()
    cell, group, _, _ = _build(case)
    sym, args, aux = mx.rnn.load_rnn_checkpoint(cell, str(FIX / "ckpt_seq"), 3)
    assert sym.list_outputs() == group.list_outputs()
    assert aux == {}
    want = {n for n in group.list_arguments() if n in cell.params._params}
    assert set(args) == want
    for name in want:
        np.testing.assert_array_equal(args[name].asnumpy(), _arr(case["id"], f"arg:{name}"))


def test_save_rnn_checkpoint_round_trip(tmp_path):
    case = _seq_case()
    cell, group, _, _ = _build(case)
    args = {n: mx.nd.array(_arr(case["id"], f"arg:{n}")) for n in group.list_arguments()
            if n in cell.params._params}
    prefix = str(tmp_path / "ckpt_seq")
    mx.rnn.save_rnn_checkpoint([cell], prefix, 3, group, args, {})
    saved = mx.nd.load(prefix + "-0003.params")
    theirs = mx.nd.load(str(FIX / "ckpt_seq-0003.params"))
    assert list(saved) == list(theirs)
    for key in theirs:
        np.testing.assert_array_equal(saved[key].asnumpy(), theirs[key].asnumpy(), key)
    assert (tmp_path / "ckpt_seq-0003.params").read_bytes() == \
        (FIX / "ckpt_seq-0003.params").read_bytes()
    _, loaded, _ = mx.rnn.load_rnn_checkpoint(cell, prefix, 3)
    for name, value in args.items():
        np.testing.assert_array_equal(loaded[name].asnumpy(), value.asnumpy(), name)


def test_mxnet_fused_checkpoint_params_pack():
    """MXNet's FusedRNNCell checkpoint holds the unpacked pieces; packing restores the vector."""
    case = next(c for c in cases.FUSED_CASES if c["id"] == "fused_lstm")
    cell = _fused_cell(case)
    args, _ = mx.model.load_params(str(FIX / "ckpt_fused"), 3)
    assert sorted(args) == RECORDS["cases"]["fused_lstm"]["unpacked"]
    packed = cell.pack_weights(args)
    np.testing.assert_array_equal(packed["lstm_parameters"].asnumpy(),
                                  _arr("fused_lstm", "arg:lstm_parameters"))


def test_do_rnn_checkpoint_period(tmp_path):
    case = _seq_case()
    cell, group, _, _ = _build(case)
    args = {n: mx.nd.array(_arr(case["id"], f"arg:{n}")) for n in group.list_arguments()
            if n in cell.params._params}
    callback = mx.rnn.do_rnn_checkpoint(cell, str(tmp_path / "m"), period=2)
    for epoch in range(4):
        callback(epoch, group, args, {})
    assert sorted(os.listdir(tmp_path)) == ["m-0002.params", "m-0004.params", "m-symbol.json"]


def test_rnn_is_lazy_submodule():
    import subprocess
    import sys
    code = "import sys, symgraph as mx; assert 'symgraph.rnn' not in sys.modules; mx.rnn.LSTMCell"
    subprocess.run([sys.executable, "-c", code], check=True)
