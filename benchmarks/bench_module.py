"""Module training throughput (samples/s): symgraph ``Module.fit`` vs PyTorch eager (and MXNet
1.9.1 when its virtualenv is given), measured side by side in one run.

Workloads: the MLP 784-512-512-10 at batch 128 and LeNet (1x28x28) at batch 64, SGD with
momentum, accuracy metric, synthetic data held in memory.

    python -m symgraph.bench module [--batches 40] [--rounds 3]
        [--json benchmarks/results/module_cpu.json]
        [--mxnet-python /path/to/mxnet-venv/bin/python]
"""
from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
import subprocess
import time

import numpy as np

WORKLOADS = {"mlp": ((784,), 128), "lenet": ((1, 28, 28), 64)}


def symbol(mx, name: str):
    """The workload as a symbol (same text under symgraph and MXNet)."""
    data = mx.sym.Variable("data")
    if name == "mlp":
        net = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=512), act_type="relu")
        net = mx.sym.Activation(mx.sym.FullyConnected(net, num_hidden=512), act_type="relu")
        net = mx.sym.FullyConnected(net, num_hidden=10)
    else:
        net = data
        for filters in (20, 50):
            net = mx.sym.Convolution(net, kernel=(5, 5), num_filter=filters)
            net = mx.sym.Activation(net, act_type="tanh")
            net = mx.sym.Pooling(net, pool_type="max", kernel=(2, 2), stride=(2, 2))
        net = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.Flatten(net), num_hidden=500),
                                act_type="tanh")
        net = mx.sym.FullyConnected(net, num_hidden=10)
    return mx.sym.SoftmaxOutput(net, name="softmax")


def module_rate(mx, name: str, batches: int) -> float:
    """Samples/s of Module.fit over ``batches`` batches (after a warm-up epoch)."""
    shape, batch = WORKLOADS[name]
    rng = np.random.RandomState(0)
    x = rng.uniform(0, 1, (batches * batch,) + shape).astype(np.float32)
    y = rng.randint(0, 10, batches * batch).astype(np.float32)
    it = mx.io.NDArrayIter(x, y, batch_size=batch)
    mod = mx.mod.Module(symbol(mx, name), context=mx.cpu())
    opt = {"learning_rate": 0.01, "momentum": 0.9}
    mod.fit(it, num_epoch=1, optimizer="sgd", optimizer_params=opt)  # warm-up
    t0 = time.perf_counter()
    mod.fit(it, num_epoch=2, begin_epoch=1, optimizer="sgd", optimizer_params=opt)
    if hasattr(mx.nd, "waitall"):
        mx.nd.waitall()
    return batches * batch / (time.perf_counter() - t0)


def torch_model(name: str):
    import torch
    nn = torch.nn
    if name == "mlp":
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                             nn.Linear(512, 10))
    return nn.Sequential(nn.Conv2d(1, 20, 5), nn.Tanh(), nn.MaxPool2d(2), nn.Conv2d(20, 50, 5),
                         nn.Tanh(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(800, 500),
                         nn.Tanh(), nn.Linear(500, 10))


def torch_rate(name: str, batches: int) -> float:
    """Samples/s of the same training loop in PyTorch eager (accuracy counted too)."""
    import torch
    shape, batch = WORKLOADS[name]
    gen = torch.Generator().manual_seed(0)
    xs = torch.rand((batches, batch) + shape, generator=gen)
    ys = torch.randint(0, 10, (batches, batch), generator=gen)
    model = torch_model(name)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def epoch() -> None:
        correct = 0
        for x, y in zip(xs, ys):
            opt.zero_grad(set_to_none=True)
            out = model(x)
            torch.nn.functional.cross_entropy(out, y).backward()
            opt.step()
            correct += int((out.argmax(1) == y).sum())
    epoch()
    t0 = time.perf_counter()
    epoch()
    return batches * batch / (time.perf_counter() - t0)


def mxnet_value(python: str | None, module: str, call: str) -> float | None:
    """``b.<call>`` evaluated under MXNet 1.9.1 in its own virtualenv, with ``b`` this
    directory's ``module`` and ``mx`` MXNet (None if the virtualenv is absent or it fails)."""
    if not python or not os.path.exists(python):
        return None
    here = os.path.dirname(os.path.abspath(__file__))
    code = (f"import sys, mxnet as mx; sys.path.insert(0, {here!r}); import {module} as b; "
            f"print(b.{call})")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=900,
                         check=False)
    return float(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else None


def mxnet_rate(python: str | None, name: str, batches: int) -> float | None:
    """The same Module.fit under MXNet 1.9.1 in its own virtualenv (None if absent)."""
    return mxnet_value(python, "bench_module", f"module_rate(mx, {name!r}, {batches})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--json", default=None)
    parser.add_argument("--mxnet-python", default=None)
    parser.add_argument("--rounds", type=int, default=3,
                        help="interleaved rounds; each side's best round is reported")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    import warnings
    warnings.simplefilter("ignore")
    import torch

    import symgraph as mx
    from benchmarks.bench_mlp import commit
    result = {"device": f"cpu ({torch.get_num_threads()} threads)",
              "date": datetime.date.today().isoformat(), "commit": commit(), "rows": []}
    for name in WORKLOADS:
        ours = eager = 0.0
        for _ in range(args.rounds):  # interleaved, so machine noise hits both sides alike
            ours = max(ours, module_rate(mx, name, args.batches))
            eager = max(eager, torch_rate(name, args.batches))
        theirs = mxnet_rate(args.mxnet_python, name, args.batches)
        peer = max(eager, theirs or 0.0)
        row = {"workload": name, "symgraph_samples_per_s": round(ours, 1),
               "torch_eager_samples_per_s": round(eager, 1),
               "mxnet_samples_per_s": None if theirs is None else round(theirs, 1),
               "ratio_vs_faster_peer": round(ours / peer, 3), "target": ">= 1.0"}
        result["rows"].append(row)
        print(f"{name:6s} symgraph {ours:9.1f}/s  torch eager {eager:9.1f}/s  mxnet "
              f"{'n/a' if theirs is None else f'{theirs:9.1f}/s'}  ratio vs faster peer "
              f"{ours / peer:.3f}x")
    if args.json:
        from symgraph.symbol.json_io import atomic_write
        atomic_write(args.json, (json.dumps(result, indent=2) + "\n").encode())


if __name__ == "__main__":
    main()
