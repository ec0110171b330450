"""A Gluon model: define a HybridBlock, train it with ``gluon.Trainer`` and autograd,
hybridize it, and export it (symbol JSON + params) for the symbolic API and for ONNX.

    python examples/gluon_classifier.py [--epochs 5] [--out gluon-classifier]
"""
from __future__ import annotations

import argparse
import os

import numpy as np

import symgraph as mx
from symgraph import autograd, gluon
from symgraph.examples.datasets import load_digits


class Net(gluon.HybridBlock):
    """Two dense layers with dropout between them."""

    def __init__(self, classes: int = 10, **kwargs):
        super().__init__(**kwargs)
        self.hidden = gluon.nn.Dense(64, activation="relu")
        self.drop = gluon.nn.Dropout(0.2)
        self.out = gluon.nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.out(self.drop(self.hidden(x)))


def main(argv=None) -> float:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--out", default="gluon-classifier", help="where the export goes")
    args = ap.parse_args(argv)
    x, y = load_digits()
    order = np.random.RandomState(0).permutation(len(x))
    x, y = x[order], y[order]
    train = gluon.data.DataLoader(gluon.data.ArrayDataset(x[:1500], y[:1500]),
                                  batch_size=args.batch_size, shuffle=True)
    mx.random.seed(0)
    net = Net()
    net.initialize(mx.init.Xavier())
    net.hybridize()  # traced once into a graph, then run as a bound plan
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.01})
    for epoch in range(args.epochs):
        total = 0.0
        for data, label in train:
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(data.shape[0])
            total += float(loss.sum().asscalar())
        print(f"epoch {epoch}: mean loss {total / 1500:.4f}")
    pred = net(mx.nd.array(x[1500:])).asnumpy().argmax(1)
    accuracy = float((pred == y[1500:]).mean())
    os.makedirs(args.out, exist_ok=True)
    prefix = os.path.join(args.out, "net")
    net.export(prefix, epoch=args.epochs)  # net-symbol.json, net-000N.params
    print(f"validation accuracy {accuracy:.3f}; exported {prefix}-symbol.json")
    return accuracy


if __name__ == "__main__":
    main()
