"""Train a 2-layer LSTM language model with bucketing (MXNet's ``lstm_bucketing`` example).

Sentences are grouped into length buckets; ``BucketingModule`` binds one executor per bucket
from ``sym_gen(bucket_key)``, all sharing parameters. The default corpus is built from the
Python language reference that ships with Python (nothing to download); ``--corpus PATH``
takes any text file with one sentence per line. Each epoch shows a progress bar, prints the
training and validation perplexity, and writes an atomic checkpoint (symbol, parameters and
optimizer states); ``--resume`` continues from the newest checkpoint in ``--out`` and gives
the same result as a run that was never interrupted.

    python -m symgraph.examples.lstm_bucketing [--corpus PATH] [--epochs 8] [--out DIR]
        [--resume] [--cell fused|unfused] [--hidden 128] [--embed 128] [--layers 2]
"""
from __future__ import annotations

import argparse
import glob
import logging
import os
import random
import re
import tempfile

import numpy as np

import symgraph as mx

from .corpus import python_reference_corpus, read_corpus

INVALID_LABEL = 0  # padding; real words are numbered from 1


def split_corpus(sentences: list, val_fraction: float, seed: int):
    """A fixed train/validation split (every ``1/val_fraction``-th sentence is validation)."""
    order = np.random.RandomState(seed).permutation(len(sentences))
    step = max(int(round(1 / val_fraction)), 2) if val_fraction > 0 else len(sentences) + 1
    val = [sentences[i] for k, i in enumerate(order) if k % step == 0]
    train = [sentences[i] for k, i in enumerate(order) if k % step != 0]
    return train, val


class EpochSeededIter(mx.rnn.BucketSentenceIter):
    """BucketSentenceIter whose epoch-k order depends on (seed, k) only: each reset restores
    the original order, then shuffles with a seed for the epoch, so a run resumed at epoch k
    sees exactly the batches the uninterrupted run saw (MXNet's reset shuffles the previous
    epoch's order again, which a resumed run could not reproduce)."""

    def __init__(self, *args, seed: int = 0, first_epoch: int = 0, **kwargs):
        self._seed, self._epoch, self._original = seed, first_epoch - 1, None
        super().__init__(*args, **kwargs)

    def reset(self) -> None:
        if self._original is None:
            self._original = (list(self.idx), [bucket.copy() for bucket in self.data])
        else:
            self.idx[:] = self._original[0]
            for bucket, original in zip(self.data, self._original[1]):
                bucket[:] = original
        self._epoch += 1
        random.seed(self._seed * 1000 + self._epoch)
        np.random.seed(self._seed * 1000 + self._epoch)
        super().reset()


def make_sym_gen(vocab_size: int, args):
    """``sym_gen(seq_len) -> (symbol, data_names, label_names)`` for the language model."""
    if args.cell == "fused":
        cell = mx.rnn.FusedRNNCell(args.hidden, num_layers=args.layers, mode="lstm",
                                   prefix="lstm_")
    else:
        cell = mx.rnn.SequentialRNNCell()
        for i in range(args.layers):
            cell.add(mx.rnn.LSTMCell(num_hidden=args.hidden, prefix=f"lstm_l{i}_"))

    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        label = mx.sym.Variable("softmax_label")
        embed = mx.sym.Embedding(data=data, input_dim=vocab_size, output_dim=args.embed,
                                 name="embed")
        cell.reset()  # time-major (TNC) data: the RNN operator's own layout, no transposes
        outputs, _ = cell.unroll(seq_len, inputs=embed, merge_outputs=True, layout="TNC")
        pred = mx.sym.Reshape(outputs, shape=(-1, args.hidden))
        pred = mx.sym.FullyConnected(data=pred, num_hidden=vocab_size, name="pred")
        label = mx.sym.Reshape(label, shape=(-1,))
        # padding positions (label 0) add nothing to the gradient, as the metric skips them
        pred = mx.sym.SoftmaxOutput(data=pred, label=label, use_ignore=True,
                                    ignore_label=INVALID_LABEL, name="softmax")
        return pred, ("data",), ("softmax_label",)
    return sym_gen


def latest_checkpoint(prefix: str) -> int | None:
    """The newest epoch with a complete checkpoint (symbol, params and states) at ``prefix``."""
    epochs = []
    for path in glob.glob(f"{glob.escape(prefix)}-*.params"):
        m = re.search(r"-(\d{4})\.params$", path)
        if m and os.path.exists(f"{prefix}-{m.group(1)}.states") and \
                os.path.exists(f"{prefix}.buckets"):
            epochs.append(int(m.group(1)))
    return max(epochs) if epochs else None


