"""``mx.image.ImageIter``: batches of decoded, augmented images from a RecordIO file or an
image list, with MXNet 1.9.1's sharding, shuffling and last-batch handling.

>>> import os, tempfile, cv2, numpy as np, symgraph as mx
>>> root = tempfile.mkdtemp()
>>> for i in range(3):
...     _ = cv2.imwrite(os.path.join(root, f'{i}.png'), np.full((6, 8, 3), i * 50, np.uint8))
>>> it = mx.image.ImageIter(2, (3, 4, 4), imglist=[[i, f'{i}.png'] for i in range(3)],
...                         path_root=root)
>>> [(b.data[0].shape, b.pad) for b in it]
[((2, 3, 4, 4), 0), ((2, 3, 4, 4), 1)]
"""
from __future__ import annotations

import logging
import os
import random
from numbers import Number

import numpy as np

from .. import ndarray as nd
from .. import recordio
from ..base import MXNetError
from ..io.io import DataBatch, DataIter
from .augment import CreateAugmenter
from .functions import imdecode

__all__ = ["ImageIter"]

_LABEL_DTYPES = ("int32", "float32", "int64", "float64")
_LAST_BATCH = ("pad", "discard", "roll_over")


def _label(values, dtype: str):
    """A label NDArray from list-file fields or numbers (strings parsed as numbers)."""
    return nd.array(np.asarray(values, dtype=np.float64).reshape(-1), dtype=dtype)


def read_list_file(path: str, dtype: str) -> tuple[dict, list]:
    """An MXNet ``.lst`` file (``index \\t label... \\t path`` per line) as {index: (label,
    path)} and the indices in file order."""
    imglist, keys = {}, []
    with open(path) as fin:
        for lineno, line in enumerate(fin, 1):
            fields = line.strip().split("\t")
            if len(fields) < 3:
                raise MXNetError(f"{path}:{lineno}: an image list line needs an index, at "
                                 f"least one label and a path separated by tabs, got {line!r}")
            try:
                key = int(fields[0])
                label = _label(fields[1:-1], dtype)
            except ValueError as err:
                raise MXNetError(f"{path}:{lineno}: bad index or label ({err})") from None
            imglist[key] = (label, fields[-1])
            keys.append(key)
    return imglist, keys


def list_to_dict(imglist: list, dtype: str) -> tuple[dict, list]:
    """A Python ``imglist`` ([label(s)..., path] entries) keyed "1", "2", ... as MXNet."""
    result, keys = {}, []
    for index, img in enumerate(imglist, 1):
        if len(img) > 2:
            label = _label(img[:-1], dtype)
        elif isinstance(img[0], Number):
            label = _label([img[0]], dtype)
        else:
            label = _label(img[0], dtype)
        result[str(index)] = (label, img[-1])
        keys.append(str(index))
    return result, keys


