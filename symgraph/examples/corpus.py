"""Text corpora for the language-model demo: a file with one sentence per line, or, by
default, sentences built from the Python language reference that ships with every CPython
installation (``pydoc_data.topics``), so nothing is downloaded.
"""
from __future__ import annotations

import re

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")


def tokenize(line: str) -> list[str]:
    """Lower-cased words of ``line`` (letters and inner apostrophes; the rest is dropped).

    >>> tokenize("The `for` statement: iterate over items, e.g. x's.")
    ['the', 'for', 'statement', 'iterate', 'over', 'items', 'e', 'g', "x's"]
    """
    return _WORD.findall(line.lower())


def read_corpus(path: str) -> list[list[str]]:
    """Tokenised sentences of a text file, one sentence per line; empty lines are skipped."""
    with open(path, encoding="utf-8") as f:
        return [words for words in (tokenize(line) for line in f) if words]


def python_reference_corpus(min_len: int = 3, max_len: int = 60) -> list[list[str]]:
    """Sentences of the Python language reference (``pydoc_data.topics``), tokenised, in a
    fixed order; sentences shorter than ``min_len`` or longer than ``max_len`` words are
    dropped.

    >>> sents = python_reference_corpus()
    >>> len(sents) > 2000 and all(3 <= len(s) <= 60 for s in sents)
    True
    """
    from pydoc_data.topics import topics
    out = []
    for name in sorted(topics):
        for chunk in _SENTENCE_END.split(topics[name]):
            words = tokenize(chunk)
            if min_len <= len(words) <= max_len:
                out.append(words)
    return out