def train(args) -> dict:
    """Train (or resume); returns the final parameters and per-epoch perplexities."""
    sentences = read_corpus(args.corpus) if args.corpus else python_reference_corpus()
    if args.max_sentences:
        sentences = sentences[:args.max_sentences]
    encoded, vocab = mx.rnn.encode_sentences(sentences, invalid_label=INVALID_LABEL,
                                             start_label=INVALID_LABEL + 1)
    train_ids, val_ids = split_corpus(encoded, args.val_fraction, args.seed)
    buckets = [int(b) for b in args.buckets.split(",")]
    os.makedirs(args.out, exist_ok=True)
    prefix = os.path.join(args.out, "lstm_lm")
    begin = latest_checkpoint(prefix) if args.resume else None
    begin = begin or 0
    train_iter = EpochSeededIter(train_ids, args.batch_size, buckets=buckets,
                                 invalid_label=INVALID_LABEL, layout="TN", seed=args.seed,
                                 first_epoch=begin)
    val_iter = mx.rnn.BucketSentenceIter(val_ids, args.val_batch_size, buckets=buckets,
                                         invalid_label=INVALID_LABEL, layout="TN")
    vocab_size = len(vocab) + 1
    sym_gen = make_sym_gen(vocab_size, args)
    mx.random.seed(args.seed)
    optimizer_params = {"learning_rate": args.lr, "momentum": 0.9, "wd": 1e-5,
                        "clip_gradient": 5.0}
    if begin:  # MXNet's recipe: load params, bind, init the optimizer, load its states
        model = mx.mod.BucketingModule.load(prefix, begin, sym_gen=sym_gen,
                                            default_bucket_key=train_iter.default_bucket_key,
                                            context=mx.cpu())
        model.bind(data_shapes=train_iter.provide_data, label_shapes=train_iter.provide_label)
        model.init_optimizer(optimizer="sgd", optimizer_params=optimizer_params)
        model._curr_module.load_optimizer_states(f"{prefix}-{begin:04d}.states")
        logging.info("resuming from %s-%04d", prefix, begin)
    else:
        model = mx.mod.BucketingModule(sym_gen, default_bucket_key=train_iter.default_bucket_key,
                                       context=mx.cpu())
    history = []

    def checkpoint(epoch, symbol, arg_params, aux_params):
        # the optimizer (and its states) is shared by every bucket's module
        model._curr_module.save_optimizer_states(f"{prefix}-{epoch + 1:04d}.states")
        model.save_checkpoint(prefix, epoch + 1)  # params last: they mark a complete epoch

    def record(epoch, symbol, arg_params, aux_params):
        history.append(epoch)

    progress = mx.callback.TqdmProgress(disable=not args.progress, leave=False)
    model.fit(train_iter, eval_data=val_iter if val_iter.idx else None,
              eval_metric=mx.metric.Perplexity(INVALID_LABEL),
              optimizer="sgd", optimizer_params=optimizer_params,
              initializer=mx.init.Xavier(factor_type="in", magnitude=2.34),
              begin_epoch=begin, num_epoch=args.epochs,
              batch_end_callback=progress, epoch_end_callback=[checkpoint, record])
    progress.close()
    arg_params, _ = model.get_params()
    return {"params": {k: v.asnumpy() for k, v in arg_params.items()}, "epochs": history,
            "vocab_size": vocab_size, "prefix": prefix}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=None, help="text file, one sentence per line")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--out", default=None, help="checkpoint directory")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--cell", choices=("fused", "unfused"), default="fused")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--embed", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--buckets", default="10,20,30,40,50,60")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--val-batch-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.03)
    parser.add_argument("--val-fraction", type=float, default=0.1)
    parser.add_argument("--max-sentences", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", dest="progress", action="store_false")
    args = parser.parse_args(argv)
    if args.out is None:
        args.out = os.path.join(tempfile.gettempdir(), "symgraph-lstm-lm")
    return args


def main(argv=None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args = parse_args(argv)
    result = train(args)
    print(f"trained epochs {result['epochs']}; checkpoints under {result['prefix']}-*")


if __name__ == "__main__":
    main()
