"""Distributed training on local gloo workers (CPU): samples/s and all-reduce overhead.

    python -m symgraph.bench dist [--workers 1,2,4] [--batches 20]
        [--json benchmarks/results/dist_cpu.json] [--mxnet-python /path/to/venv/bin/python]

For 1, 2 and 4 worker processes on 127.0.0.1 (``OMP_NUM_THREADS`` = cores / workers, at
least 1), measured side by side in one run:

- ``mlp``: ``Module.fit(kvstore='dist_sync')`` on the MLP 784-512-512-10 (SGD, momentum),
  128 samples per worker per step; peers: PyTorch ``DistributedDataParallel`` (gloo) on the
  same model and batches, and MXNet 1.9.1's ``dist_sync`` (ps-lite, one server) when its
  virtualenv is given.
- ``lstm``: ``BucketingModule.fit(kvstore='dist_sync')`` on an LSTM language model (fused
  2x128 LSTM, vocabulary 2000, buckets 10/20/30, 32 sentences per worker per step, each
  worker on its part of the corpus via ``BucketSentenceIter(num_parts, part_index)``);
  peer: the same model in PyTorch with DDP.
- ``allreduce`` (2 and more workers): the MLP's and the LSTM model's gradients pushed and
  pulled through the ``dist_sync`` store (``kv.pushpull(keys, grads, out)``) against
  ``torch.distributed.all_reduce`` alone on the same tensors: one call per tensor, or the
  tensors flattened into one call and the sums copied back. Reported: GB/s of gradient
  bytes, the store's time over the faster raw form (target <= 1.10), and over the bare
  collective on an already flat buffer (what copies and bookkeeping cost at all).

Samples/s count every worker's samples over an epoch timed between barriers on rank 0 (the
fastest of 3 epochs after a warm-up one; every form of all-reduce: its fastest of the
interleaved repetitions).
"""
from __future__ import annotations

import argparse
import datetime
import functools
import importlib
import json
import logging
import os
import random
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MLP_BATCH, LSTM_BATCH, VOCAB, HIDDEN, BUCKETS = 128, 32, 2000, 128, [10, 20, 30]


# ---------------------------------------------------------------- worker bodies
def _mx():
    return importlib.import_module(os.environ.get("MX_IMPL", "symgraph"))


ROUNDS = 3  # timed epochs per training run; the fastest counts


def _timed(barrier, run) -> float:
    """Seconds of ``run()`` between two barriers."""
    barrier()
    t0 = time.perf_counter()
    run()
    barrier()
    return time.perf_counter() - t0


def _best_epoch(barrier, epoch) -> float:
    """The fastest of ``ROUNDS`` timed epochs (``epoch(r)`` runs the r-th)."""
    return min(_timed(barrier, functools.partial(epoch, r)) for r in range(ROUNDS))


def mlp_data(batches: int, rank: int):
    rng = np.random.RandomState(rank)
    x = rng.uniform(0, 1, (batches * MLP_BATCH, 784)).astype(np.float32)
    return x, rng.randint(0, 10, batches * MLP_BATCH).astype(np.float32)


def worker_mlp(batches: int) -> dict:
    """Module.fit with dist_sync: samples/s over all workers."""
    mx = _mx()
    sys.path.insert(0, HERE)
    from bench_module import symbol
    kv = mx.kv.create("dist_sync")
    x, y = mlp_data(batches, kv.rank)
    it = mx.io.NDArrayIter(x, y, batch_size=MLP_BATCH)
    mod = mx.mod.Module(symbol(mx, "mlp"), context=mx.cpu())
    opt = {"learning_rate": 0.01, "momentum": 0.9}
    mod.fit(it, num_epoch=1, kvstore=kv, optimizer="sgd", optimizer_params=opt)  # warm-up
    seconds = _best_epoch(kv._barrier, lambda r: mod.fit(
        it, num_epoch=r + 2, begin_epoch=r + 1, kvstore=kv, optimizer="sgd",
        optimizer_params=opt))
    return {"rank": kv.rank, "samples_per_s": kv.num_workers * batches * MLP_BATCH / seconds}


def _ddp_setup():
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method="env://")
    return dist, dist.get_rank(), dist.get_world_size()


