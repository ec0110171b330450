"""An MXNet 1.x gluon training loop (``autograd.record``, ``loss.backward()``,
``trainer.step``) on a Conv/BatchNorm/Dense HybridBlock, run unchanged under
``import symgraph as mx`` on one and two contexts with SGD+momentum and Adam: every loss and
every parameter (BatchNorm's running statistics included) equals MXNet 1.9.1's
(tests/fixtures/gluon/generate_training.py)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx
from tests import fixture_scripts

HERE = Path(__file__).parent / "fixtures" / "gluon"
GOLDEN = np.load(HERE / "training_golden.npz", allow_pickle=False)
FACTS = json.loads((HERE / "training_golden.json").read_text())




GEN = fixture_scripts.load("gluon/generate_training.py")


@pytest.mark.parametrize("case", FACTS["cases"])
def test_training_matches_mxnet(case):
    values = {k[len("init/"):]: GOLDEN[k] for k in GOLDEN.files if k.startswith("init/")}
    assert sorted(values) == FACTS["params"]
    data, label = GEN.inputs()
    ours = GEN.script(mx, case, values, data, label)
    theirs = {k[len(case) + 1:]: GOLDEN[k] for k in GOLDEN.files if k.startswith(case + "/")}
    assert sorted(ours) == sorted(theirs)
    for key in sorted(theirs):
        np.testing.assert_allclose(ours[key], theirs[key], rtol=2e-4, atol=2e-5, err_msg=key)
