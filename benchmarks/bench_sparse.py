"""Sparse gradients for a large embedding: step time and memory of an embedding + FC model
(vocabulary 1,000,000, dimension 128, batch 512, a few hundred distinct rows per batch).

Peers, each trained with SGD and with Adam (MXNet's ``lazy_update`` is on by default):

- ``symgraph sparse``: ``Module`` over ``Embedding(sparse_grad=True)`` -> FullyConnected ->
  SoftmaxOutput; the weight gradient is row_sparse and the optimizer updates only its rows;
- ``symgraph dense``: the same with ``sparse_grad=False`` (a dense 1M x 128 gradient and
  update every step);
- ``torch sparse``: ``nn.Embedding(sparse=True)`` + ``nn.Linear`` with ``optim.SGD`` /
  ``optim.SparseAdam`` (embedding) + ``optim.Adam`` (linear), PyTorch's sparse path;
- ``torch dense``: ``nn.Embedding(sparse=False)`` with ``optim.SGD`` / ``optim.Adam``.

Each peer runs in its own process (so peak memory is its own): it builds the model, warms up,
then times ``--steps`` steps. Reported per peer: ms per step, the process's peak resident
memory (MB), the memory the steps add on top of the built model (the resident high-water
mark during the steps, reset before them, minus the resident size before them, MB), and
the bytes of the embedding gradient after a step.
The target: symgraph sparse >= 1.0x torch sparse (torch ms / symgraph ms), and step memory
proportional to the rows touched, not to the vocabulary.

    python -m symgraph.bench sparse [--steps 200] [--dense-steps 5] [--vocab 1000000]
        [--json FILE]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

VOCAB, DIM, BATCH, CLASSES, DISTINCT = 1_000_000, 128, 512, 10, 300
PEERS = ("symgraph_sparse", "symgraph_dense", "torch_sparse", "torch_dense")
OPTIMIZERS = ("sgd", "adam")


def batches(vocab: int, steps: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """``steps`` batches of ``BATCH`` indices drawn from ``DISTINCT`` rows each, and labels."""
    rng = np.random.RandomState(seed)
    out = []
    for _ in range(steps):
        rows = rng.choice(vocab, DISTINCT, replace=False)
        out.append((rows[rng.randint(0, DISTINCT, BATCH)].astype(np.int64),
                    rng.randint(0, CLASSES, BATCH).astype(np.int64)))
    return out


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_high_water() -> bool:
    """Reset the process's resident high-water mark (Linux ``clear_refs`` 5)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _high_water_mb() -> float:
    """The resident high-water mark since the last reset (``VmHWM``)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return _peak_mb()


def symgraph_step(vocab: int, sparse: bool, optimizer: str):
    """(step(data, label), embedding-gradient bytes) for the symgraph Module peer."""
    import symgraph as mx
    from symgraph.sparse import formats
    data, label = mx.sym.var("data"), mx.sym.var("softmax_label")
    emb = mx.sym.Embedding(data, input_dim=vocab, output_dim=DIM, sparse_grad=sparse,
                           name="embed")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(emb, num_hidden=CLASSES, name="fc"),
                               label, name="softmax")
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.bind(data_shapes=[("data", (BATCH,))], label_shapes=[("softmax_label", (BATCH,))])
    mod.init_params(mx.init.Uniform(0.01))
    mod.init_optimizer(optimizer=optimizer, optimizer_params={"learning_rate": 0.01})

    def step(x: np.ndarray, y: np.ndarray) -> None:
        batch = mx.io.DataBatch([mx.nd.array(x, dtype="float32")],
                                [mx.nd.array(y, dtype="float32")])
        mod.forward_backward(batch)
        mod.update()

    def grad_bytes() -> int:
        grad = mod._exec_group.grad_arrays[mod._param_names.index("embed_weight")][0]
        return formats.nbytes(grad._value if grad._is_sparse else grad._t)
    return step, grad_bytes


def torch_step(vocab: int, sparse: bool, optimizer: str):
    """(step(data, label), embedding-gradient bytes) for the PyTorch peer."""
    import torch
    torch.manual_seed(0)
    emb = torch.nn.Embedding(vocab, DIM, sparse=sparse)
    fc = torch.nn.Linear(DIM, CLASSES)
    loss_fn = torch.nn.CrossEntropyLoss()
    if optimizer == "sgd":
        opts = [torch.optim.SGD([*emb.parameters(), *fc.parameters()], lr=0.01)]
    elif sparse:
        opts = [torch.optim.SparseAdam(emb.parameters(), lr=0.01),
                torch.optim.Adam(fc.parameters(), lr=0.01)]
    else:
        opts = [torch.optim.Adam([*emb.parameters(), *fc.parameters()], lr=0.01)]

    def step(x: np.ndarray, y: np.ndarray) -> None:
        for opt in opts:
            opt.zero_grad(set_to_none=True)
        loss = loss_fn(fc(emb(torch.from_numpy(x))), torch.from_numpy(y))
        loss.backward()
        for opt in opts:
            opt.step()

    def grad_bytes() -> int:
        g = emb.weight.grad
        if g is None:
            return 0
        if g.is_sparse:
            return g._indices().numel() * 8 + g._values().numel() * g.element_size()
        return g.numel() * g.element_size()
    return step, grad_bytes


def run_peer(peer: str, optimizer: str, vocab: int, steps: int) -> dict:
    """Build, warm up and time one peer in this process."""
    make = symgraph_step if peer.startswith("symgraph") else torch_step
    step, grad_bytes = make(vocab, peer.endswith("sparse"), optimizer)
    data = batches(vocab, steps + 3)
    for x, y in data[:3]:
        step(x, y)
    peak = _peak_mb()  # the build's peak, before the high-water mark is reset
    before = _rss_mb()
    _reset_high_water()
    t0 = time.perf_counter()
    for x, y in data[3:]:
        step(x, y)
    ms = (time.perf_counter() - t0) * 1000 / steps
    return {"ms_per_step": round(ms, 3), "peak_rss_mb": round(max(peak, _peak_mb()), 1),
            "step_rss_mb": round(max(_high_water_mb() - before, 0.0), 1),
            "embedding_grad_bytes": grad_bytes()}


def _in_subprocess(peer: str, optimizer: str, vocab: int, steps: int) -> dict:
    code = ("import json, sys; from benchmarks.bench_sparse import run_peer; "
            f"print(json.dumps(run_peer({peer!r}, {optimizer!r}, {vocab}, {steps})))")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # benchmarks' parent
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=root)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="timed steps, sparse peers")
    parser.add_argument("--dense-steps", type=int, default=5,
                        help="timed steps of the dense peers (seconds per step)")
    parser.add_argument("--vocab", type=int, default=VOCAB)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    results: dict = {}
    for optimizer in OPTIMIZERS:
        results[optimizer] = {
            p: _in_subprocess(p, optimizer, args.vocab,
                              args.dense_steps if p.endswith("dense") else args.steps)
            for p in PEERS}
        r = results[optimizer]
        ratio = r["torch_sparse"]["ms_per_step"] / r["symgraph_sparse"]["ms_per_step"]
        dense_ratio = r["symgraph_dense"]["ms_per_step"] / r["symgraph_sparse"]["ms_per_step"]
        r["ratio_vs_torch_sparse"] = round(ratio, 3)
        r["speedup_over_dense_grad"] = round(dense_ratio, 3)
        for peer in PEERS:
            p = r[peer]
            print(f"{optimizer:4s} {peer:16s} {p['ms_per_step']:9.2f} ms/step  peak "
                  f"{p['peak_rss_mb']:8.1f} MB  step +{p['step_rss_mb']:7.1f} MB  grad "
                  f"{p['embedding_grad_bytes'] / 2**20:9.3f} MB")
        print(f"{optimizer:4s} symgraph sparse vs torch sparse {ratio:.3f}x (target >= 1.0); "
              f"vs symgraph dense {dense_ratio:.2f}x")
    if args.json:
        import torch

        from benchmarks.bench_mlp import commit
        from symgraph.fileio import atomic_write
        head = commit()
        record = {"device": f"cpu ({torch.get_num_threads()} threads)",
                  "date": datetime.date.today().isoformat(), "commit": head,
                  "vocab": args.vocab, "dim": DIM, "batch": BATCH, "distinct_rows": DISTINCT,
                  "steps": args.steps, "dense_steps": args.dense_steps, "results": results,
                  "target": "symgraph sparse >= 1.0x torch sparse; step memory ~ rows touched"}
        atomic_write(args.json, (json.dumps(record, indent=2) + "\n").encode())


if __name__ == "__main__":
    main()
