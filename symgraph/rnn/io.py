"""Sentence encoding and the bucketing iterator of MXNet 1.x's ``mx.rnn`` (language models).

>>> sents, vocab = encode_sentences([['a', 'b'], ['b', 'c', 'a']], invalid_label=0,
...                                 start_label=1)
>>> sents, sorted(vocab.items())
([[1, 2], [2, 3, 1]], [('\\n', 0), ('a', 1), ('b', 2), ('c', 3)])
"""
from __future__ import annotations

import bisect
import logging
import random

import numpy as np

from .. import ndarray
from ..io import DataBatch, DataDesc, DataIter

__all__ = ["encode_sentences", "BucketSentenceIter"]


def encode_sentences(sentences, vocab: dict | None = None, invalid_label: int = -1,
                     invalid_key: str = '\n', start_label: int = 0,
                     unknown_token: str | None = None):
    """Encode tokenized sentences as integer lists, building or extending a vocabulary.

    Parameters
    ----------
    sentences : list of list of str
    vocab : dict of str to int, optional
        Given vocabulary; unknown words then need ``unknown_token``.
    invalid_label : int, default -1
        Index of ``invalid_key`` (end of sentence) in a new vocabulary; never given to a word.
    invalid_key : str, default '\\n'
    start_label : int, default 0
        First index handed out to new words.
    unknown_token : str, optional
        Stands for words missing from a given vocabulary (each one moves it to a new index,
        as in MXNet).

    Returns
    -------
    (list of list of int, dict of str to int)

    Examples
    --------
    >>> encode_sentences([['x', 'y']], vocab={'x': 5})
    Traceback (most recent call last):
    ...
    AssertionError: Unknown token y
    """
    idx = start_label
    new_vocab = vocab is None
    if new_vocab:
        vocab = {invalid_key: invalid_label}
    res = []
    for sent in sentences:
        coded = []
        for word in sent:
            if word not in vocab:
                assert (new_vocab or unknown_token), f"Unknown token {word}"
                if idx == invalid_label:
                    idx += 1
                if unknown_token:
                    word = unknown_token
                vocab[word] = idx
                idx += 1
            coded.append(vocab[word])
        res.append(coded)
    return res, vocab


