"""The RecordIO image pipeline behind ``mx.io.ImageRecordIter`` (MXNet's ``ImageRecordIter2``).

Three parts, as in MXNet's C++ parser:

- :class:`RecordSource`: the records of one part of a ``.rec`` file (``num_parts`` and
  ``part_index`` split it by bytes, as dmlc's RecordIO splitter, or with an ``.idx`` file by
  record count, as its indexed splitter), read with ``os.pread`` so worker threads share it;
- :class:`BatchPlan`: which records make each batch: passes over the part (a new
  ``std::shuffle`` permutation per pass with ``shuffle``, from ``std::mt19937(111 + seed)``
  as MXNet's splitter draws it), ``round_batch`` completing the last batch from the next pass;
- :class:`ImageRecordLoader`: decoding (OpenCV), augmenting (``image_aug.py``) and
  normalising in ``preprocess_threads`` worker threads (OpenCV and numpy release the GIL),
  ``prefetch_buffer`` batches ahead, in record order.
"""
from __future__ import annotations

import collections
import dataclasses
import os
import struct
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from ..base import MXNetError
from ..ndarray import NDArray
from ..recordio import MAGIC, RecordIOError
from .image_aug import AugParams, _inter, _resize, augment, decode, parse_params, to_output
from .image_det_aug import DetAugParams, DetLabel, augment_det, parse_det_params
from .native import MXDataIter, NativeIter, _MT19937Draws

__all__ = ["BatchPlan", "ImageRecordInt8Iter", "ImageRecordIter", "ImageRecordLoader",
           "ImageRecordUInt8Iter", "RecordSource", "read_label_map"]

_RAND_MAGIC = 111  # dmlc's splitters and MXNet's parser seed std::mt19937 with 111 + seed


class RecordSource:
    """The records of part ``part_index`` of ``num_parts`` of ``path`` (offsets of their
    heads), readable from any thread."""

    def __init__(self, path: str, idx_path: str = "", num_parts: int = 1, part_index: int = 0):
        if not 0 <= part_index < num_parts:
            raise MXNetError(f"ImageRecordIter: part_index={part_index} is not in "
                             f"[0, num_parts={num_parts})")
        self.path = path
        try:
            self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        except OSError as err:
            raise MXNetError(f'ImageRecordIter: cannot open path_imgrec "{path}": '
                             f"{err.strerror}") from err
        self.size = os.fstat(self._fd).st_size
        if idx_path:
            offsets = self._index_offsets(idx_path)
            step = (len(offsets) + num_parts - 1) // num_parts
            self.offsets = offsets[step * part_index:step * (part_index + 1)]
        else:
            step = (self.size + num_parts - 1) // num_parts
            step = (step + 3) // 4 * 4
            begin, end = min(step * part_index, self.size), min(step * (part_index + 1), self.size)
            self.offsets = [o for o in self._scan_heads() if begin <= o < end]

    def __del__(self):
        if getattr(self, "_fd", None) is not None:
            os.close(self._fd)
            self._fd = None

    def __len__(self) -> int:
        return len(self.offsets)

    def _index_offsets(self, idx_path: str) -> list[int]:
        try:
            with open(idx_path) as f:
                lines = f.read().split("\n")
        except OSError as err:
            raise MXNetError(f'ImageRecordIter: cannot open path_imgidx "{idx_path}": '
                             f"{err.strerror}") from err
        offsets = []
        for number, line in enumerate(lines, 1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) < 2 or not fields[1].isdigit() or int(fields[1]) >= self.size:
                raise RecordIOError(f"{idx_path}: line {number} is not 'key<TAB>offset' with "
                                    f"an offset inside {self.path}: {line!r}")
            offsets.append(int(fields[1]))
        return sorted(offsets)

    def _scan_heads(self) -> list[int]:
        """Offsets of the first parts of all records (headers only are read)."""
        heads, offset = [], 0
        while offset < self.size:
            flag, length = self._header(offset)
            if flag in (0, 1):
                heads.append(offset)
            if offset + 8 + length > self.size:
                raise RecordIOError(f"{self.path}: record at byte offset {offset} is "
                                    f"truncated ({length} bytes announced, "
                                    f"{self.size - offset - 8} in the file)")
            offset += 8 + length + (-length % 4)
        return heads

    def _header(self, offset: int) -> tuple[int, int]:
        head = os.pread(self._fd, 8, offset)
        if len(head) != 8:
            raise RecordIOError(f"{self.path}: truncated record header at byte offset {offset}")
        magic, lrec = struct.unpack("<II", head)
        if magic != MAGIC:
            raise RecordIOError(f"{self.path}: invalid RecordIO magic 0x{magic:08x} at byte "
                                f"offset {offset}")
        return lrec >> 29, lrec & ((1 << 29) - 1)

    def read(self, i: int) -> bytes:
        """The payload of record ``i`` of the part (multi-part records joined)."""
        offset, parts = self.offsets[i], []
        while True:
            flag, length = self._header(offset)
            if (flag in (0, 1)) == bool(parts):
                raise RecordIOError(f"{self.path}: invalid part flag {flag} at byte offset "
                                    f"{offset}")
            data = os.pread(self._fd, length, offset + 8)
            if len(data) != length:
                raise RecordIOError(f"{self.path}: record at byte offset {offset} is "
                                    f"truncated ({length} bytes announced)")
            parts.append(data)
            if flag in (0, 3):
                return struct.pack("<I", MAGIC).join(parts)
            offset += 8 + length + (-length % 4)