def worker_mlp_ddp(batches: int) -> dict:
    """The same MLP loop in PyTorch with DistributedDataParallel."""
    import torch
    from torch.nn.parallel import DistributedDataParallel
    dist, rank, size = _ddp_setup()
    nn = torch.nn
    model = DistributedDataParallel(nn.Sequential(
        nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = mlp_data(batches, rank)
    xs = torch.from_numpy(x).view(batches, MLP_BATCH, 784)
    ys = torch.from_numpy(y).long().view(batches, MLP_BATCH)

    def epoch(_=0) -> None:
        for xb, yb in zip(xs, ys):
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
    epoch()
    seconds = _best_epoch(dist.barrier, epoch)
    dist.destroy_process_group()
    return {"rank": rank, "samples_per_s": size * batches * MLP_BATCH / seconds}


def lstm_sentences(batches: int, workers: int) -> list:
    """A synthetic corpus: about ``batches`` steps' worth of sentences per worker."""
    rng = np.random.RandomState(0)
    count = int(batches * LSTM_BATCH * workers * 1.2)
    return [list(rng.randint(1, VOCAB, size=rng.randint(4, BUCKETS[-1] + 1)))
            for _ in range(count)]


def lstm_iter(mx, batches: int, rank: int, workers: int):
    random.seed(0)  # the same bucket order on every worker
    np.random.seed(0)
    return mx.rnn.BucketSentenceIter(lstm_sentences(batches, workers), LSTM_BATCH,
                                     buckets=list(BUCKETS), invalid_label=0, layout="TN",
                                     num_parts=workers, part_index=rank)


def worker_lstm(batches: int) -> dict:
    """BucketingModule.fit with dist_sync on the LSTM language model."""
    mx = _mx()
    kv = mx.kv.create("dist_sync")
    it = lstm_iter(mx, batches, kv.rank, kv.num_workers)
    cell = mx.rnn.FusedRNNCell(HIDDEN, num_layers=2, mode="lstm", prefix="lstm_")

    def sym_gen(seq_len):
        embed = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=VOCAB, output_dim=HIDDEN,
                                 name="embed")
        cell.reset()
        out, _ = cell.unroll(seq_len, inputs=embed, merge_outputs=True, layout="TNC")
        pred = mx.sym.FullyConnected(mx.sym.Reshape(out, shape=(-1, HIDDEN)),
                                     num_hidden=VOCAB, name="pred")
        label = mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
        pred = mx.sym.SoftmaxOutput(pred, label, use_ignore=True, ignore_label=0,
                                    name="softmax")
        return pred, ("data",), ("softmax_label",)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=it.default_bucket_key,
                                 context=mx.cpu())
    opt = {"learning_rate": 0.01, "momentum": 0.9}
    fit = {"kvstore": kv, "optimizer": "sgd", "optimizer_params": opt,
           "initializer": mx.init.Xavier(), "eval_metric": mx.metric.Perplexity(0)}
    mod.fit(it, num_epoch=1, **fit)  # warm-up: binds every bucket
    seconds = _best_epoch(kv._barrier,
                          lambda r: mod.fit(it, num_epoch=r + 2, begin_epoch=r + 1, **fit))
    return {"rank": kv.rank, "steps": len(it.idx),
            "samples_per_s": kv.num_workers * len(it.idx) * LSTM_BATCH / seconds}


def worker_lstm_ddp(batches: int) -> dict:
    """The same language model and batches in PyTorch with DistributedDataParallel."""
    import torch
    from torch.nn.parallel import DistributedDataParallel

    import symgraph as mx
    dist, rank, size = _ddp_setup()
    it = lstm_iter(mx, batches, rank, size)
    data = [(torch.from_numpy(b.data[0].asnumpy()).long(),
             torch.from_numpy(b.label[0].asnumpy()).long()) for b in it]

    class LM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(VOCAB, HIDDEN)
            self.lstm = torch.nn.LSTM(HIDDEN, HIDDEN, num_layers=2)
            self.pred = torch.nn.Linear(HIDDEN, VOCAB)

        def forward(self, x):
            return self.pred(self.lstm(self.embed(x))[0].reshape(-1, HIDDEN))
    model = DistributedDataParallel(LM())
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def epoch(_=0) -> None:
        for x, y in data:
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(model(x), y.reshape(-1),
                                              ignore_index=0).backward()
            opt.step()
    epoch()
    seconds = _best_epoch(dist.barrier, epoch)
    dist.destroy_process_group()
    return {"rank": rank, "steps": len(data),
            "samples_per_s": size * len(data) * LSTM_BATCH / seconds}


