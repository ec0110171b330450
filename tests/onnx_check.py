"""One check for every ONNX export test: export a symbol, run it in ONNX Runtime, compare
with symgraph's executor (inference forward) on the same inputs."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

# the opsets every translation is checked in: the oldest, the reshaped-API ones (13: axes
# as inputs, 18: Reduce* axes as inputs), the default (21) and 28 (or the newest ``onnx``
# knows, if older)
OPSETS = tuple(sorted({12, 13, 18, 21, min(28, onnx.defs.onnx_opset_version())}))


def run_symgraph(sym, inputs: dict, params: dict) -> list[np.ndarray]:
    """The symbol's inference outputs in symgraph."""
    shapes = {k: v.shape for k, v in inputs.items()}
    types = {k: v.dtype for k, v in inputs.items()}
    exe = sym.simple_bind(mx.cpu(), grad_req="null", type_dict=types, **shapes)
    for k, v in params.items():
        (exe.arg_dict if k in exe.arg_dict else exe.aux_dict)[k][:] = v
    return [o.asnumpy() for o in exe.forward(is_train=False, **inputs)]


def run_onnx(path: str, inputs: dict) -> list[np.ndarray]:
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, {k: inputs[k] for k in names})


def check_onnx(sym, inputs: dict, tmp_path, params: dict | None = None,
               opsets=OPSETS, rtol: float = 1e-4, atol: float = 1e-5,
               dynamic: bool = False) -> None:
    """Export ``sym`` in each opset and assert ONNX Runtime gives symgraph's outputs.

    ``inputs``: data input -> numpy array (dtypes as given); ``params``: name -> numpy.
    """
    params = params or {}
    want = run_symgraph(sym, inputs, params)
    names = [n for n in sym.list_inputs() if n not in params and n in inputs]
    for opset in opsets:
        path = str(tmp_path / f"model{opset}.onnx")
        mx.onnx.export_model(sym, {k: mx.nd.array(v, dtype=v.dtype) for k, v in params.items()},
                             [inputs[n].shape for n in names],
                             [inputs[n].dtype for n in names], path,
                             opset_version=opset, dynamic=dynamic)
        onnx.checker.check_model(onnx.load(path), full_check=True)
        got = run_onnx(path, inputs)
        assert len(got) == len(want), (opset, len(got), len(want))
        for k, (g, w) in enumerate(zip(got, want)):
            assert g.shape == w.shape, (opset, k, g.shape, w.shape)
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                       atol=atol, err_msg=f"opset {opset}, output {k}")
