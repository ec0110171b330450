"""The image operators under ``backend='triton'`` (Triton's interpreter on CPU): the same
outputs and gradients as the torch backend, and no node of the plan on a torch reference.
Random ones draw other numbers on the Triton path (Philox), so they run with a fixed factor
(``min_factor == max_factor``) or are checked for what any draw must give."""
from __future__ import annotations

import numpy as np
import pytest

from symgraph.ops.base import Case, get_op
from tests.op_harness import assert_backends_agree, bind, draw_inputs, run_forward

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


def _no_torch(exe):
    labels = exe._plan.impl
    assert not [v for v in labels.values() if v.startswith("torch:")], labels


@pytest.mark.parametrize("name,case", CASES)
def test_triton_backend_matches_torch(name, case):
    op = get_op(name)
    _no_torch(assert_backends_agree(op, case, draw_inputs(case, np.float32), 1e-4, 1e-4))


@pytest.mark.parametrize("interp", [0, 1, 2])
def test_triton_resize_uint8_matches_torch(interp):
    op = get_op("_image_resize")
    case = Case(((5, 4, 3),), {"size": (3, 7), "interp": interp}, grad=False)
    values = [np.random.RandomState(interp).randint(0, 256, (5, 4, 3)).astype(np.uint8)]
    assert_backends_agree(op, case, values, 0, 0)


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
    _no_torch(exe)
    assert out.shape == values[0].shape and np.isfinite(out).all()
    if name == "_image_random_flip_left_right":
        assert (out == values[0]).all() or (out == values[0][:, ::-1]).all()