def gradient_shapes() -> dict:
    """The gradients of the two workloads (fp32)."""
    mlp = [(512, 784), (512,), (512, 512), (512,), (10, 512), (10,)]
    gates = 4 * HIDDEN
    lstm = [(VOCAB, HIDDEN), (2 * (gates * HIDDEN * 2 + 2 * gates),), (VOCAB, HIDDEN),
            (VOCAB,)]
    return {"mlp": mlp, "lstm": lstm}


def allreduce_forms(kv, name: str, shapes: list) -> dict:
    """The ways to all-reduce one workload's gradients, as callables."""
    import torch
    import torch.distributed as dist
    mx = _mx()
    keys = [f"{name}{i}" for i in range(len(shapes))]
    grads = [mx.nd.array(np.random.RandomState(i).uniform(-1, 1, s)) for i, s in
             enumerate(shapes)]
    outs = [mx.nd.zeros(s) for s in shapes]
    kv.init(keys, [mx.nd.zeros(s) for s in shapes])
    tensors = [g._t.clone() for g in grads]
    prepared = torch.cat([t.reshape(-1) for t in tensors])

    def store():
        kv.pushpull(keys, grads, out=outs)

    def per_tensor():
        for t in tensors:
            dist.all_reduce(t)

    def flat():  # flatten, reduce, write the sums back: the same result in place
        buffer = torch.cat([t.reshape(-1) for t in tensors])
        dist.all_reduce(buffer)
        for t, piece in zip(tensors, buffer.split([t.numel() for t in tensors])):
            t.copy_(piece.view(t.shape))

    def transport():  # the collective alone on an already flat buffer
        dist.all_reduce(prepared)
    return {"store": store, "per_tensor": per_tensor, "flat": flat, "transport": transport}


def worker_allreduce(reps: int) -> dict:
    """The store's pushpull of every gradient against raw all_reduce calls."""
    mx = _mx()
    kv = mx.kv.create("dist_sync")
    result = {"rank": kv.rank}
    for name, shapes in gradient_shapes().items():
        forms = allreduce_forms(kv, name, shapes)
        for run in forms.values():  # warm-up: buffers made, pages touched
            run()
        best = {}
        for _ in range(reps):  # interleaved; each form's best repetition
            for form, run in forms.items():
                best[form] = min(best.get(form, float("inf")), _timed(kv._barrier, run))
        raw = min(best["per_tensor"], best["flat"])
        nbytes = sum(int(np.prod(s)) * 4 for s in shapes)
        result[name] = {"bytes": nbytes, **{f"{k}_s": v for k, v in best.items()},
                        "store_over_raw": best["store"] / raw,
                        "store_over_transport": best["store"] / best["transport"],
                        "store_gb_per_s": nbytes / best["store"] / 1e9,
                        "raw_gb_per_s": nbytes / raw / 1e9}
    return result


WORKERS = {"mlp": worker_mlp, "mlp_ddp": worker_mlp_ddp, "lstm": worker_lstm,
           "lstm_ddp": worker_lstm_ddp, "allreduce": worker_allreduce}


def worker_main(task: str, size: int, out: str) -> None:
    logging.disable(logging.WARNING)
    import warnings
    warnings.simplefilter("ignore")
    got = WORKERS[task](size)
    if got["rank"] == 0:
        with open(out + ".tmp", "w") as f:
            json.dump(got, f)
        os.replace(out + ".tmp", out)


