"""Train a 2-layer LSTM language model with bucketing (MXNet's ``lstm_bucketing`` example).

Sentences are grouped into length buckets; ``BucketingModule`` binds one executor per bucket
from ``sym_gen(bucket_key)``, all sharing parameters. The default corpus is built from the
Python language reference that ships with Python (nothing to download); ``--corpus PATH``
takes any text file with one sentence per line. Each epoch shows a progress bar, prints the
training and validation perplexity, and writes an atomic checkpoint (symbol, parameters and
optimizer states); ``--resume`` continues from the newest checkpoint in ``--out`` and gives
the same result as a run that was never interrupted. The vocabulary and the model's
settings are saved with the checkpoints (``lm_files``): a resume with another corpus or
model is refused, and ``--score`` / ``--generate`` use the trained model (``lm_use``).

    python -m symgraph.examples.lstm_bucketing [--corpus PATH] [--epochs 8]
        [--out symgraph-lstm-lm] [--resume] [--cell fused|unfused] [--hidden 128] ...
    python -m symgraph.examples.lstm_bucketing --score "the for statement is used"
    python -m symgraph.examples.lstm_bucketing --generate "the class" --length 12
"""
from __future__ import annotations

import argparse
import glob
import logging
import os
import random
import re
import sys

import numpy as np

import symgraph as mx

from .corpus import python_reference_corpus, read_corpus
from .lm_files import RunFileError, check_resume, load_run, save_run

INVALID_LABEL = 0  # padding; real words are numbered from 1
DEFAULT_OUT = "symgraph-lstm-lm"  # the run's folder, in the working directory


def split_corpus(sentences: list, val_fraction: float, seed: int):
    """A fixed train/validation split (every ``1/val_fraction``-th sentence is validation)."""
    if val_fraction <= 0:
        return list(sentences), []
    order = np.random.RandomState(seed).permutation(len(sentences))
    step = max(int(round(1 / val_fraction)), 2)
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


class CorpusTooSmall(ValueError):
    """No bucket of the training sentences fills one batch."""


def _iterators(train_ids: list, val_ids: list, args, begin: int):
    """Training and validation iterators whose epoch-k batches depend on (seed, k) only."""
    buckets = [int(b) for b in args.buckets.split(",")]
    train_iter = EpochSeededIter(train_ids, args.batch_size, buckets=buckets,
                                 invalid_label=INVALID_LABEL, layout="TN", seed=args.seed,
                                 first_epoch=begin)
    if not train_iter.idx:
        per_bucket = ", ".join(f"{b}: {len(d)}" for b, d in zip(train_iter.buckets,
                                                                 train_iter.data))
        raise CorpusTooSmall(
            f"the corpus is too small for one batch: {len(train_ids)} training sentences "
            f"({len(val_ids)} held out for validation), per bucket (length: sentences) "
            f"{per_bucket or 'none fit the largest bucket'}, and a batch takes "
            f"--batch-size {args.batch_size} sentences of one bucket; use a smaller "
            f"--batch-size or a larger corpus")
    # the held-out batches also shuffle per epoch: seeded too, so a resumed run drops the
    # same remainders and prints the same validation perplexity as an uninterrupted one
    val_iter = EpochSeededIter(val_ids, args.val_batch_size, buckets=buckets,
                               invalid_label=INVALID_LABEL, layout="TN", seed=args.seed + 1,
                               first_epoch=begin)
    if not val_iter.idx:
        logging.info("no validation: %d held-out sentences fill no batch of %d",
                     len(val_ids), args.val_batch_size)
    return train_iter, val_iter


def _resume(prefix: str, args, vocab: dict, corpus: str) -> int:
    """The epoch to start from: the newest checkpoint's with ``--resume`` (its run file
    checked against this corpus and these settings), else 0 (a new run file is written)."""
    begin = latest_checkpoint(prefix) if args.resume else None
    if begin:
        check_resume(load_run(prefix), vocab, args, corpus, prefix)
        return begin
    if args.resume:
        logging.info("--resume: no checkpoint under %s; starting at epoch 0", args.out)
    save_run(prefix, vocab, args, corpus)
    return 0