class ImageIter(DataIter):
    """Image data iterator over a ``.rec`` file (``path_imgrec``, with ``path_imgidx`` for
    random access), a list file (``path_imglist``) or a Python ``imglist``; extra keyword
    arguments go to :func:`CreateAugmenter` when ``aug_list`` is None. Batches are
    (N, C, H, W) float32; ``last_batch_handle`` is 'pad', 'discard' or 'roll_over'."""

    def __init__(self, batch_size, data_shape, label_width=1, path_imgrec=None,
                 path_imglist=None, path_root=None, path_imgidx=None, shuffle=False,
                 part_index=0, num_parts=1, aug_list=None, imglist=None, data_name="data",
                 label_name="softmax_label", dtype="float32", last_batch_handle="pad",
                 **kwargs):
        super().__init__()
        if not (path_imgrec or path_imglist or isinstance(imglist, list)):
            raise ValueError("ImageIter needs path_imgrec, path_imglist or an imglist list")
        if dtype not in _LABEL_DTYPES:
            raise ValueError(dtype + " label not supported")
        if last_batch_handle not in _LAST_BATCH:
            raise ValueError(f"last_batch_handle must be one of {_LAST_BATCH}, got "
                             f"{last_batch_handle!r}")
        self._open_sources(path_imgrec, path_imgidx, path_imglist, imglist, dtype)
        self.path_root = path_root
        self.check_data_shape(data_shape)
        self.provide_data = [(data_name, (batch_size,) + tuple(data_shape))]
        label_shape = (batch_size, label_width) if label_width > 1 else (batch_size,)
        self.provide_label = [(label_name, label_shape)]
        self.batch_size, self.data_shape = batch_size, tuple(data_shape)
        self.label_width, self.shuffle = label_width, shuffle
        self._select(shuffle, path_imgidx, part_index, num_parts)
        self.auglist = CreateAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self.cur = 0
        self._allow_read = True
        self.last_batch_handle = last_batch_handle
        self.num_image = len(self.seq) if self.seq is not None else None
        self._cache_data = self._cache_label = self._cache_idx = None
        self.reset()

    def _open_sources(self, path_imgrec, path_imgidx, path_imglist, imglist, dtype) -> None:
        name = type(self).__name__
        self.imgrec = self.imgidx = None
        if path_imgrec:
            logging.info("%s: loading recordio %s...", name, path_imgrec)
            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
                self.imgidx = list(self.imgrec.keys)
            else:
                self.imgrec = recordio.MXRecordIO(path_imgrec, "r")
        self.imglist, self._imgkeys = None, None
        if path_imglist:
            logging.info("%s: loading image list %s...", name, path_imglist)
            self.imglist, self._imgkeys = read_list_file(path_imglist, dtype)
        elif isinstance(imglist, list):
            logging.info("%s: loading image list...", name)
            self.imglist, self._imgkeys = list_to_dict(imglist, dtype)

    def _select(self, shuffle, path_imgidx, part_index, num_parts) -> None:
        """The sample order (None: the .rec file read sequentially) and this part of it."""
        if self.imgrec is None:
            self.seq = self._imgkeys
        elif shuffle or num_parts > 1 or path_imgidx:
            if self.imgidx is None:
                raise ValueError("shuffle and num_parts > 1 need path_imgidx with a .rec file")
            self.seq = self.imgidx
        else:
            self.seq = None
        if num_parts > 1:
            if not 0 <= part_index < num_parts:
                raise ValueError(f"part_index {part_index} must be in [0, {num_parts})")
            per_part = len(self.seq) // num_parts
            self.seq = self.seq[part_index * per_part:(part_index + 1) * per_part]

    def reset(self):
        """Rewind (reshuffling if asked); with roll_over the cached samples are kept."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.last_batch_handle != "roll_over" or self._cache_data is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur = 0
            self._allow_read = True

    def hard_reset(self):
        """Rewind and drop any rolled-over samples."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.imgrec is not None:
            self.imgrec.reset()
        self.cur = 0
        self._allow_read = True
        self._cache_data = self._cache_label = self._cache_idx = None

    def next_sample(self):
        """The next (label, encoded image bytes); raises StopIteration at the end."""
        if self._allow_read is False:
            raise StopIteration
        if self.seq is None:
            s = self.imgrec.read()
            if s is None:
                if self.last_batch_handle != "discard":
                    self.imgrec.reset()
                raise StopIteration
            header, img = recordio.unpack(s)
            return header.label, img
        if self.cur >= self.num_image:
            if self.last_batch_handle != "discard":
                self.cur = 0
            raise StopIteration
        idx = self.seq[self.cur]
        self.cur += 1
        if self.imgrec is not None:
            header, img = recordio.unpack(self.imgrec.read_idx(idx))
            return (header.label, img) if self.imglist is None else (self.imglist[idx][0], img)
        label, fname = self.imglist[idx]
        return label, self.read_image(fname)

    def _sample(self):
        """The next valid (image, label) after augmentation; StopIteration at the end."""
        while True:
            label, s = self.next_sample()
            data = self.imdecode(s)
            try:
                self.check_valid_image(data)
            except RuntimeError as e:
                logging.debug("Invalid image, skipping:  %s", e)
                continue
            return self.augmentation_transform(data), label

    def _new_label_batch(self):
        """The label array a new batch fills."""
        return nd.empty(self.provide_label[0][1])

    def _put_label(self, batch_label, i, label) -> None:
        """Store sample ``i``'s label in the batch."""
        batch_label[i] = label

    def _batchify(self, batch_data, batch_label, start=0):
        """Fill ``batch_data``/``batch_label`` from ``start``; the number filled."""
        i = start
        try:
            while i < self.batch_size:
                data, label = self._sample()
                batch_data[i] = self.postprocess_data(data)
                self._put_label(batch_label, i, label)
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def next(self):
        """The next DataBatch (``pad`` counts filler samples)."""
        c, h, w = self.data_shape
        if self._cache_data is not None:
            batch_data, batch_label, i = self._cache_data, self._cache_label, self._cache_idx
        else:
            batch_data = nd.zeros((self.batch_size, c, h, w))
            batch_label = self._new_label_batch()
            i = self._batchify(batch_data, batch_label)
        pad = self.batch_size - i
        if pad != 0:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._cache_data is None:
                self._cache_data, self._cache_label, self._cache_idx = batch_data, batch_label, i
                raise StopIteration
            self._batchify(batch_data, batch_label, i)
            if self.last_batch_handle == "pad":
                self._allow_read = False
            else:
                self._cache_data = self._cache_label = self._cache_idx = None
        return DataBatch([batch_data], [batch_label], pad=pad)

    def check_data_shape(self, data_shape):
        """MXNet's check: (3, H, W)."""
        if not len(data_shape) == 3:
            raise ValueError("data_shape should have length 3, with dimensions CxHxW")
        if not data_shape[0] == 3:
            raise ValueError("This iterator expects inputs to have 3 channels.")

    def check_valid_image(self, data):
        """Raise RuntimeError for an image to skip."""
        if len(data[0].shape) == 0:
            raise RuntimeError("Data shape is wrong")

    def _locate(self) -> str:
        if self.seq is not None:
            idx = self.seq[self.cur % self.num_image - 1]
        else:
            idx = self.cur % self.num_image - 1 if self.num_image else self.cur - 1
        if self.imglist is not None:
            return f"Broken image filename: {self.imglist[idx][1]}"
        return f"Broken image index: {idx}"

    def imdecode(self, s):
        """Decode one sample, naming it in the error (RuntimeError, as MXNet)."""
        try:
            return imdecode(s)
        except Exception as e:  # any decoder error names the sample
            raise RuntimeError(f"{self._locate()}, {e}") from e

    def read_image(self, fname):
        """The bytes of image ``fname`` under ``path_root``."""
        with open(os.path.join(self.path_root or "", fname), "rb") as fin:
            return fin.read()

    def augmentation_transform(self, data):
        """Apply ``auglist`` in order."""
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum):
        """(H, W, C) to (C, H, W)."""
        return nd.transpose(datum, axes=(2, 0, 1))
