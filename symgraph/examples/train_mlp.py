"""Train an MLP classifier with the symbolic API on bundled data, then checkpoint and reload it.

The data is the classic two-spirals problem (3 classes, 2-D points), generated
deterministically so no download is needed. The script uses only what MXNet 1.x
scripts use: ``mx.sym`` to define the net, ``simple_bind`` to get an executor,
``forward``/``backward``, NDArray arithmetic for plain SGD, and ``mx.nd.save`` /
``Symbol.save`` for the checkpoint, which it reloads and checks.

    python -m symgraph.examples.train_mlp [--epochs 30] [--out DIR]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

import symgraph as mx


def spirals(n_per_class: int = 300, classes: int = 3, seed: int = 0):
    """Points on ``classes`` interleaved noisy spirals; labels 0..classes-1."""
    rng = np.random.RandomState(seed)
    xs, ys = [], []
    for c in range(classes):
        r = np.linspace(0.05, 1.0, n_per_class)
        t = np.linspace(c * 4.0, (c + 1) * 4.0, n_per_class) + rng.randn(n_per_class) * 0.2
        xs.append(np.stack([r * np.sin(t), r * np.cos(t)], axis=1))
        ys.append(np.full(n_per_class, c))
    x, y = np.concatenate(xs).astype(np.float32), np.concatenate(ys).astype(np.float32)
    order = rng.permutation(len(x))
    return x[order], y[order]


def build_net(hidden: int = 64, classes: int = 3) -> mx.sym.Symbol:
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=hidden, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=hidden, name="fc2")
    net = mx.sym.Activation(net, act_type="relu", name="relu2")
    net = mx.sym.FullyConnected(net, num_hidden=classes, name="fc3")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def init_params(exe, seed: int = 1) -> None:
    rng = np.random.RandomState(seed)
    for name, arr in exe.arg_dict.items():
        if name.endswith("_weight"):
            fan_in = arr.shape[1]
            arr[:] = rng.uniform(-1, 1, arr.shape) * np.sqrt(6.0 / (fan_in + arr.shape[0]))
        elif name.endswith("_bias"):
            arr[:] = 0


def train(epochs: int, batch: int, lr: float, out_dir: str) -> float:
    x, y = spirals()
    split = int(0.8 * len(x))
    net = build_net()
    params = [n for n in net.list_arguments() if n not in ("data", "softmax_label")]
    reqs = {n: ("write" if n in params else "null") for n in net.list_arguments()}
    exe = net.simple_bind(mx.cpu(), grad_req=reqs, data=(batch, 2))
    init_params(exe)
    for epoch in range(epochs):
        t0, correct, seen = time.perf_counter(), 0, 0
        for i in range(0, split - batch + 1, batch):
            exe.arg_dict["data"][:] = x[i:i + batch]
            exe.arg_dict["softmax_label"][:] = y[i:i + batch]
            prob = exe.forward(is_train=True)[0]
            exe.backward()
            for name in params:  # plain SGD; gradients are summed over the batch
                exe.arg_dict[name][:] = exe.arg_dict[name] - (lr / batch) * exe.grad_dict[name]
            correct += int((prob.asnumpy().argmax(1) == y[i:i + batch]).sum())
            seen += batch
        val = evaluate(exe, x[split:], y[split:], batch)
        print(f"epoch {epoch + 1:3d}  train acc {correct / seen:.3f}  val acc {val:.3f}  "
              f"({time.perf_counter() - t0:.2f}s)")
    save_and_reload(net, exe, params, out_dir, x[split:split + batch])
    return val


def evaluate(exe, x, y, batch: int) -> float:
    correct = total = 0
    for i in range(0, len(x) - batch + 1, batch):
        exe.arg_dict["data"][:] = x[i:i + batch]
        pred = exe.forward(is_train=False)[0].asnumpy().argmax(1)
        correct += int((pred == y[i:i + batch]).sum())
        total += batch
    return correct / max(total, 1)


def save_and_reload(net, exe, params, out_dir: str, sample) -> None:
    """Write MXNet's checkpoint files (``-symbol.json``, ``-0000.params``) and reload them."""
    prefix = os.path.join(out_dir, "spirals")
    net.save(f"{prefix}-symbol.json")
    mx.nd.save(f"{prefix}-0000.params", {f"arg:{n}": exe.arg_dict[n] for n in params})
    loaded = mx.sym.load(f"{prefix}-symbol.json")
    saved = mx.nd.load(f"{prefix}-0000.params")
    exe2 = loaded.simple_bind(mx.cpu(), grad_req="null", data=sample.shape)
    exe2.copy_params_from({k[4:]: v for k, v in saved.items()}, allow_extra_params=False)
    exe.arg_dict["data"][:] = sample
    exe2.arg_dict["data"][:] = sample
    same = np.allclose(exe.forward()[0].asnumpy(), exe2.forward()[0].asnumpy(), atol=1e-6)
    print(f"checkpoint written to {prefix}-symbol.json / -0000.params; "
          f"reloaded model gives the same predictions: {same}")
    if not same:
        raise SystemExit("reloaded model disagrees with the trained one")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--out", default=None, help="checkpoint folder (default: a temp dir)")
    args = parser.parse_args()
    mx.random.seed(0)
    out_dir = args.out or tempfile.mkdtemp(prefix="symgraph-mlp-")
    os.makedirs(out_dir, exist_ok=True)
    val = train(args.epochs, args.batch, args.lr, out_dir)
    print(f"final validation accuracy {val:.3f}")


if __name__ == "__main__":
    main()
