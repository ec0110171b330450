"""Use a language model the demo trained: ``--score`` a sentence (its perplexity and each
word's probability) or ``--generate`` text after some words (sampled word by word).

The model is the newest checkpoint in ``--out`` (or ``--epoch``), bound for inference with
a batch of one; the vocabulary and settings come from its run file (``lm_files``). A
sentence of ``n`` words is one time-major column padded to the smallest bucket that holds
it; output row ``t`` is the distribution of word ``t + 1`` (the LSTM reads left to right,
so the padding after the sentence changes nothing before it).
"""
from __future__ import annotations

import math
import os
from types import SimpleNamespace

import numpy as np

import symgraph as mx

from .corpus import tokenize
from .lm_files import RunFileError, load_run


class LanguageModel:
    """A trained checkpoint of the demo, ready to score and to generate."""

    def __init__(self, out: str, epoch: int | None = None):
        from .lstm_bucketing import INVALID_LABEL, latest_checkpoint, make_sym_gen
        self.prefix = os.path.join(out, "lstm_lm")
        run = load_run(self.prefix)
        self.vocab = run["vocab"]
        self.words = {i: w for w, i in self.vocab.items()}
        self.buckets = sorted(run["model"]["buckets"])
        self.invalid = INVALID_LABEL
        epoch = epoch if epoch is not None else latest_checkpoint(self.prefix)
        if epoch is None or not os.path.exists(f"{self.prefix}-{epoch:04d}.params"):
            which = f"of epoch {epoch} " if epoch else ""
            raise RunFileError(f"no checkpoint {which}at {self.prefix}: train first")
        settings = SimpleNamespace(**run["model"])
        sym_gen = make_sym_gen(len(self.vocab) + 1, settings)
        top = self.buckets[-1]
        self.module = mx.mod.BucketingModule(sym_gen, default_bucket_key=top,
                                             context=mx.cpu())
        self.module.bind([("data", (top, 1))], [("softmax_label", (top, 1))],
                         for_training=False)
        args, aux = mx.model.load_params(self.prefix, epoch)
        self.module.set_params(args, aux)
        self.epoch = epoch

    def encode(self, text: str) -> list[int]:
        """Word ids of ``text`` (tokenised as the corpus was); an unknown word is an error."""
        words = tokenize(text)
        unknown = [w for w in words if w not in self.vocab]
        if unknown:
            raise RunFileError(f"not in the vocabulary of {self.prefix} ({len(self.vocab)} "
                               f"words): {', '.join(repr(w) for w in unknown[:5])}")
        if not words:
            raise RunFileError(f"no words in {text!r}")
        return [self.vocab[w] for w in words]

    def next_word_probs(self, ids: list[int]) -> np.ndarray:
        """(len(ids), vocabulary) probabilities: row t is the distribution of word t + 1."""
        bucket = next((b for b in self.buckets if b >= len(ids)), None)
        if bucket is None:
            raise RunFileError(f"{len(ids)} words: longer than the largest bucket "
                               f"({self.buckets[-1]})")
        column = np.full((bucket, 1), self.invalid, dtype=np.float32)
        column[:len(ids), 0] = ids
        batch = mx.io.DataBatch([mx.nd.array(column)], [mx.nd.zeros((bucket, 1))],
                                bucket_key=bucket,
                                provide_data=[mx.io.DataDesc("data", (bucket, 1))],
                                provide_label=[mx.io.DataDesc("softmax_label", (bucket, 1))])
        self.module.forward(batch, is_train=False)
        return self.module.get_outputs()[0].asnumpy()[:len(ids)]

    def score(self, text: str) -> dict:
        """Each word's probability after the ones before it, and the sentence's perplexity
        (the first word is given, not scored)."""
        ids = self.encode(text)
        if len(ids) < 2:
            raise RunFileError(f"{text!r}: scoring needs at least two words")
        probs = self.next_word_probs(ids)
        picked = [float(probs[t, ids[t + 1]]) for t in range(len(ids) - 1)]
        ppl = math.exp(-sum(math.log(max(p, 1e-30)) for p in picked) / len(picked))
        return {"words": [self.words[i] for i in ids], "probs": picked, "perplexity": ppl}

    def generate(self, text: str, length: int, temperature: float = 1.0,
                 seed: int = 0) -> list[str]:
        """``text``'s words followed by ``length`` sampled ones (padding never drawn; at
        the largest bucket generation stops)."""
        ids = self.encode(text)
        rng = np.random.RandomState(seed)
        for _ in range(length):
            if len(ids) >= self.buckets[-1]:
                break
            p = self.next_word_probs(ids)[-1].astype(np.float64)
            p[self.invalid] = 0.0
            p[[i for i in range(len(p)) if i not in self.words]] = 0.0
            if temperature <= 1e-6:
                ids.append(int(p.argmax()))
                continue
            p = np.exp(np.log(np.maximum(p, 1e-300)) / temperature) * (p > 0)
            ids.append(int(rng.choice(len(p), p=p / p.sum())))
        return [self.words[i] for i in ids]


def main(args) -> None:
    """``--score`` / ``--generate`` of the demo's command line."""
    model = LanguageModel(args.out, args.epoch)
    print(f"model: {model.prefix}-{model.epoch:04d} ({len(model.vocab)} words)")
    if args.score is not None:
        result = model.score(args.score)
        for word, p in zip(result["words"][1:], result["probs"]):
            print(f"  {word:>20s}  p={p:.4g}")
        print(f"perplexity {result['perplexity']:.2f}")
    if args.generate is not None:
        print(" ".join(model.generate(args.generate, args.length, args.temperature,
                                      args.seed)))
