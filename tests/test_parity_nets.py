"""Networks bound with simple_bind match MXNet 1.9.1 (tests/fixtures/mxnet/generate.py).

Each fixture holds MXNet's initial arguments, outputs, gradients and BatchNorm moving
statistics; we load its ``symbol.json``, bind, run, and compare to float32 tolerance.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx

NETS = Path(__file__).parent / "fixtures" / "mxnet" / "nets"
LOSS_NETS = ["mlp", "lenet", "resblock"]
RTOL, ATOL = 1e-4, 1e-5


def _load(name: str):
    folder = NETS / name
    meta = json.loads((folder / "meta.json").read_text())
    arrays = dict(np.load(folder / "arrays.npz", allow_pickle=False))
    sym = mx.sym.load(str(folder / "symbol.json"))
    return sym, meta, arrays


def _bind(sym, meta, arrays, grad_req="write"):
    exe = sym.simple_bind(mx.cpu(), grad_req=grad_req,
                          **{k: tuple(v) for k, v in meta["input_shapes"].items()})
    for name, arr in exe.arg_dict.items():
        arr[:] = arrays[f"arg:{name}"]
    for name, arr in exe.aux_dict.items():
        arr[:] = arrays[f"aux:{name}"]
    return exe


def _close(got, want, what):
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=what)


@pytest.mark.parametrize("name", LOSS_NETS + ["mlp_head"])
def test_structure_and_inference_match(name):
    sym, meta, _ = _load(name)
    assert sym.list_arguments() == meta["list_arguments"]
    assert sym.list_outputs() == meta["list_outputs"]
    assert sym.list_auxiliary_states() == meta["list_auxiliary_states"]
    shapes = {k: tuple(v) for k, v in meta["input_shapes"].items()}
    arg, out, aux = sym.infer_shape(**shapes)
    inferred = meta["infer_shape"]
    assert dict(zip(sym.list_arguments(), map(list, arg))) == inferred["arg_shapes"]
    assert [list(s) for s in out] == [list(s) for s in inferred["out_shapes"]]
    assert dict(zip(sym.list_auxiliary_states(), map(list, aux))) == inferred["aux_shapes"]


@pytest.mark.parametrize("name", LOSS_NETS)
def test_training_step_matches_mxnet(name):
    sym, meta, arrays = _load(name)
    exe = _bind(sym, meta, arrays)
    outs = exe.forward(is_train=True)
    exe.backward()
    _close(outs[0].asnumpy(), arrays["out:0"], f"{name} output")
    for arg in sym.list_arguments():
        _close(exe.grad_dict[arg].asnumpy(), arrays[f"grad:{arg}"], f"{name} d/d{arg}")
    for aux in sym.list_auxiliary_states():
        _close(exe.aux_dict[aux].asnumpy(), arrays[f"aux_after:{aux}"], f"{name} {aux}")


@pytest.mark.parametrize("name", LOSS_NETS)
def test_inference_forward_matches_mxnet(name):
    sym, meta, arrays = _load(name)
    exe = _bind(sym, meta, arrays, grad_req="null")
    _close(exe.forward(is_train=False)[0].asnumpy(), arrays["out_eval:0"], f"{name} eval")


def test_non_loss_head_uses_out_grads():
    sym, meta, arrays = _load("mlp_head")
    exe = _bind(sym, meta, arrays)
    exe.forward(is_train=True)
    exe.backward([mx.nd.array(arrays["ograd:0"])])
    _close(exe.outputs[0].asnumpy(), arrays["out:0"], "mlp_head output")
    for arg in sym.list_arguments():
        _close(exe.grad_dict[arg].asnumpy(), arrays[f"grad:{arg}"], f"d/d{arg}")


def test_grad_req_add_accumulates_like_mxnet():
    sym, meta, arrays = _load("mlp_head_add")
    exe = _bind(sym, meta, arrays, grad_req="add")
    for key in ("ograd:0", "ograd_2:0"):
        exe.forward(is_train=True)
        exe.backward([mx.nd.array(arrays[key])])
        if key == "ograd:0":
            for arg in sym.list_arguments():
                _close(exe.grad_dict[arg].asnumpy(), arrays[f"grad_1:{arg}"], f"first d/d{arg}")
    for arg in sym.list_arguments():
        _close(exe.grad_dict[arg].asnumpy(), arrays[f"grad:{arg}"], f"summed d/d{arg}")


def test_mixed_grad_req_dict_like_mxnet():
    sym, meta, arrays = _load("mlp_head_mixed")
    exe = _bind(sym, meta, arrays, grad_req=meta["grad_req"])
    exe.forward(is_train=True)
    exe.backward([mx.nd.array(arrays["ograd:0"])])
    for arg, is_none in meta["grad_dict_is_none"].items():
        assert (exe.grad_dict[arg] is None) == is_none, arg
        if not is_none:
            _close(exe.grad_dict[arg].asnumpy(), arrays[f"grad:{arg}"], f"d/d{arg}")


def test_backward_without_out_grads_on_non_loss_head_raises():
    sym, meta, arrays = _load("mlp_head")
    exe = _bind(sym, meta, arrays)
    exe.forward(is_train=True)
    with pytest.raises(mx.MXNetError, match="head_gradient is required"):
        exe.backward()


@pytest.mark.parametrize("name", LOSS_NETS)
def test_checkpoint_params_load(name):
    params = mx.nd.load(str(NETS / name / "checkpoint-0000.params"))
    _, _, arrays = _load(name)
    for key, value in params.items():
        kind, arg = key.split(":", 1)
        _close(value.asnumpy(), arrays[f"{'arg' if kind == 'arg' else 'aux'}:{arg}"], key)
