"""Smoke tests of the benchmark scripts: they run on a tiny config (timing is never tested)."""
from __future__ import annotations

import pytest

import symgraph as mx
from benchmarks import bench_lstm

TINY_LSTM = bench_lstm.Config(vocab=50, embed=8, hidden=8, batch=4, buckets=(3, 5), batches=2)


@pytest.mark.parametrize("variant", bench_lstm.VARIANTS)
def test_bench_lstm_symgraph_runs(variant):
    run = bench_lstm.module_rate(mx, TINY_LSTM, variant)
    words = sum(len(s) for s in bench_lstm.corpus(TINY_LSTM))
    assert run["words"] == words and run["words_per_s"] > 0


def test_bench_lstm_torch_and_report():
    best = {name: None for name in ("symgraph_unrolled", "symgraph_fused", "torch_lstm",
                                    "mxnet_unrolled", "mxnet_fused")}
    best["torch_lstm"] = bench_lstm.torch_rate(mx, TINY_LSTM)
    best["symgraph_fused"] = bench_lstm.module_rate(mx, TINY_LSTM, "fused")
    rows = bench_lstm.report(best)
    assert [r["peer"] for r in rows] == list(best)
    assert rows[1]["fastest_peer"] == "torch_lstm"
    assert all(isinstance(bench_lstm.line(r), str) for r in rows)


def test_bench_gluon_runs_both_heads():
    from benchmarks import bench_gluon
    for head in ("loss", "softmax_output"):
        assert bench_gluon.gluon_rate(mx, 2, head) > 0


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_bench_sparse_peers_run_and_the_sparse_gradient_holds_rows_only(optimizer):
    from benchmarks import bench_sparse
    for peer in bench_sparse.PEERS:
        got = bench_sparse.run_peer(peer, optimizer, vocab=2000, steps=2)
        assert got["ms_per_step"] > 0 and got["peak_rss_mb"] > 0
        dense_bytes = 2000 * bench_sparse.DIM * 4
        if peer.endswith("sparse"):  # only the batch's rows (at most DISTINCT), never all
            assert 0 < got["embedding_grad_bytes"] <= bench_sparse.DISTINCT * (
                bench_sparse.DIM * 4 + 8) * 2
        else:
            assert got["embedding_grad_bytes"] == dense_bytes


def test_bench_export_measures_every_peer_on_the_same_outputs():
    pytest.importorskip("onnxruntime")
    from benchmarks import bench_export
    r = bench_export.measure("mlp", steps=1)
    assert set(r["ms"]) == {"symgraph_executor", "torch_eager", "torch_compile", "onnxruntime"}
    assert max(r["max_abs_diff_vs_executor"].values()) < 1e-5
