"""Spatial sampling and ROI operators against MXNet 1.9.1 (``tests/fixtures/spatial``):
outputs and gradients of every recorded case, plus shape rules and errors."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx
from symgraph.base import MXNetError
from tests.fixture_scripts import FIXTURES, load

GEN = load("spatial/generate.py")
ARRAYS = np.load(FIXTURES / "spatial" / "spatial.npz")


@pytest.mark.parametrize("c", GEN.CASES, ids=[c["id"] for c in GEN.CASES])
def test_matches_mxnet(c):
    cid = c["id"]
    ins = {n: ARRAYS[f"{cid}/in:{n}"] for n in c["inputs"]}
    tol = 1e-11 if c["dtype"] == "float64" else 1e-5  # float64 computes in float64
    sym = GEN.symbol_of(mx, c)
    grads = {n: mx.nd.zeros(v.shape, dtype=v.dtype) for n, v in ins.items()}
    req = {n: "write" if n in c["grads"] else "null" for n in ins}
    exe = sym.bind(mx.cpu(), {n: mx.nd.array(v, dtype=v.dtype) for n, v in ins.items()},
                   args_grad=grads, grad_req=req)
    out = exe.forward(is_train=bool(c["grads"]))[0].asnumpy()
    assert out.dtype == ARRAYS[f"{cid}/out"].dtype
    np.testing.assert_allclose(out, ARRAYS[f"{cid}/out"], rtol=tol, atol=tol)
    if not c["grads"]:
        return
    ograd = ARRAYS[f"{cid}/ograd"]
    exe.backward([mx.nd.array(ograd, dtype=ograd.dtype)])
    for n in c["grads"]:
        np.testing.assert_allclose(grads[n].asnumpy(), ARRAYS[f"{cid}/grad:{n}"],
                                   rtol=10 * tol, atol=tol, err_msg=f"gradient of {n}")


ERRORS = [
    ("BilinearSampler", {"data": (1, 2, 3, 3), "grid": (1, 3, 2, 2)}, {}, "grid"),
    ("BilinearSampler", {"data": (2, 2, 3, 3), "grid": (1, 2, 2, 2)}, {}, "batch"),
    ("GridGenerator", {"data": (2, 6)}, {"transform_type": "affine"}, "target_shape"),
    ("GridGenerator", {"data": (2, 3, 4, 4)}, {"transform_type": "warp"}, "flow"),
    ("ROIPooling", {"data": (1, 2, 4, 4), "rois": (3, 4)},
     {"pooled_size": (2, 2), "spatial_scale": 1.0}, "(num_rois, 5)"),
    ("_contrib_ROIAlign", {"data": (1, 6, 4, 4), "rois": (3, 5)},
     {"pooled_size": (2, 2), "spatial_scale": 1.0, "position_sensitive": True}, "divisible"),
    ("_contrib_PSROIPooling", {"data": (1, 7, 4, 4), "rois": (3, 5)},
     {"pooled_size": 2, "output_dim": 2, "spatial_scale": 1.0}, "output_dim"),
    ("_contrib_RROIAlign", {"data": (1, 2, 4, 4), "rois": (3, 5)},
     {"pooled_size": (2, 2), "spatial_scale": 1.0}, "(num_rois, 6)"),
    ("_contrib_BilinearResize2D", {"data": (1, 2, 4, 4)},
     {"mode": "odd_scale", "scale_height": 2.0}, "scale_width"),
    ("_contrib_AdaptiveAvgPooling2D", {"data": (2, 4, 4)}, {"output_size": 2}, "4D"),
]


@pytest.mark.parametrize("op,shapes,attrs,needle", ERRORS,
                         ids=[f"{e[0]}-{e[3]}" for e in ERRORS])
def test_shape_errors_name_the_op_and_shapes(op, shapes, attrs, needle):
    c = {"op": op, "inputs": shapes, "attrs": attrs}
    with pytest.raises(MXNetError) as err:
        GEN.symbol_of(mx, c).infer_shape(**shapes)
    assert needle in str(err.value) and op.removeprefix("_contrib_")[:8] in str(err.value)


def _parity(size: int, parity: int, step: int) -> int:
    return size if size % 2 == parity else size + step


@pytest.mark.parametrize("shape", [(1, 1, 5, 6), (2, 3, 4, 7)])
def test_resize_modes_give_mxnet_output_sizes(shape):
    """Output sizes of every mode (the formulas of MXNet's test_bilinear_resize_op)."""
    x = mx.nd.zeros(shape)
    h, w = shape[2:]
    want = {"to_even_down": (_parity(h, 0, -1), _parity(w, 0, -1)),
            "to_even_up": (_parity(h, 0, 1), _parity(w, 0, 1)),
            "to_odd_down": (_parity(h, 1, -1), _parity(w, 1, -1)),
            "to_odd_up": (_parity(h, 1, 1), _parity(w, 1, 1))}
    for mode, hw in want.items():
        assert mx.nd.contrib.BilinearResize2D(x, mode=mode).shape == shape[:2] + hw, mode
    odd = mx.nd.contrib.BilinearResize2D(x, scale_height=0.5, scale_width=2.5, mode="odd_scale")
    assert odd.shape[2:] == (int(h * 0.5) if h % 2 == 0 else int((h - 1) * 0.5) + 1,
                             int(w * 2.5) if w % 2 == 0 else int((w - 1) * 2.5) + 1)
    like = mx.nd.contrib.BilinearResize2D(x, mx.nd.zeros((1, 1, 3, 9)), mode="like")
    assert like.shape == shape[:2] + (3, 9)


def test_rroi_align_has_no_gradient():
    """MXNet's RROIAlign has no backward: differentiating through it is an error."""
    sym = mx.sym.contrib.RROIAlign(mx.sym.Variable("data"), mx.sym.Variable("rois"),
                                   pooled_size=(2, 2), spatial_scale=1.0)
    with pytest.raises(MXNetError, match="no gradient"):
        exe = sym.simple_bind(mx.cpu(), data=(1, 2, 4, 4), rois=(1, 6),
                              grad_req={"data": "write", "rois": "null"})
        exe.forward(is_train=True)
        exe.backward([mx.nd.ones((1, 2, 2, 2))])
