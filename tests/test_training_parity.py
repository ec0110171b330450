"""Training loops against MXNet 1.9.1 golden runs (``tests/fixtures/training/generate.py``).

The scripts are the generator's own functions, run here with ``import symgraph as mx``: the
same text trains in both libraries (Module.fit with two contexts and kvstore 'device'/'local',
one context, Adam; ``mx.model._train_multi_device`` with update_on_kvstore True/False;
``mx.model.FeedForward`` fit/predict), and the final parameters, the per-batch training
metric, ``score`` and ``predict`` must match MXNet's.
"""
from __future__ import annotations

import importlib.util
import json
import logging
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx

HERE = Path(__file__).parent / "fixtures" / "training"
_spec = importlib.util.spec_from_file_location("training_generate", HERE / "generate.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)

CASE_NETS = [(case, net) for case, (_, _, nets) in gen.CASES.items() for net in nets]


@pytest.fixture(scope="module")
def fixture():
    arrays = np.load(HERE / "training.npz", allow_pickle=False)
    logs = json.loads((HERE / "training.json").read_text())["metric_log"]
    return {k: arrays[k] for k in arrays.files}, logs


@pytest.mark.parametrize("case,net", CASE_NETS, ids=[f"{c}-{n}" for c, n in CASE_NETS])
def test_training_matches_mxnet(case, net, fixture):
    arrays, logs = fixture
    if case.startswith("feedforward") and not hasattr(mx.model, "FeedForward"):
        pytest.skip("FeedForward not implemented yet")
    logging.disable(logging.CRITICAL)
    try:
        out, log = gen.run_case(mx, arrays, case, net)
    finally:
        logging.disable(logging.NOTSET)
    prefix = f"{case}/{net}/"
    expected = {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}
    assert sorted(out) == sorted(expected)
    for key, want in expected.items():
        np.testing.assert_allclose(np.asarray(out[key]), want, rtol=1e-4, atol=1e-5,
                                   err_msg=f"{case}/{net}: {key}")
    want_log = logs[f"{case}/{net}"]
    assert [row[:3] for row in log] == [row[:3] for row in want_log]
    np.testing.assert_allclose([row[3] for row in log], [row[3] for row in want_log],
                               rtol=1e-6, err_msg=f"{case}/{net}: training metric")
