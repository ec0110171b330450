"""Synthetic, learnable data files in the formats and places MXNet's example scripts look for.

Each generator writes the real file formats (MNIST idx-ubyte, plain or gzipped; RecordIO ``.rec``
of JPEGs with an ``.idx``), so an unchanged script finds its data and skips its download. The
classes are drawn as simple patterns plus noise, so a small network learns them in an epoch or two
without saturating at 100 % at once: the runner compares the accuracy both frameworks reach.

>>> import tempfile, numpy as np
>>> with tempfile.TemporaryDirectory() as d:
...     _ = write_mnist(Path(d), n_train=20, n_test=10)
...     read_idx(Path(d) / "t10k-labels-idx1-ubyte").shape
(10,)
"""
from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np

LABEL_NOISE = 0.04
MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
               "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def mnist_arrays(n: int, seed: int, template_seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """``n`` 28x28 uint8 images and their labels: each class is a fixed random stroke pattern,
    shifted by up to 1 pixel, with 4 % of the pixels flipped and random ink intensity; a
    :data:`LABEL_NOISE` share of the labels is random."""
    templates = np.zeros((10, 32, 32), dtype=bool)
    trng = np.random.default_rng(template_seed)
    for c in range(10):  # a few random horizontal/vertical strokes per class
        for _ in range(12):
            r, s, ln = trng.integers(2, 30), trng.integers(2, 14), trng.integers(8, 16)
            if trng.random() < 0.5:
                templates[c, r, s:s + ln] = True
                templates[c, min(r + 1, 31), s:s + ln] = True
            else:
                templates[c, s:s + ln, r] = True
                templates[c, s:s + ln, min(r + 1, 31)] = True
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n).astype(np.uint8)
    dy, dx = rng.integers(1, 4, n), rng.integers(1, 4, n)
    images = np.stack([templates[lab, y:y + 28, x:x + 28]
                       for lab, y, x in zip(labels, dy, dx)])
    images ^= rng.random(images.shape) < 0.04
    ink = rng.integers(120, 256, images.shape)
    # 4 % of the labels redrawn at random: no model can pass ~96.4 %, so the accuracy the two
    # frameworks reach stays comparable instead of both saturating at 100 %
    relabel = rng.random(n) < LABEL_NOISE
    labels[relabel] = rng.integers(0, 10, int(relabel.sum()))
    return (images * ink).astype(np.uint8), labels


def _idx_bytes(array: np.ndarray) -> bytes:
    magic = 0x800 | array.ndim
    return struct.pack(">I", magic) + struct.pack(f">{array.ndim}I", *array.shape) + \
        array.tobytes()


def write_mnist(folder: Path, n_train: int = 6000, n_test: int = 1000,
                gz: bool = False) -> list[str]:
    """The four MNIST idx-ubyte files (``.gz`` too when ``gz``) in ``folder``; their names."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for prefix, n, seed in (("train", n_train, 1), ("t10k", n_test, 2)):
        images, labels = mnist_arrays(n, seed)
        for kind, array in (("images-idx3", images), ("labels-idx1", labels)):
            name = f"{prefix}-{kind}-ubyte"
            raw = _idx_bytes(array)
            (folder / name).write_bytes(raw)
            written.append(name)
            if gz:
                with gzip.GzipFile(folder / (name + ".gz"), "wb", mtime=0) as f:
                    f.write(raw)
                written.append(name + ".gz")
    return written


def read_idx(path: Path) -> np.ndarray:
    """An idx-ubyte file as a uint8 array (to check what was written)."""
    raw = path.read_bytes()
    ndim = raw[3]
    shape = struct.unpack(f">{ndim}I", raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(shape)


# --- RecordIO of JPEGs (MXNet's .rec/.idx layout, written with OpenCV's encoder) ----------

_REC_MAGIC = 0xCED7230A
_IR_FORMAT = "IfQQ"  # flag, label, id, id2: MXNet's IRHeader


def color_arrays(n: int, seed: int, size: int = 32, classes: int = 10) -> tuple:
    """``n`` HxWx3 uint8 images: class ``c`` is a bar at one of 5 orientations/positions in one
    of 2 colours on a noisy background."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, n)
    images = rng.integers(0, 90, (n, size, size, 3)).astype(np.uint8)
    colours = np.array([[230, 60, 40], [40, 90, 230]], dtype=np.uint8)
    for img, lab in zip(images, labels):
        pos, col = lab % 5, lab // 5
        off = int(rng.integers(-2, 3))
        lo = max(0, 3 + pos * 6 + off)
        if pos % 2 == 0:
            img[lo:lo + 5, :] = colours[col % 2]
        else:
            img[:, lo:lo + 5] = colours[col % 2]
    relabel = rng.random(n) < LABEL_NOISE
    labels[relabel] = rng.integers(0, classes, int(relabel.sum()))
    return images, labels


def write_rec(rec_path: Path, images: np.ndarray, labels: np.ndarray, quality: int = 95) -> None:
    """``rec_path`` (records of IRHeader + JPEG, in RGB order as im2rec stores after its BGR
    read) and the matching ``.idx`` (``key\\toffset`` lines)."""
    import cv2
    rec_path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    with open(rec_path, "wb") as f:
        for i, (img, lab) in enumerate(zip(images, labels)):
            ok, jpg = cv2.imencode(".jpg", img[:, :, ::-1], [cv2.IMWRITE_JPEG_QUALITY, quality])
            assert ok, "OpenCV could not encode a JPEG"
            payload = struct.pack(_IR_FORMAT, 0, float(lab), i, 0) + jpg.tobytes()
            lines.append(f"{i}\t{f.tell()}\n")
            f.write(struct.pack("<II", _REC_MAGIC, len(payload)))
            f.write(payload + b"\0" * (-len(payload) % 4))
    rec_path.with_suffix(".idx").write_text("".join(lines))


def write_cifar_like(folder: Path, n_train: int = 1000, n_val: int = 300) -> list[str]:
    """``cifar10_train.rec``/``cifar10_val.rec`` (+ ``.idx``) of 32x32 JPEGs in ``folder``."""
    names = []
    for name, n, seed in (("cifar10_train.rec", n_train, 3), ("cifar10_val.rec", n_val, 4)):
        write_rec(folder / name, *color_arrays(n, seed))
        names += [name, name[:-4] + ".idx"]
    return names