class BucketSentenceIter(DataIter):
    """Batches of equal-length (bucketed, ``invalid_label``-padded) sentences; the label is
    the sentence shifted left by one step.

    Parameters
    ----------
    sentences : list of list of int
        Encoded sentences.
    batch_size : int
    buckets : list of int, optional
        Bucket lengths (sorted in place); by default every length that at least
        ``batch_size`` sentences have. Longer sentences are discarded.
    invalid_label : int, default -1
    data_name : str, default 'data'
    label_name : str, default 'softmax_label'
    dtype : str, default 'float32'
    layout : str, default 'NT'
        'NT' (batch, time) or 'TN' (time, batch).
    num_parts, part_index : int, default 1, 0
        symgraph's addition for distributed training: keep part ``part_index`` of
        ``num_parts`` contiguous parts of every bucket's sentences (``n // num_parts``
        each), typically ``num_parts=kv.num_workers, part_index=kv.rank``. Every worker
        then has as many batches of each bucket, and workers seeded alike take the buckets
        in the same order, so a ``dist_sync`` step sees one bucket on every worker.

    Examples
    --------
    >>> it = BucketSentenceIter([[1, 2], [3, 4], [5, 6, 7]], 2, buckets=[2, 3])
    >>> it.provide_data
    [DataDesc[data,(2, 3),<class 'numpy.float32'>,NT]]
    >>> batch = next(it)
    >>> batch.bucket_key, batch.data[0].shape, batch.provide_label[0].shape
    (2, (2, 2), (2, 2))
    >>> sorted(batch.label[0].asnumpy().tolist())
    [[2.0, -1.0], [4.0, -1.0]]
    >>> BucketSentenceIter([[1, 2], [3, 4], [5, 6]], 1, num_parts=2, part_index=1).data
    [array([[3., 4.]], dtype=float32)]
    >>> BucketSentenceIter([[1, 2], [3, 4]], 2, layout='TC')
    Traceback (most recent call last):
    ...
    ValueError: Invalid layout TC: Must by NT (batch major) or TN (time major)
    """

    def __init__(self, sentences, batch_size: int, buckets=None, invalid_label: int = -1,
                 data_name: str = 'data', label_name: str = 'softmax_label',
                 dtype: str = 'float32', layout: str = 'NT', num_parts: int = 1,
                 part_index: int = 0):
        super().__init__()
        if not buckets:
            buckets = [i for i, j in enumerate(np.bincount([len(s) for s in sentences]))
                       if j >= batch_size]
        buckets.sort()
        self.data, buckets, ndiscard = _bucket(sentences, buckets, invalid_label, dtype)
        if num_parts != 1 or part_index != 0:
            self.data = [_part(buck, num_parts, part_index) for buck in self.data]
        if ndiscard:
            logging.warning("discarded %d sentences longer than the largest bucket.", ndiscard)
        self.batch_size = batch_size
        self.buckets = buckets
        self.data_name = data_name
        self.label_name = label_name
        self.dtype = dtype
        self.invalid_label = invalid_label
        self.nddata: list = []
        self.ndlabel: list = []
        self.major_axis = layout.find('N')
        self.layout = layout
        self.default_bucket_key = max(buckets)
        if self.major_axis not in (0, 1):  # as MXNet, only the position of 'N' is checked
            raise ValueError(f"Invalid layout {layout}: Must by NT (batch major) "
                             "or TN (time major)")
        self.provide_data = [self._desc(self.data_name, self.default_bucket_key)]
        self.provide_label = [self._desc(self.label_name, self.default_bucket_key)]
        self.idx = []
        for i, buck in enumerate(self.data):
            self.idx.extend([(i, j) for j in range(0, len(buck) - batch_size + 1, batch_size)])
        self.curr_idx = 0
        self.reset()

    def _desc(self, name: str, length: int) -> DataDesc:
        shape = (self.batch_size, length) if self.major_axis == 0 \
            else (length, self.batch_size)
        return DataDesc(name=name, shape=shape, layout=self.layout)

    def reset(self) -> None:
        """Back to the first batch: batch order and each bucket's rows shuffled (Python's
        ``random`` and numpy's global generator, as MXNet)."""
        self.curr_idx = 0
        random.shuffle(self.idx)
        for buck in self.data:
            np.random.shuffle(buck)
        self.nddata = []
        self.ndlabel = []
        for buck in self.data:
            label = np.empty_like(buck)
            label[:, :-1] = buck[:, 1:]
            label[:, -1] = self.invalid_label
            self.nddata.append(ndarray.array(buck, dtype=self.dtype))
            self.ndlabel.append(ndarray.array(label, dtype=self.dtype))

    def next(self) -> DataBatch:
        """The next batch (``bucket_key`` = its length); ``StopIteration`` at the end."""
        if self.curr_idx == len(self.idx):
            raise StopIteration
        i, j = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.nddata[i][j:j + self.batch_size]
        label = self.ndlabel[i][j:j + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        return DataBatch([data], [label], pad=0, bucket_key=self.buckets[i],
                         provide_data=[DataDesc(name=self.data_name, shape=data.shape,
                                                layout=self.layout)],
                         provide_label=[DataDesc(name=self.label_name, shape=label.shape,
                                                 layout=self.layout)])


def _part(rows: np.ndarray, num_parts: int, part_index: int) -> np.ndarray:
    """Part ``part_index`` of ``num_parts`` contiguous parts of ``len(rows) // num_parts``."""
    if not isinstance(num_parts, int) or num_parts < 1:
        raise ValueError(f"num_parts={num_parts!r} must be a positive integer")
    if not isinstance(part_index, int) or not 0 <= part_index < num_parts:
        raise ValueError(f"part_index={part_index!r} must be in [0, num_parts={num_parts})")
    size = len(rows) // num_parts
    return rows[part_index * size:(part_index + 1) * size]


def _bucket(sentences, buckets: list, invalid_label: int, dtype: str):
    """Sentences padded into their bucket (the smallest that fits); empty buckets dropped."""
    data: list = [[] for _ in buckets]
    used = [False] * len(buckets)
    ndiscard = 0
    for sent in sentences:
        buck = bisect.bisect_left(buckets, len(sent))
        if buck == len(buckets):
            ndiscard += 1
            continue
        used[buck] = True
        buff = np.full((buckets[buck],), invalid_label, dtype=dtype)
        buff[:len(sent)] = sent
        data[buck].append(buff)
    buckets = [b for b, u in zip(buckets, used) if u]
    return [np.asarray(d, dtype=dtype) for d in data if d], buckets, ndiscard
