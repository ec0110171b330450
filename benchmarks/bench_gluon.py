"""Gluon training throughput (samples/s): the MLP of ``bench_module`` trained through
``gluon.Trainer`` in MXNet's usual loop, against ``Module.fit`` on the same machine in the
same run (the issue's target: gluon >= 0.95x Module — the imperative layer adds no real
overhead), and MXNet 1.9.1's gluon loop when its virtualenv is given.

The loop: ``with autograd.record(): loss = loss_fn(net(x), y)``, ``loss.backward()``,
``trainer.step(batch)``, an accuracy metric update; a HybridSequential of Dense(512, relu),
Dense(512, relu), Dense(10), SoftmaxCrossEntropyLoss, SGD with momentum; synthetic data held
in memory, batch 128.

Each peer is built and warmed once; then ``--rounds`` rounds time one short epoch
(``--batches`` batches) of every peer, the order reversed each round, and the rates are the
totals: on a shared CPU whose speed drifts by tens of percent within seconds, only fine
interleaving puts the same drift on every side.

    python -m symgraph.bench gluon [--batches 10] [--rounds 30]
        [--json benchmarks/results/gluon_cpu.json] [--mxnet-python /path/to/venv/bin/python]
"""
from __future__ import annotations

import argparse
import datetime
import json
import logging
import time

import numpy as np

BATCH, SHAPE = 128, (784,)


def gluon_loop(mx, batches: int, head: str = "loss"):
    """One epoch of the gluon loop over ``batches`` batches, as a callable (built and warmed).

    ``head`` 'loss': ``gluon.loss.SoftmaxCrossEntropyLoss`` (log_softmax, pick, mean: a
    second small graph, as gluon users write it); 'softmax_output': the network ends in
    ``F.SoftmaxOutput`` like the Module symbol, so both run the same graph and the ratio
    shows what the imperative layer itself costs."""
    rng = np.random.RandomState(0)
    x = rng.uniform(0, 1, (batches * BATCH,) + SHAPE).astype(np.float32)
    y = rng.randint(0, 10, batches * BATCH).astype(np.float32)
    it = mx.io.NDArrayIter(x, y, batch_size=BATCH)
    net = mx.gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(512, activation="relu"),
                mx.gluon.nn.Dense(512, activation="relu"), mx.gluon.nn.Dense(10))
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    net.hybridize()
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss() if head == "loss" else \
        _SoftmaxOutput(mx)
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd",
                               {"learning_rate": 0.01, "momentum": 0.9})
    metric = mx.metric.Accuracy()

    def epoch() -> None:
        it.reset()
        metric.reset()
        for batch in it:
            data, label = batch.data[0], batch.label[0]
            with mx.autograd.record():
                out = net(data)
                loss = loss_fn(out, label)
            loss.backward()
            trainer.step(BATCH)
            metric.update([label], [out])
        if hasattr(mx.nd, "waitall"):
            mx.nd.waitall()
    epoch()  # warm-up: binds and composes
    return epoch


def module_loop(mx, batches: int):
    """One ``Module.fit`` epoch of the same MLP over ``batches`` batches (built, warmed)."""
    from benchmarks.bench_module import symbol
    rng = np.random.RandomState(0)
    x = rng.uniform(0, 1, (batches * BATCH,) + SHAPE).astype(np.float32)
    y = rng.randint(0, 10, batches * BATCH).astype(np.float32)
    it = mx.io.NDArrayIter(x, y, batch_size=BATCH)
    mod = mx.mod.Module(symbol(mx, "mlp"), context=mx.cpu())
    opt = {"learning_rate": 0.01, "momentum": 0.9}
    mod.fit(it, num_epoch=1, optimizer="sgd", optimizer_params=opt)  # warm-up
    done = [1]

    def epoch() -> None:
        mod.fit(it, begin_epoch=done[0], num_epoch=done[0] + 1, optimizer="sgd",
                optimizer_params=opt)
        done[0] += 1
        if hasattr(mx.nd, "waitall"):
            mx.nd.waitall()
    return epoch


def gluon_rate(mx, batches: int, head: str = "loss") -> float:
    """Samples/s of one timed gluon epoch (what the MXNet peer reports)."""
    epoch = gluon_loop(mx, batches, head)
    t0 = time.perf_counter()
    epoch()
    return batches * BATCH / (time.perf_counter() - t0)


def _SoftmaxOutput(mx):  # stands for a class
    class SoftmaxOutputLoss(mx.gluon.HybridBlock):
        """MXNet's SoftmaxOutput as the loss: its gradient ignores the head gradient."""

        def hybrid_forward(self, F, pred, label):
            return F.SoftmaxOutput(pred, label, name="softmax")
    return SoftmaxOutputLoss()


def mxnet_rate(python: str | None, batches: int) -> float | None:
    """The same gluon loop under MXNet 1.9.1 in its own virtualenv (None if absent)."""
    from benchmarks.bench_module import mxnet_value
    return mxnet_value(python, "bench_gluon", f"gluon_rate(mx, {batches})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=10, help="batches per timed epoch")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--json", default=None)
    parser.add_argument("--mxnet-python", default=None)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    import torch

    import symgraph as mx
    # every peer built once; then short epochs (--batches each) in alternation, order
    # reversed every round, so a shared CPU's drifting speed falls on all peers alike
    loops = {"gluon": gluon_loop(mx, args.batches),
             "gluon_softmax_output": gluon_loop(mx, args.batches, "softmax_output"),
             "module": module_loop(mx, args.batches)}
    seconds = dict.fromkeys(loops, 0.0)
    for r in range(args.rounds):
        for name in (list(loops) if r % 2 == 0 else list(reversed(loops))):
            t0 = time.perf_counter()
            loops[name]()
            seconds[name] += time.perf_counter() - t0
    samples = args.rounds * args.batches * BATCH
    rate = {k: samples / v for k, v in seconds.items()}
    ratio = rate["gluon"] / rate["module"]
    same = rate["gluon_softmax_output"] / rate["module"]
    theirs = mxnet_rate(args.mxnet_python, args.batches * 4)
    print(f"mlp gluon.Trainer {rate['gluon']:9.1f} samples/s  Module.fit "
          f"{rate['module']:9.1f} samples/s  ratio {ratio:.3f}x (target >= 0.95)  "
          f"mxnet gluon {theirs}")
    print(f"mlp gluon.Trainer with Module's SoftmaxOutput head "
          f"{rate['gluon_softmax_output']:9.1f} samples/s  ratio {same:.3f}x")
    if args.json:
        from benchmarks.bench_mlp import commit
        from symgraph.symbol.json_io import atomic_write
        head = commit()
        result = {"device": f"cpu ({torch.get_num_threads()} threads)",
                  "date": datetime.date.today().isoformat(), "commit": head,
                  "batches": args.batches, "rounds": args.rounds,
                  "samples_per_s": {k: round(v, 1) for k, v in rate.items()},
                  "mxnet_gluon_samples_per_s": theirs,
                  "ratio_gluon_over_module": round(ratio, 3),
                  "method": "each peer built and warmed once, then --rounds rounds of one "
                            "--batches epoch per peer in alternating order; total time",
                  "ratio_same_head_over_module": round(same, 3),
                  "target": ">= 0.95"}
        atomic_write(args.json, (json.dumps(result, indent=2) + "\n").encode())


if __name__ == "__main__":
    main()
