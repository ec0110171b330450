"""The image operators under ``backend='triton'`` (Triton's interpreter on CPU): the same
outputs and gradients as the torch backend, and no node of the plan on a torch reference.
Random ones draw other numbers on the Triton path (Philox), so they run with a fixed factor
(``min_factor == max_factor``) or are checked for what any draw must give."""
from __future__ import annotations

import numpy as np
import pytest

from symgraph.ops.base import Case, get_op
from tests.op_harness import (
    assert_backends_agree,
    assert_no_torch_step,
    bind,
    draw_inputs,
    run_forward,
)

DETERMINISTIC = ["_image_to_tensor", "_image_normalize", "_image_flip_left_right",
                 "_image_flip_top_bottom", "_image_crop", "_image_resize",
                 "_image_adjust_lighting", "_image_saturate_cast"]
FIXED = [Case(((2, 3, 3),), {"min_factor": f, "max_factor": f}, low=0.0, high=255.0)
         for f in (0.7,)]
RANDOM = ["_image_random_brightness", "_image_random_contrast", "_image_random_saturation",
          "_image_random_hue"]

CASES = [pytest.param(name, case, id=f"{name}-{i}") for name in DETERMINISTIC
         for i, case in enumerate(get_op(name).cases)]
CASES += [pytest.param(name, case, id=f"{name}-fixed") for name in RANDOM for case in FIXED]


@pytest.mark.parametrize("name,case", CASES)
def test_triton_backend_matches_torch(name, case):
    op = get_op(name)
    assert_no_torch_step(assert_backends_agree(op, case, draw_inputs(case, np.float32), 1e-4, 1e-4))


@pytest.mark.parametrize("interp", [0, 1, 2, 3, 4])
def test_triton_resize_uint8_matches_torch(interp):
    op = get_op("_image_resize")
    case = Case(((5, 4, 3),), {"size": (3, 7), "interp": interp}, grad=False)
    values = [np.random.RandomState(interp).randint(0, 256, (5, 4, 3)).astype(np.uint8)]
    # uint8 bicubic: the torch backend calls cv2.resize (IPP), the kernel is within 1 level
    assert_backends_agree(op, case, values, 0, 1 if interp == 2 else 0)


@pytest.mark.parametrize("name", ["_image_random_flip_left_right", "_image_random_lighting",
                                  "_image_random_color_jitter"])
def test_triton_random_ops_run_on_kernels(name):
    from symgraph import config
    op = get_op(name)
    case = op.cases[0]
    values = draw_inputs(case, np.float32)
    with config.override(backend="triton"):
        _, exe = bind(op, case, values, grad=False)
    out = run_forward(exe, False, seed=3)[0]
    assert_no_torch_step(exe)
    assert out.shape == values[0].shape and np.isfinite(out).all()
    if name == "_image_random_flip_left_right":
        assert (out == values[0]).all() or (out == values[0][:, ::-1]).all()


def _pairs(n: int, seed: int, large: bool) -> list[tuple[int, ...]]:
    rng = np.random.RandomState(seed)
    return [tuple(int(v) for v in (*rng.randint(1, 13, 2), rng.choice([1, 3]),
                                   *rng.randint(1, 13, 2))) for _ in range(n)] + \
        [(16, 12, 1, 8, 6), (5, 8, 3, 6, 4), (12, 9, 3, 4, 3), (10, 6, 3, 4, 12),
         (17, 13, 1, 5, 4)] + ([(40, 30, 3, 23, 57)] if large else [])


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("interp", [0, 1, 2, 3, 4])
def test_triton_resize_kernel_matches_opencv(interp, dtype):
    # the kernel itself (interpreted) against cv2.resize: uint8 exact except bicubic, which
    # is within 1 level (OpenCV hands it to IPP, see kernels/image.py); floats to 1e-3
    import cv2
    import torch

    from symgraph.kernels.image import image_resize
    rng = np.random.RandomState(interp)
    # Lanczos reads 64 taps per output: fewer cases keep the interpreter quick
    for h, w, c, oh, ow in _pairs(4 if interp == 4 else 12, interp + 10, interp != 4):
        x = (rng.randint(0, 256, (h, w, c)) if dtype == np.uint8 else
             rng.rand(h, w, c) * 255).astype(dtype)
        got = image_resize(torch.from_numpy(x)[None], oh, ow, interp)[0].numpy()
        want = cv2.resize(x, (ow, oh), interpolation=interp).reshape(oh, ow, c)
        atol = 1e-3 if dtype != np.uint8 else (1 if interp == 2 else 0)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=0,
                                   atol=atol, err_msg=str((h, w, c, oh, ow)))