class BatchPlan:
    """Record numbers and pad of each batch, with MXNet's pass, shuffle and round_batch
    logic (``next`` returns None at the end of a pass)."""

    def __init__(self, n: int, batch_size: int, round_batch: bool, shuffle: bool, seed: int,
                 batch_loader: bool = False):
        self.batch_loader, self._last = batch_loader, []
        if n == 0:
            raise MXNetError("ImageRecordIter: no records in this part of the file")
        self.n, self.batch_size, self.round_batch = n, batch_size, round_batch
        self._draws = _MT19937Draws(_RAND_MAGIC + seed) if shuffle else None
        self.passes = 0
        self._order = self._new_pass()
        self._pos, self._overflow = 0, False

    def _new_pass(self) -> list[int]:
        self.passes += 1
        order = list(range(self.n))
        if self._draws is not None:  # std::shuffle, as libstdc++ runs it
            for i in range(1, self.n):
                j = self._draws.uniform(i)
                order[i], order[j] = order[j], order[i]
        return order

    def before_first(self) -> None:
        if self.round_batch and self._overflow:
            self._overflow = False  # the overflow batch already began the next pass
        else:
            self._order, self._pos = self._new_pass(), 0

    def next(self):
        """``(records, pad, pass number)`` of the next batch, or None."""
        if self._overflow:
            return None
        ids = self._order[self._pos:self._pos + self.batch_size]
        self._pos += len(ids)
        missing = self.batch_size - len(ids)
        if not ids:
            return None
        if missing == 0:
            self._last = ids
            return ids, 0, self.passes
        if not self.round_batch:
            if self.batch_loader:  # MXNet's BatchLoader: the tail keeps the last batch's rows
                return ids + self._last[len(ids):], missing, self.passes
            return ids, 0, self.passes  # ImageRecordIter2 says pad 0; the tail is left zero
        self._order, self._pos = self._new_pass(), missing
        if missing > self.n:
            raise MXNetError("ImageRecordIter: number of input images must be bigger than "
                             f"the batch size ({self.n} images, batch_size={self.batch_size})")
        self._overflow = True
        return ids + self._order[:missing], missing, self.passes


def read_label_map(path: str, label_width: int) -> dict[int, np.ndarray]:
    """``image index -> labels`` of an image list (``index<TAB>labels...<TAB>path``)."""
    labels = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            fields = line.strip().split("\t")
            if fields == [""]:
                continue
            try:
                values = [float(x) for x in fields[1:1 + label_width]]
                labels[int(fields[0])] = np.asarray(values, np.float32)
            except ValueError as err:
                raise MXNetError(f"{path}: line {number}: cannot parse {line!r}") from err
            if len(values) != label_width:
                raise MXNetError(f"{path}: line {number} has {len(values)} labels, "
                                 f"label_width is {label_width}")
    return labels


