"""Synthetic stand-ins for the files MXNet's unit tests download, written into the
harness's scratch ``data`` folder so the tests run offline (for symgraph and, with
``--baseline``, for MXNet 1.9.1 alike).

- ``data/test_images.tar.gz``: what ``http://data.mxnet.io/data/test_images.tar.gz`` holds
  (a ``test_images/`` folder of JPEGs), read by test_gluon_data.py and test_image.py;
- ``data/cifar/{train,test}.{rec,lst}``: the layout of ``cifar10.zip`` that
  ``mx.test_utils.get_cifar10`` unpacks (32x32 JPEG records, 5000 per class in train);
- ``data/news20.t``: what ``news20.t.bz2`` extracts to (LibSVM text, 3993 rows, labels 1 to
  20, feature indices below 62061), read by test_io.py's LibSVMIter test.

>>> import tempfile, pathlib, tarfile
>>> d = pathlib.Path(tempfile.mkdtemp()); write_test_images(d, n=3)
>>> sorted(tarfile.open(d / "data" / "test_images.tar.gz").getnames())[:2]
['test_images', 'test_images/img0.jpg']
"""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np


def _jpeg(image: np.ndarray, quality: int = 90) -> bytes:
    import cv2
    ok, buf = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    assert ok, "OpenCV could not encode a JPEG"
    return buf.tobytes()


def _picture(rng, height: int, width: int, label: int = 0) -> np.ndarray:
    """A smooth colour gradient with a class-dependent tint and some noise (BGR uint8)."""
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x / max(width - 1, 1), y / max(height - 1, 1),
                     np.full((height, width), (label % 10) / 9.0)], axis=-1) * 200
    noise = rng.integers(0, 40, (height, width, 3))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def write_test_images(folder: Path, n: int = 16, seed: int = 0) -> None:
    """``folder/data/test_images.tar.gz`` with ``n`` JPEGs of assorted sizes."""
    rng = np.random.default_rng(seed)
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    with tarfile.open(data / "test_images.tar.gz", "w:gz") as tar:
        top = tarfile.TarInfo("test_images")
        top.type = tarfile.DIRTYPE
        tar.addfile(top)
        for i in range(n):
            size = (int(rng.integers(200, 400)), int(rng.integers(200, 400)))
            body = _jpeg(_picture(rng, *size))
            info = tarfile.TarInfo(f"test_images/img{i}.jpg")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))


def write_cifar10(folder: Path, per_class: tuple[int, int] = (5000, 1000), seed: int = 0) -> None:
    """``folder/data/cifar/{train,test}.{rec,lst}`` as ``cifar10.zip`` lays them out."""
    from symgraph import recordio
    rng = np.random.default_rng(seed)
    cifar = folder / "data" / "cifar"
    cifar.mkdir(parents=True, exist_ok=True)
    for split, count in zip(("train", "test"), per_class):
        labels = np.repeat(np.arange(10), count)
        rng.shuffle(labels)
        writer = recordio.MXRecordIO(str(cifar / f"{split}.rec"), "w")
        lines = []
        for i, label in enumerate(labels):
            header = recordio.IRHeader(0, float(label), i, 0)
            writer.write(recordio.pack(header, _jpeg(_picture(rng, 32, 32, int(label)))))
            lines.append(f"{i}\t{float(label)}\t{label}/{i}.jpg\n")
        writer.close()
        (cifar / f"{split}.lst").write_text("".join(lines))


def write_news20(folder: Path, rows: int = 3993, features: int = 62061, seed: int = 0) -> None:
    """``folder/data/news20.t``: LibSVM rows with labels 1..20 and ascending feature indices."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(rows):
        nnz = int(rng.integers(5, 120))
        cols = np.sort(rng.choice(features, nnz, replace=False))
        vals = rng.random(nnz)
        label = int(rng.integers(1, 21))
        lines.append(f"{label} " + " ".join(f"{c}:{v:.6f}" for c, v in zip(cols, vals)) + "\n")
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "news20.t").write_text("".join(lines))