def train(args) -> dict:
    """Train (or resume); returns the final parameters and per-epoch perplexities."""
    out = os.path.abspath(args.out)
    logging.info("checkpoints and vocabulary go to %s", out)
    corpus = os.path.abspath(args.corpus) if args.corpus else "the Python language reference"
    sentences = read_corpus(args.corpus) if args.corpus else python_reference_corpus()
    if args.max_sentences:
        sentences = sentences[:args.max_sentences]
    encoded, vocab = mx.rnn.encode_sentences(sentences, invalid_label=INVALID_LABEL,
                                             start_label=INVALID_LABEL + 1)
    train_ids, val_ids = split_corpus(encoded, args.val_fraction, args.seed)
    os.makedirs(out, exist_ok=True)
    prefix = os.path.join(out, "lstm_lm")
    begin = _resume(prefix, args, vocab, corpus)
    train_iter, val_iter = _iterators(train_ids, val_ids, args, begin)
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

    # a bar per epoch with its total (so an ETA), closed at the epoch's last batch: the
    # epoch's summary lines then print below it
    progress = mx.callback.TqdmProgress(total=len(train_iter.idx), disable=not args.progress,
                                        unit="batch", dynamic_ncols=True)
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


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Each flag's default after its help; switches and flags without a value default say
    theirs in words."""

    def _get_help_string(self, action):
        if action.default is None or isinstance(action.default, bool) or \
                "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def parse_args(argv=None):
    return build_parser().parse_args(argv)


def build_parser() -> argparse.ArgumentParser:
    """The command line: every flag's help says its default."""
    parser = argparse.ArgumentParser(
        prog="python -m symgraph.examples.lstm_bucketing",
        description="Train a bucketing LSTM language model (MXNet's lstm_bucketing example), "
                    "or use a trained one with --score / --generate.",
        formatter_class=_HelpFormatter)
    run = parser.add_argument_group("data and run")
    run.add_argument("--corpus", default=None,
                     help="text file, one sentence per line (default: sentences of the "
                          "Python language reference that ships with Python)")
    run.add_argument("--out", default=DEFAULT_OUT,
                     help="directory for the checkpoints and the vocabulary, announced at "
                          f"the start (default: {DEFAULT_OUT}, in the working directory)")
    run.add_argument("--epochs", type=int, default=8, help="epochs to train in all")
    run.add_argument("--resume", action="store_true",
                     help="continue from the newest checkpoint in --out (same corpus and "
                          "model settings; the result equals an uninterrupted run; off by "
                          "default)")
    run.add_argument("--max-sentences", type=int, default=0,
                     help="use only the first N sentences of the corpus (0: all)")
    run.add_argument("--val-fraction", type=float, default=0.1,
                     help="share of the sentences held out for validation")
    run.add_argument("--seed", type=int, default=0,
                     help="seed of the split, the batch order and the initial parameters")
    run.add_argument("--no-progress", dest="progress", action="store_false",
                     help="hide the progress bar (shown by default)")
    model = parser.add_argument_group("model and training")
    model.add_argument("--cell", choices=("fused", "unfused"), default="fused",
                       help="the fused RNN operator, or one LSTMCell per step and layer")
    model.add_argument("--hidden", type=int, default=128, help="LSTM hidden size")
    model.add_argument("--embed", type=int, default=128, help="word embedding size")
    model.add_argument("--layers", type=int, default=2, help="stacked LSTM layers")
    model.add_argument("--buckets", default="10,20,30,40,50,60",
                       help="sentence-length buckets, comma separated")
    model.add_argument("--batch-size", type=int, default=32, help="training batch size")
    model.add_argument("--val-batch-size", type=int, default=8, help="validation batch size")
    model.add_argument("--lr", type=float, default=0.03, help="SGD learning rate")
    use = parser.add_argument_group("use a trained model (reads --out)")
    use.add_argument("--score", metavar="SENTENCE", default=None,
                     help="print the perplexity of SENTENCE under the checkpoint (default: "
                          "none, train instead)")
    use.add_argument("--generate", metavar="WORDS", default=None,
                     help="continue the text WORDS by sampling from the checkpoint "
                          "(default: none, train instead)")
    use.add_argument("--length", type=int, default=20, help="words --generate adds")
    use.add_argument("--temperature", type=float, default=1.0,
                     help="--generate's sampling temperature (near 0: the likeliest word)")
    use.add_argument("--epoch", type=int, default=None,
                     help="the checkpoint --score/--generate use (default: the newest)")
    return parser


def main(argv=None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args = parse_args(argv)
    try:
        if args.score is not None or args.generate is not None:
            from . import lm_use
            lm_use.main(args)
            return
        result = train(args)
    except (CorpusTooSmall, RunFileError, OSError) as err:  # the user's to fix: no traceback
        sys.exit(f"error: {err}")
    print(f"trained epochs {result['epochs']}; checkpoints under {result['prefix']}-*; "
          f"use them with --score SENTENCE or --generate WORDS")


if __name__ == "__main__":
    main()
