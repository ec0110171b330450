"""Small datasets bundled with symgraph (no download needed)."""
from __future__ import annotations

import gzip
import os

import numpy as np

_DATA = os.path.join(os.path.dirname(__file__), "data")


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The 8x8 hand-written digits (1797 samples): float32 pixels scaled to [0, 1], labels.

    >>> x, y = load_digits()
    >>> x.shape, y.shape, int(y.max())
    ((1797, 64), (1797,), 9)
    """
    with gzip.open(os.path.join(_DATA, "digits.csv.gz"), "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.float32)
    return table[:, :-1] / 16.0, table[:, -1].astype(np.float32)
