"""The language-model demo's run file: the vocabulary and the model's settings, saved beside
the checkpoints as ``<prefix>.vocab.json`` (atomically, before the first epoch), checked on
``--resume`` and read back by ``--score`` and ``--generate``.

>>> import os, tempfile
>>> from types import SimpleNamespace
>>> prefix = os.path.join(tempfile.mkdtemp(), "lstm_lm")
>>> settings = SimpleNamespace(cell="fused", hidden=8, embed=4, layers=1, buckets="5,10")
>>> save_run(prefix, {"\\n": 0, "a": 1, "b": 2}, settings, corpus="toy.txt")
>>> run = load_run(prefix)
>>> run["vocab"]["b"], run["model"]["buckets"], run["corpus"]
(2, [5, 10], 'toy.txt')
"""
from __future__ import annotations

import json
import os

from ..fileio import atomic_write

FORMAT = "symgraph-lstm-lm"
VERSION = 1
MODEL_KEYS = ("cell", "hidden", "embed", "layers", "buckets")


class RunFileError(ValueError):
    """A run file that is missing or malformed, or a run that does not match it."""


def run_path(prefix: str) -> str:
    return f"{prefix}.vocab.json"


def model_settings(args) -> dict:
    """The settings that shape the model's parameters (buckets as a list of ints)."""
    settings = {k: getattr(args, k) for k in MODEL_KEYS}
    if isinstance(settings["buckets"], str):
        settings["buckets"] = [int(b) for b in settings["buckets"].split(",")]
    return settings


def save_run(prefix: str, vocab: dict, args, corpus: str) -> None:
    """Write the vocabulary (word -> id) and model settings for the checkpoints at
    ``prefix``."""
    doc = {"format": FORMAT, "version": VERSION, "corpus": corpus,
           "model": model_settings(args), "vocab": vocab}
    atomic_write(run_path(prefix), json.dumps(doc, ensure_ascii=False, indent=1).encode())


def load_run(prefix: str) -> dict:
    """The run file at ``prefix``, validated before it is used."""
    path = run_path(prefix)
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise RunFileError(f"{path}: no run file (vocabulary and model settings) for the "
                           f"checkpoints at {prefix}; train with --out "
                           f"{os.path.dirname(prefix) or '.'} first") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RunFileError(f"{path}: unreadable run file ({err})") from None
    _validate(doc, path)
    return doc


def _validate(doc, path: str) -> None:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
        raise RunFileError(f"{path}: not a {FORMAT} run file of version {VERSION}")
    vocab, model = doc.get("vocab"), doc.get("model")
    if not isinstance(vocab, dict) or not all(
            isinstance(w, str) and isinstance(i, int) and not isinstance(i, bool) and i >= 0
            for w, i in vocab.items()):
        raise RunFileError(f"{path}: 'vocab' must map words to non-negative integer ids")
    if len(set(vocab.values())) != len(vocab):
        raise RunFileError(f"{path}: 'vocab' gives two words the same id")
    if not isinstance(model, dict) or set(model) != set(MODEL_KEYS):
        raise RunFileError(f"{path}: 'model' must hold exactly {list(MODEL_KEYS)}")
    ints = ("hidden", "embed", "layers")
    if model["cell"] not in ("fused", "unfused") or not all(
            isinstance(model[k], int) and model[k] > 0 for k in ints) or not (
            isinstance(model["buckets"], list) and model["buckets"] and
            all(isinstance(b, int) and b > 0 for b in model["buckets"])):
        raise RunFileError(f"{path}: malformed model settings {model}")


def check_resume(saved: dict, vocab: dict, args, corpus: str, prefix: str) -> None:
    """Refuse to continue the checkpoints at ``prefix`` with another vocabulary or model."""
    path = run_path(prefix)
    if saved["vocab"] != vocab:
        missing = sorted(set(vocab) - set(saved["vocab"]))
        detail = (f"{len(missing)} of its words are not in the checkpoint's, e.g. "
                  f"{', '.join(repr(w) for w in missing[:5])}" if missing else
                  "the same words numbered differently, or fewer of them")
        raise RunFileError(
            f"--resume: the checkpoints at {prefix} were trained on a vocabulary of "
            f"{len(saved['vocab'])} words from {saved['corpus']} ({path}); this corpus "
            f"({corpus}) gives {len(vocab)} words: {detail}. Resume with the same --corpus, "
            f"or train into a new --out.")
    settings = model_settings(args)
    changed = {k: (saved["model"][k], settings[k]) for k in MODEL_KEYS
               if saved["model"][k] != settings[k]}
    if changed:
        raise RunFileError(
            f"--resume: the checkpoints at {prefix} were trained with other settings "
            f"({', '.join(f'--{k} {a} (now {b})' for k, (a, b) in changed.items())}; {path})")
