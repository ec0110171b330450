"""LSTM language-model training throughput (words/s): symgraph ``BucketingModule.fit`` vs
PyTorch ``nn.LSTM`` eager (and MXNet 1.9.1 when its virtualenv is given), in one run.

Workload: MXNet's ``example/rnn/bucketing/lstm_bucketing.py`` configuration: vocabulary
10000, embedding 200, 2 LSTM layers of 200, batch 32, buckets 10/20/30/40/50/60, plain SGD
(lr 0.01, wd 1e-5), Xavier init, perplexity metric. Two cell variants, each built by the
same script text under symgraph and MXNet: ``unrolled`` (``SequentialRNNCell`` of
``LSTMCell``, NT data, NTC unroll, as the example) and ``fused`` (``FusedRNNCell``, TN data,
TNC unroll: the RNN operator's own layout). The PyTorch peer is the same model (Embedding ->
2-layer ``nn.LSTM``, time-major -> Linear -> cross-entropy ignoring padding, SGD with the
same weight decay) on the same batches from ``mx.rnn.BucketSentenceIter``.

Corpus: synthetic, fixed seed, no download: random words, sentence lengths uniform within
each bucket's range, exactly ``--batches`` batches per epoch spread over the buckets.
Words are the non-padding tokens of the data (the sentence lengths), counted identically for
every peer. Each measurement binds a fresh module, runs one warm-up epoch (every bucket is
bound and every kernel warmed there) and times ``--epochs`` epochs; rounds interleave all
peers (MXNet in a subprocess per round) and each side's best round is reported.

    python -m symgraph.bench lstm [--batches 12] [--epochs 1] [--rounds 3]
        [--json benchmarks/results/lstm_cpu.json] [--mxnet-python /work/mxvenv/bin/python]
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import logging
import os
import subprocess
import sys
import time

import numpy as np

INVALID_LABEL = 0  # padding; words are numbered from 1
VARIANTS = ("unrolled", "fused")


@dataclasses.dataclass
class Config:
    """The workload (MXNet's lstm_bucketing defaults) and how long to run it."""
    vocab: int = 10000
    embed: int = 200
    hidden: int = 200
    layers: int = 2
    batch: int = 32
    buckets: tuple = (10, 20, 30, 40, 50, 60)
    batches: int = 12  # per epoch, spread over the buckets
    epochs: int = 1  # timed epochs after the warm-up epoch
    lr: float = 0.01
    wd: float = 1e-5
    seed: int = 0
    gpu: bool = False  # symgraph on gpu(0), torch on cuda (MXNet stays on CPU)


def corpus(cfg: Config) -> list:
    """Random sentences: ``cfg.batches`` full batches, lengths uniform within each bucket."""
    if cfg.batches < len(cfg.buckets):
        raise ValueError(f"--batches {cfg.batches} < {len(cfg.buckets)} buckets: every bucket "
                         "needs at least one batch")
    rng = np.random.RandomState(cfg.seed)
    sentences, low = [], 0
    for i, high in enumerate(cfg.buckets):
        n = cfg.batches // len(cfg.buckets) + (i < cfg.batches % len(cfg.buckets))
        for length in rng.randint(low + 1, high + 1, n * cfg.batch):
            sentences.append(rng.randint(1, cfg.vocab, int(length)).tolist())
        low = high
    return sentences


def sentence_iter(mx, cfg: Config, layout: str):
    """``mx.rnn.BucketSentenceIter`` over the corpus, and its words per epoch."""
    sentences = corpus(cfg)
    it = mx.rnn.BucketSentenceIter(sentences, cfg.batch, buckets=list(cfg.buckets),
                                   invalid_label=INVALID_LABEL, layout=layout)
    return it, sum(len(s) for s in sentences)


def make_sym_gen(mx, cfg: Config, variant: str):
    """``sym_gen(seq_len)`` for the language model (same text under symgraph and MXNet)."""
    if variant == "fused":
        cell, layout = mx.rnn.FusedRNNCell(cfg.hidden, num_layers=cfg.layers, mode="lstm",
                                           prefix="lstm_"), "TNC"
    else:
        cell, layout = mx.rnn.SequentialRNNCell(), "NTC"
        for i in range(cfg.layers):
            cell.add(mx.rnn.LSTMCell(num_hidden=cfg.hidden, prefix=f"lstm_l{i}_"))

    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        label = mx.sym.Variable("softmax_label")
        embed = mx.sym.Embedding(data=data, input_dim=cfg.vocab, output_dim=cfg.embed,
                                 name="embed")
        cell.reset()
        outputs, _ = cell.unroll(seq_len, inputs=embed, merge_outputs=True, layout=layout)
        pred = mx.sym.Reshape(outputs, shape=(-1, cfg.hidden))
        pred = mx.sym.FullyConnected(data=pred, num_hidden=cfg.vocab, name="pred")
        label = mx.sym.Reshape(label, shape=(-1,))
        pred = mx.sym.SoftmaxOutput(data=pred, label=label, use_ignore=True,
                                    ignore_label=INVALID_LABEL, name="softmax")
        return pred, ("data",), ("softmax_label",)
    return sym_gen


def module_rate(mx, cfg: Config, variant: str) -> dict:
    """Words/s of ``BucketingModule.fit`` (symgraph or MXNet, whichever ``mx`` is)."""
    it, words = sentence_iter(mx, cfg, "TN" if variant == "fused" else "NT")
    mx.random.seed(cfg.seed)
    mod = mx.mod.BucketingModule(make_sym_gen(mx, cfg, variant),
                                 default_bucket_key=it.default_bucket_key,
                                 context=mx.gpu() if cfg.gpu else mx.cpu())
    fit = dict(eval_metric=mx.metric.Perplexity(INVALID_LABEL), optimizer="sgd",
               optimizer_params={"learning_rate": cfg.lr, "momentum": 0.0, "wd": cfg.wd},
               initializer=mx.init.Xavier(factor_type="in", magnitude=2.34))
    mod.fit(it, num_epoch=1, **fit)  # warm-up: binds every bucket
    if hasattr(mx.nd, "waitall"):
        mx.nd.waitall()
    t0 = time.perf_counter()
    mod.fit(it, begin_epoch=1, num_epoch=1 + cfg.epochs, **fit)
    if hasattr(mx.nd, "waitall"):
        mx.nd.waitall()
    seconds = time.perf_counter() - t0
    return {"words": words * cfg.epochs, "seconds": seconds,
            "words_per_s": words * cfg.epochs / seconds}


class TorchLM:
    """Embedding -> ``nn.LSTM`` (time-major) -> Linear, cross-entropy ignoring padding."""

    def __init__(self, cfg: Config):
        import torch
        nn = torch.nn
        self.cfg = cfg
        self.device = torch.device("cuda" if cfg.gpu else "cpu")
        self.model = nn.ModuleDict({
            "embed": nn.Embedding(cfg.vocab, cfg.embed),
            "lstm": nn.LSTM(cfg.embed, cfg.hidden, num_layers=cfg.layers),
            "pred": nn.Linear(cfg.hidden, cfg.vocab)}).to("cuda" if cfg.gpu else "cpu")
        # MXNet's SGD: gradient summed over the batch, rescaled by 1/batch, then weight decay
        self.opt = torch.optim.SGD(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.wd)

    def step(self, x, y):
        """One training step on time-major ``x``, ``y``; returns (summed NLL, words)."""
        import torch
        m = self.model
        self.opt.zero_grad(set_to_none=True)
        out, _ = m["lstm"](m["embed"](x))
        logits = m["pred"](out.reshape(-1, self.cfg.hidden))
        nll = torch.nn.functional.cross_entropy(logits, y.reshape(-1),
                                                ignore_index=INVALID_LABEL, reduction="sum")
        (nll / self.cfg.batch).backward()
        self.opt.step()
        return nll.detach(), int((y != INVALID_LABEL).sum())


def torch_rate(mx, cfg: Config) -> dict:
    """Words/s of the same model and batches in PyTorch eager (perplexity tracked too)."""
    import torch
    it, words = sentence_iter(mx, cfg, "TN")
    torch.manual_seed(cfg.seed)
    lm = TorchLM(cfg)

    def epoch() -> float:
        it.reset()
        nll, count = 0.0, 0
        for batch in it:
            x = torch.from_numpy(batch.data[0].asnumpy()).long().to(lm.device)
            y = torch.from_numpy(batch.label[0].asnumpy()).long().to(lm.device)
            loss, n = lm.step(x, y)
            nll, count = nll + float(loss), count + n  # the metric's per-batch sync
        return float(np.exp(nll / max(count, 1)))
    epoch()  # warm-up
    t0 = time.perf_counter()
    for _ in range(cfg.epochs):
        epoch()
    seconds = time.perf_counter() - t0
    return {"words": words * cfg.epochs, "seconds": seconds,
            "words_per_s": words * cfg.epochs / seconds}


def mxnet_rates(python: str | None, cfg: Config) -> dict | None:
    """Both variants under MXNet 1.9.1 in its own virtualenv (None if absent or failing)."""
    if not python or not os.path.exists(python):
        return None
    here = os.path.dirname(os.path.abspath(__file__))
    on_cpu = dataclasses.asdict(cfg) | {"gpu": False}  # MXNet 1.9.1 runs on the CPU here
    code = (f"import sys, json, logging, mxnet as mx; sys.path.insert(0, {here!r}); "
            f"logging.disable(logging.WARNING); import bench_lstm as b; "
            f"cfg = b.Config(**json.loads({json.dumps(on_cpu)!r})); "
            f"print(json.dumps({{v: b.module_rate(mx, cfg, v) for v in b.VARIANTS}}))")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=900,
                         check=False)
    if out.returncode != 0:
        print(f"mxnet run failed:\n{out.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(mx, cfg: Config, rounds: int, mxnet_python: str | None) -> dict:
    """Best words/s of each peer over interleaved rounds (None for a peer not run)."""
    best: dict = {"symgraph_unrolled": None, "symgraph_fused": None, "torch_lstm": None,
                  "mxnet_unrolled": None, "mxnet_fused": None}

    def keep(name: str, run: dict) -> None:
        if best[name] is None or run["words_per_s"] > best[name]["words_per_s"]:
            best[name] = run
    for _ in range(rounds):  # interleaved, so machine noise hits every side alike
        for variant in VARIANTS:
            keep(f"symgraph_{variant}", module_rate(mx, cfg, variant))
        keep("torch_lstm", torch_rate(mx, cfg))
        theirs = mxnet_rates(mxnet_python, cfg)
        for variant, run in (theirs or {}).items():
            keep(f"mxnet_{variant}", run)
    return best


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def report(best: dict) -> list:
    """One row per peer; symgraph rows carry their target ratio and the fastest-peer ratio."""
    rate = {k: None if v is None else v["words_per_s"] for k, v in best.items()}
    peers = {k: r for k, r in rate.items() if r and not k.startswith("symgraph")}
    fastest = max(peers, key=peers.get) if peers else None
    targets = {"symgraph_unrolled": ("mxnet_unrolled", 1.5), "symgraph_fused": ("torch_lstm", 1.0)}
    rows = []
    for name, r in rate.items():
        row = {"peer": name, "words_per_s": None if r is None else round(r, 1),
               "words": None if r is None else best[name]["words"],
               "seconds": None if r is None else round(best[name]["seconds"], 3)}
        if name in targets:
            ref, target = targets[name]
            row.update({"target_peer": ref, "target": f">= {target}",
                        "ratio_vs_target_peer": _ratio(r, rate[ref]), "fastest_peer": fastest,
                        "ratio_vs_fastest_peer": _ratio(r, peers.get(fastest))})
        rows.append(row)
    return rows


def line(row: dict) -> str:
    rate = "n/a" if row["words_per_s"] is None else f"{row['words_per_s']:9.1f} words/s"
    text = f"{row['peer']:18s} {rate}"
    if "target" in row:
        text += (f"  vs {row['target_peer']} {row['ratio_vs_target_peer']}x (target "
                 f"{row['target']})  vs fastest peer ({row['fastest_peer']}) "
                 f"{row['ratio_vs_fastest_peer']}x")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=12, help="batches per epoch")
    parser.add_argument("--epochs", type=int, default=1, help="timed epochs after warm-up")
    parser.add_argument("--rounds", type=int, default=3,
                        help="interleaved rounds; each side's best round is reported")
    parser.add_argument("--json", default=None)
    parser.add_argument("--mxnet-python", default=None)
    parser.add_argument("--gpu", action="store_true", help="symgraph and torch on cuda:0")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    import torch

    import symgraph as mx
    from benchmarks.bench_mlp import commit
    cfg = Config(batches=args.batches, epochs=args.epochs, gpu=args.gpu)
    best = measure(mx, cfg, args.rounds, args.mxnet_python)
    rows = report(best)
    for row in rows:
        print(line(row))
    if args.json:
        from symgraph.symbol.json_io import atomic_write
        result = {"device": torch.cuda.get_device_name() if args.gpu else
                  f"cpu ({torch.get_num_threads()} threads)",
                  "torch": torch.__version__,
                  "date": datetime.date.today().isoformat(), "commit": commit(),
                  "config": dataclasses.asdict(cfg), "rounds": args.rounds,
                  "words": "non-padding data tokens (sum of sentence lengths), all peers",
                  "rows": rows}
        atomic_write(args.json, (json.dumps(result, indent=2) + "\n").encode())


if __name__ == "__main__":
    main()