class ImageRecordLoader(NativeIter):
    """Batches of decoded, augmented, normalised images from a RecordIO file."""

    def __init__(self, params: AugParams, source: RecordSource, plan: BatchPlan,
                 label_map: dict | None = None):
        self.p, self.source, self.plan, self.label_map = params, source, plan, label_map
        self._pool = ThreadPoolExecutor(max(1, params.preprocess_threads),
                                        thread_name_prefix="ImageRecordIter")
        self._pending: collections.deque = collections.deque()
        self._end = False
        self._current = None

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _submit(self) -> None:
        while not self._end and len(self._pending) < max(1, self.p.prefetch_buffer):
            planned = self.plan.next()
            if planned is None:
                self._end = True
                return
            ids, pad, epoch = planned
            out = self._new_batch()
            workers = max(1, min(self.p.preprocess_threads, len(ids)))
            bounds = np.linspace(0, len(ids), workers + 1).astype(int)
            futures = [self._pool.submit(self._fill, ids, lo, hi, out, epoch)
                       for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
            self._pending.append((futures, out, pad))

    def _new_batch(self) -> tuple:
        """Zeroed (data, label, index) arrays of one batch."""
        p = self.p
        return (np.zeros((p.batch_size,) + tuple(p.data_shape), p.np_dtype),
                np.zeros((p.batch_size, p.label_width), np.float32),
                np.zeros(p.batch_size, np.uint64))

    def _fill(self, ids, lo: int, hi: int, out: tuple, epoch: int) -> None:
        p = self.p
        for k in range(lo, hi):
            rng = None
            if p.random:  # seed_aug: the same draws for a record in every pass, as MXNet's
                key = ([_RAND_MAGIC + p.seed_aug, ids[k]] if p.seed_aug is not None
                       else [p.seed, epoch, ids[k]])
                rng = np.random.default_rng([v & 0xFFFFFFFF for v in key])
            self._one(self.source.read(ids[k]), k, out, rng)

    def _one(self, buf: bytes, k: int, out: tuple, rng) -> None:
        """Decodes, augments and writes record ``buf`` as row ``k`` of the batch."""
        data, label, _ = out
        header, img = decode(buf, self.p, self.source.path)
        label[k] = self._label(header)
        img, mirror = augment(img, self.p, rng)
        to_output(img, self.p, mirror, data[k], rng)

    def _label(self, header) -> np.ndarray:
        if self.label_map is not None:
            if header.id not in self.label_map:
                raise MXNetError(f"ImageRecordIter: image index {header.id} is not in "
                                 f"path_imglist {self.p.path_imglist}")
            return self.label_map[header.id]
        values = np.atleast_1d(np.asarray(header.label, np.float32))
        if values.size != self.p.label_width:
            raise MXNetError(f"ImageRecordIter: record id={header.id} in {self.source.path} "
                             f"has {values.size} labels but label_width is "
                             f"{self.p.label_width}")
        return values

    def before_first(self) -> None:
        for futures, *_ in self._pending:
            for f in futures:
                f.cancel()
            for f in futures:
                if not f.cancelled():
                    f.exception()  # wait: the arrays are no longer read
        self._pending.clear()
        self._end = False
        self.plan.before_first()

    def next(self) -> bool:
        self._submit()
        if not self._pending:
            return False
        futures, out, pad = self._pending.popleft()
        for f in futures:
            f.result()
        self._current = out + (pad,)
        self._submit()
        return True

    def data(self) -> NDArray:
        return NDArray(torch.from_numpy(self._current[0]))

    def label(self) -> NDArray:
        label = self._current[1]
        return NDArray(torch.from_numpy(label[:, 0] if label.shape[1] == 1 else label))

    def index(self) -> np.ndarray:
        return self._current[2]  # MXNet's ImageRecordIter leaves it 0

    def pad(self) -> int:
        return self._current[3]


def _mean_image(p: AugParams, source: RecordSource) -> np.ndarray:
    """The mean image of ``p.mean_img`` (an ``nd.save`` file), computed over the part's
    images and saved there first when the file does not exist (as MXNet does)."""
    from .. import ndarray as nd
    if os.path.exists(p.mean_img):
        loaded = nd.load(p.mean_img)
        arrays = list(loaded.values()) if isinstance(loaded, dict) else loaded
        if len(arrays) != 1 or tuple(arrays[0].shape) != tuple(p.data_shape):
            raise MXNetError(f"ImageRecordIter: mean_img {p.mean_img} must hold one array of "
                             f"data_shape {tuple(p.data_shape)}")
        return arrays[0].asnumpy().astype(np.float32)
    plain = dataclasses.replace(p, mean_r=0.0, mean_g=0.0, mean_b=0.0, mean_a=0.0, std_r=1.0,
                                std_g=1.0, std_b=1.0, std_a=1.0, scale=1.0, dtype=None)
    total = np.zeros(tuple(p.data_shape), np.float64)
    one = np.zeros(tuple(p.data_shape), np.float32)
    for i in range(len(source)):
        _, img = decode(source.read(i), plain, source.path)
        img, mirror = augment(img, plain, np.random.default_rng([p.seed, i]))
        to_output(img, plain, mirror, one, None)
        total += one
    mean = (total / max(1, len(source))).astype(np.float32)
    nd.save(p.mean_img, {"mean_img": nd.array(mean)})
    return mean


def image_record_iter(name: str, kwargs: dict, **overrides) -> MXDataIter:
    """An ``MXDataIter`` over an :class:`ImageRecordLoader` built from MXNet's keywords."""
    p = parse_params(name, kwargs, **overrides)
    source = RecordSource(p.path_imgrec, p.path_imgidx, p.num_parts, p.part_index)
    if p.mean_img and p.np_dtype != np.uint8:
        p.mean_image = _mean_image(p, source)
    label_map = read_label_map(p.path_imglist, p.label_width) if p.path_imglist else None
    plan = BatchPlan(len(source), p.batch_size, p.round_batch,
                     p.shuffle, p.seed)
    front = {k: kwargs[k] for k in ("data_name", "label_name") if k in kwargs}
    return MXDataIter(ImageRecordLoader(p, source, plan, label_map), **front)


def ImageRecordIter(**kwargs) -> MXDataIter:  # MXNet's name
    """Iterate over image RecordIO files (MXNet 1.9.1's ``mx.io.ImageRecordIter``).

    Each record (``mx.recordio.pack_img``/``im2rec`` format) is decoded with OpenCV,
    augmented by MXNet's default augmenter (``resize``, ``rand_crop``, ``rand_mirror``,
    ``max_rotate_angle``, ``max_aspect_ratio``, ``min/max_random_scale``, ``random_h/s/l``,
    ``pad``, ``fill_value``, ``inter_method``, ``min/max_crop_size``,
    ``random_resized_crop``, ``brightness``/``contrast``/``saturation``, ``pca_noise``...),
    cropped to ``data_shape`` (center crop unless ``rand_crop``) and normalised as
    ``(pixel - mean) * scale / std`` (``mean_r/g/b/a``, ``std_r/g/b/a``, or ``mean_img``),
    RGB channel order, in ``preprocess_threads`` worker threads with ``prefetch_buffer``
    batches ahead. Batches are ``(batch_size,) + data_shape`` (``dtype`` float32, uint8 or
    int8) with labels ``(batch_size,)`` (``(batch_size, label_width)`` for wider labels,
    from the records or ``path_imglist``). ``round_batch`` completes a short last batch from
    the next pass (``pad`` counts those rows); ``shuffle`` draws a new order every pass
    (MXNet's order for a given ``seed``); ``num_parts``/``part_index`` read one part.

    Without random augmentation the values equal MXNet's exactly in the tests' fixtures
    (JPEG and PNG decode, linear/area resize, crops, mean/std/scale, mirror, uint8/int8,
    batch order, ``round_batch``/``pad``, ``shuffle`` with an ``.idx``, parts, padding),
    except bicubic resizing (``inter_method=2``) and the affine warp (``rotate``...), where
    OpenCV 4 differs from the OpenCV 3 MXNet bundles by at most 1 on a few pixels.
    Random augmentations draw from numpy, seeded by ``seed`` (or ``seed_aug``), the pass
    and the record, not from MXNet's per-thread engines: same distributions, other draws.
    ``shuffle`` without ``path_imgidx`` permutes the whole part each pass (MXNet: each
    64 MB chunk; the same for smaller files); ``shuffle_chunk_size`` is ignored.

    >>> import os, tempfile, numpy as np
    >>> from symgraph import recordio
    >>> path = os.path.join(tempfile.mkdtemp(), 'a.rec')
    >>> w = recordio.MXRecordIO(path, 'w')
    >>> for i in range(3):
    ...     img = np.full((6, 8, 3), 10 * i, np.uint8)
    ...     w.write(recordio.pack_img((0, float(i), i, 0), img, 3, img_fmt='.png'))
    >>> w.close()
    >>> it = ImageRecordIter(path_imgrec=path, data_shape=(3, 4, 4), batch_size=2,
    ...                      mean_r=5, preprocess_threads=1)
    >>> [(b.data[0].shape, b.label[0].asnumpy().tolist(), b.pad) for b in it]
    [((2, 3, 4, 4), [0.0, 1.0], 0), ((2, 3, 4, 4), [2.0, 0.0], 1)]
    >>> it.reset(); float(it.next().data[0].asnumpy()[1, 0, 0, 0])  # 10 * 2 - mean_r
    15.0
    """
    return image_record_iter("ImageRecordIter", kwargs)


def ImageRecordUInt8Iter(**kwargs) -> MXDataIter:  # MXNet's name
    """``ImageRecordIter`` with uint8 pixels (deprecated in MXNet for ``dtype='uint8'``).

    >>> ImageRecordUInt8Iter.__name__
    'ImageRecordUInt8Iter'
    """
    return image_record_iter("ImageRecordUInt8Iter", kwargs, dtype="uint8")


def ImageRecordInt8Iter(**kwargs) -> MXDataIter:  # MXNet's name
    """``ImageRecordIter`` with int8 pixels ``saturate(pixel - round(mean))`` (deprecated in
    MXNet for ``dtype='int8'``).

    >>> ImageRecordInt8Iter.__name__
    'ImageRecordInt8Iter'
    """
    return image_record_iter("ImageRecordInt8Iter", kwargs, dtype="int8")


class DetRecordLoader(ImageRecordLoader):
    """Detection records: images augmented by ``det_aug_default`` and resized by
    ``resize_mode``, labels ``[channels, height, width, n, label..., pad...]`` (MXNet's)."""

    def __init__(self, params: AugParams, det: DetAugParams, source: RecordSource,
                 plan: BatchPlan):
        super().__init__(params, source, plan)
        self.det = det

    def _new_batch(self) -> tuple:
        p = self.p
        return (np.zeros((p.batch_size,) + tuple(p.data_shape), np.float32),
                np.full((p.batch_size, p.label_pad_width + 4), p.label_pad_value, np.float32),
                np.zeros(p.batch_size, np.uint64))

    def _fill(self, ids, lo: int, hi: int, out: tuple, epoch: int) -> None:
        for k in range(lo, hi):
            rng = (np.random.default_rng([_RAND_MAGIC, self.p.seed & 0xFFFFFFFF, epoch, ids[k]])
                   if self.det.random or self.p.inter_method == 10 else None)
            self._one(self.source.read(ids[k]), k, out, rng)

    def _one(self, buf: bytes, k: int, out: tuple, rng) -> None:
        data, label, index = out
        p = self.p
        header, img = decode(buf, p, self.source.path)
        raw = np.atleast_1d(np.asarray(header.label, np.float32))
        if p.label_width > 0 and raw.size != p.label_width:
            raise MXNetError(f"ImageDetRecordIter: record id={header.id} has {raw.size} "
                             f"labels but label_width is {p.label_width}")
        det_label = DetLabel(raw, f"record id={header.id} in {self.source.path}")
        img = _resize_short(img, p, rng)
        img = _resize_mode(augment_det(img, self.det, det_label, rng), p, rng)
        objects = det_label.to_array()
        c, h, w = img.shape[2], img.shape[0], img.shape[1]
        index[k] = header.id
        label[k, :4] = (c, h, w, objects.size)
        label[k, 4:4 + objects.size] = objects
        chw = img.transpose(2, 0, 1)
        chw = chw[[2, 1, 0] + list(range(3, c))] if c >= 3 else chw
        target = data[k, :, :h, :w]
        target[...] = chw
        means = np.array([p.mean_r, p.mean_g, p.mean_b, p.mean_a][:c], np.float32)
        if (means > 0).any():
            target -= means.reshape(c, 1, 1)
        stds = np.array([p.std_r, p.std_g, p.std_b, p.std_a][:c], np.float32)
        for ch in range(c):
            if stds[ch] > 0:
                target[ch] /= stds[ch]
        target *= np.float32(p.scale)


def _resize_short(img: np.ndarray, p: AugParams, rng) -> np.ndarray:
    """The shorter edge to ``p.resize`` (when set), as both MXNet augmenters start."""
    if p.resize == -1:
        return img
    h, w = img.shape[:2]
    nh, nw = (p.resize * h // w, p.resize) if h > w else (p.resize, p.resize * w // h)
    return _resize(img, nw, nh, _inter(p, w, h, nw, nh, rng))


def _resize_mode(img: np.ndarray, p: AugParams, rng) -> np.ndarray:
    """'force' to ``data_shape``; 'shrink' to fit inside it if larger; 'fit' to fit it."""
    h, w = img.shape[:2]
    out_h, out_w = p.data_shape[1:]
    if p.resize_mode == "force":
        return _resize(img, out_w, out_h, _inter(p, w, h, out_w, out_h, rng))
    ratio = min(np.float32(out_h) / np.float32(h), np.float32(out_w) / np.float32(w))
    if p.resize_mode == "fit" or h > out_h or w > out_w:
        nh, nw = int(ratio * np.float32(h)), int(ratio * np.float32(w))
        return _resize(img, nw, nh, _inter(p, w, h, nw, nh, rng))
    return img


def _max_label_width(source: RecordSource) -> int:
    from ..recordio import unpack
    width = 0
    for i in range(len(source)):
        header, _ = unpack(source.read(i)[:4096])
        width = max(width, int(header.flag) if header.flag > 0 else 1)
    return width


def ImageDetRecordIter(**kwargs) -> MXDataIter:  # MXNet's name
    """Iterate over detection RecordIO files (MXNet 1.9.1's ``mx.io.ImageDetRecordIter``).

    Records hold an array label ``[header_width, object_width, extra..., objects...]``
    (boxes normalised to [0, 1]). Images are resized (``resize`` of the shorter edge, then
    ``resize_mode`` 'force' to ``data_shape``, 'shrink' only if larger, 'fit' keeping the
    aspect ratio; a smaller image fills the top left of its batch row), mirrored with
    ``rand_mirror_prob`` (boxes flipped), normalised (``mean_r/g/b`` when positive,
    ``std_r/g/b`` when positive, ``scale``). Labels are ``(batch_size, label_pad_width +
    4)``: channels, height, width, label length, the label, then ``label_pad_value``;
    ``label_pad_width`` defaults to the widest label in the file. ``index`` holds the
    records' ids. MXNet's random augmenters are there too (``image_det_aug.py``): HLS and
    contrast noise (``random_hue_prob``...), random padding (``rand_pad_prob``,
    ``max_pad_scale``, ``fill_value``) and crops from ``num_crop_sampler`` samplers
    (``min/max_crop_scales``, ``..._aspect_ratios``, ``..._overlaps``, ``..._coverages``,
    ``crop_emit_mode``, ``max_crop_trials``), boxes following the image; objects with
    empty boxes are dropped, as MXNet drops them.

    >>> import os, tempfile, numpy as np
    >>> from symgraph import recordio
    >>> path = os.path.join(tempfile.mkdtemp(), 'det.rec')
    >>> w = recordio.MXRecordIO(path, 'w')
    >>> label = [2, 5, 0, 0.25, 0.5, 0.75, 1.0]
    >>> img = np.zeros((8, 8, 3), np.uint8)
    >>> w.write(recordio.pack_img((0, label, 7, 0), img, 3, img_fmt='.png'))
    >>> w.close()
    >>> b = ImageDetRecordIter(path_imgrec=path, data_shape=(3, 4, 4), batch_size=1).next()
    >>> b.label[0].asnumpy().tolist(), b.index.tolist()
    ([[3.0, 4.0, 4.0, 7.0, 2.0, 5.0, 0.0, 0.25, 0.5, 0.75, 1.0]], [7])
    """
    p = parse_params("ImageDetRecordIter", kwargs, label_width=int(kwargs.get("label_width", -1)))
    det = parse_det_params(kwargs)
    if p.resize_mode not in ("force", "shrink", "fit"):
        raise MXNetError(f"ImageDetRecordIter: resize_mode must be force, shrink or fit, "
                         f"got {p.resize_mode}")
    source = RecordSource(p.path_imgrec, "", p.num_parts, p.part_index)
    width = _max_label_width(source)
    if p.label_pad_width and width > p.label_pad_width:
        raise MXNetError(f"ImageDetRecordIter: label_pad_width {p.label_pad_width} smaller "
                         f"than estimated width {width}")
    p.label_pad_width = max(p.label_pad_width, width)
    plan = BatchPlan(len(source), p.batch_size, p.round_batch, p.shuffle, p.seed,
                     batch_loader=True)
    front = {k: kwargs[k] for k in ("data_name", "label_name") if k in kwargs}
    return MXDataIter(DetRecordLoader(p, det, source, plan), **front)
