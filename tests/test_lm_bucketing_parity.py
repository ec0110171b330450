"""MXNet's bucketing LSTM language model against an MXNet 1.9.1 golden run.

The script is ``tests/fixtures/lm_bucketing/generate.py``'s ``script`` (the style of MXNet's
example/rnn/bucketing/lstm_bucketing.py: ``encode_sentences``, ``BucketSentenceIter``, a
``SequentialRNNCell`` of ``LSTMCell``s, ``BucketingModule.fit`` with ``Perplexity``, then
``score``), run here with ``import symgraph as mx``: the batches of each epoch, the per-batch
training perplexity, the validation perplexity, the final parameters and ``score`` must match.
"""
from __future__ import annotations

import importlib.util
import json
import logging
from pathlib import Path

import numpy as np
import pytest

import symgraph as mx

HERE = Path(__file__).parent / "fixtures" / "lm_bucketing"
_spec = importlib.util.spec_from_file_location("lm_bucketing_generate", HERE / "generate.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)


@pytest.fixture(scope="module")
def run():
    arrays = np.load(HERE / "lm_bucketing.npz", allow_pickle=False)
    want = {k: arrays[k] for k in arrays.files}
    facts = json.loads((HERE / "lm_bucketing.json").read_text())
    params = {k[3:]: v for k, v in want.items() if k.startswith("in/")}
    logging.disable(logging.CRITICAL)
    try:
        got, got_facts = gen.script(mx, facts["corpus"], params)
    finally:
        logging.disable(logging.NOTSET)
    return want, facts, got, got_facts


def test_batches_match(run):
    want, facts, got, got_facts = run
    keys = sorted(k for k in want if k.startswith(("epoch", "val/")))
    assert keys == sorted(k for k in got if k.startswith(("epoch", "val/")))
    for key in keys:
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)
    for name in ("vocab", "buckets", "default_bucket_key", "bucket_keys"):
        assert got_facts[name] == facts[name], name


def test_perplexity_log_matches(run):
    _, facts, _, got_facts = run
    want, got = facts["metric_log"], got_facts["metric_log"]
    assert [row[:4] for row in got] == [row[:4] for row in want]
    np.testing.assert_allclose([row[4] for row in got], [row[4] for row in want], rtol=1e-5)


def test_params_and_score_match(run):
    want, facts, got, got_facts = run
    names = sorted(k for k in want if k.startswith("param/"))
    assert names == sorted(k for k in got if k.startswith("param/"))
    for key in names:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-4, atol=1e-5, err_msg=key)
    assert [n for n, _ in got_facts["score"]] == [n for n, _ in facts["score"]]
    np.testing.assert_allclose([v for _, v in got_facts["score"]],
                               [v for _, v in facts["score"]], rtol=1e-4)
