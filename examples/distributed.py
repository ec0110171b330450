"""Data-parallel training on several processes: each worker trains on its part of the data
and ``kvstore='dist_sync'`` averages the gradients over torch.distributed (gloo on a CPU).

    python -m symgraph.launch -n 2 examples/distributed.py [--epochs 3]

The launcher starts the workers with PyTorch's environment (``RANK``, ``WORLD_SIZE``,
``MASTER_ADDR``/``PORT``); MXNet scripts launched with MXNet's ``tools/launch.py`` style
(``python -m symgraph.launch -n 2 --dmlc ...``) run the same way. Run alone, the script
trains on one process (``kvstore='local'``).
"""
from __future__ import annotations

import argparse
import os

import numpy as np

import symgraph as mx
from symgraph.examples.datasets import load_digits


def main(argv=None) -> float:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=50)
    args = ap.parse_args(argv)
    distributed = "WORLD_SIZE" in os.environ or "DMLC_ROLE" in os.environ
    kv = mx.kv.create("dist_sync" if distributed else "local")
    x, y = load_digits()
    order = np.random.RandomState(0).permutation(len(x))
    x, y = x[order][:1500], y[order][:1500]
    # every worker reads its own part: rank r takes samples r, r + n, r + 2n, ...
    part = slice(kv.rank, None, kv.num_workers)
    train = mx.io.NDArrayIter(x[part], y[part], batch_size=args.batch_size, shuffle=True,
                              label_name="softmax_label")
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=64, name="fc1")
    net = mx.sym.FullyConnected(mx.sym.relu(net), num_hidden=10, name="fc2")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    mx.random.seed(0)  # the same initial parameters on every worker
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.fit(train, kvstore=kv, optimizer="sgd",
            optimizer_params={"learning_rate": 0.2, "momentum": 0.9},
            initializer=mx.init.Xavier(), num_epoch=args.epochs, eval_metric="acc")
    accuracy = mod.score(mx.io.NDArrayIter(x, y, batch_size=args.batch_size), "acc")[0][1]
    print(f"worker {kv.rank} of {kv.num_workers}: accuracy on all the data {accuracy:.3f}")
    return accuracy


if __name__ == "__main__":
    main()