# ---------------------------------------------------------------- the driver
def launch(task: str, n: int, size: int, python: str = sys.executable,
           mxnet: bool = False) -> dict | None:
    """Run ``task`` on ``n`` local workers; rank 0's result (None if it failed)."""
    from symgraph.launch import start_local, wait
    threads = str(max(1, (os.cpu_count() or 1) // n))
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS=threads,
               MKL_NUM_THREADS=threads, **({"MX_IMPL": "mxnet"} if mxnet else {}))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rank0.json")
        procs, _ = start_local([python, os.path.abspath(__file__), "--worker", task,
                                "--size", str(size), "--out", out], n, dmlc=mxnet, env=env,
                               cwd=ROOT)
        codes, timed_out = wait(procs, 900)
        if timed_out or any(codes) or not os.path.exists(out):
            print(f"  {task} on {n} workers failed: exit codes {codes}", file=sys.stderr)
            return None
        with open(out) as f:
            return json.load(f)


def _rate(got: dict | None) -> float | None:
    return None if got is None else round(got["samples_per_s"], 1)


def training_rows(workers: list[int], batches: int, mxnet_python: str | None) -> list:
    rows = []
    for n in workers:
        for workload, peer in (("mlp", "mlp_ddp"), ("lstm", "lstm_ddp")):
            ours, ddp = _rate(launch(workload, n, batches)), _rate(launch(peer, n, batches))
            theirs = _rate(launch(workload, n, batches, mxnet_python, mxnet=True)) \
                if mxnet_python and workload == "mlp" else None
            row = {"workload": workload, "workers": n, "symgraph_samples_per_s": ours,
                   "torch_ddp_samples_per_s": ddp, "mxnet_samples_per_s": theirs,
                   "ratio_vs_torch_ddp": None if not (ours and ddp) else round(ours / ddp, 3)}
            rows.append(row)
            print(f"{workload:5s} {n} workers  symgraph {ours}/s  torch DDP {ddp}/s  mxnet "
                  f"{'n/a' if theirs is None else f'{theirs}/s'}  ratio vs DDP "
                  f"{row['ratio_vs_torch_ddp']}")
    return rows


def allreduce_rows(workers: list[int], reps: int) -> list:
    rows = []
    for n in (w for w in workers if w > 1):
        got = launch("allreduce", n, reps)
        for name in gradient_shapes():
            if got is None:
                continue
            g = got[name]
            row = {"gradients": name, "workers": n, "megabytes": round(g["bytes"] / 1e6, 2),
                   "store_s": g["store_s"], "raw_per_tensor_s": g["per_tensor_s"],
                   "raw_flat_s": g["flat_s"], "transport_s": g["transport_s"],
                   "store_over_transport": round(g["store_over_transport"], 3),
                   "store_gb_per_s": round(g["store_gb_per_s"], 3),
                   "raw_gb_per_s": round(g["raw_gb_per_s"], 3),
                   "store_over_raw": round(g["store_over_raw"], 3), "target": "<= 1.10"}
            rows.append(row)
            print(f"allreduce {name:4s} {row['megabytes']} MB, {n} workers: store "
                  f"{row['store_gb_per_s']} GB/s, raw all_reduce {row['raw_gb_per_s']} GB/s, "
                  f"store / raw {row['store_over_raw']}x (target <= 1.10), store / bare "
                  f"collective {row['store_over_transport']}x")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--batches", type=int, default=20, help="steps per worker")
    parser.add_argument("--reps", type=int, default=40, help="all-reduce repetitions")
    parser.add_argument("--json", default=None)
    parser.add_argument("--mxnet-python", default=None)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker_main(args.worker, args.size, args.out)
        return
    sys.path.insert(0, ROOT)
    from benchmarks.bench_mlp import commit
    workers = [int(w) for w in args.workers.split(",")]
    mxnet_python = args.mxnet_python if args.mxnet_python and \
        os.path.exists(args.mxnet_python) else None
    result = {"device": f"cpu ({os.cpu_count()} cores), gloo over 127.0.0.1",
              "date": datetime.date.today().isoformat(), "commit": commit(),
              "training": training_rows(workers, args.batches, mxnet_python),
              "allreduce": allreduce_rows(workers, args.reps)}
    if args.json:
        from symgraph.symbol.json_io import atomic_write
        atomic_write(args.json, (json.dumps(result, indent=2) + "\n").encode())


if __name__ == "__main__":
    main()
