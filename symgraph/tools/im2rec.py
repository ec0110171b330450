"""``python -m symgraph.tools.im2rec``: image lists and RecordIO files (MXNet's im2rec).

With ``--list``, the images under ``root`` are listed into ``<prefix>.lst`` (``index<TAB>
label<TAB>relative path`` lines; ``--recursive`` gives each folder its own label,
``--train-ratio``/``--test-ratio`` split into ``_train``/``_val``/``_test`` lists,
``--chunks`` into numbered chunks, shuffled as MXNet's tool does unless ``--no-shuffle``).
Without it, every ``<prefix>*.lst`` becomes a ``.rec``/``.idx`` pair: images read with
OpenCV (``--color``), optionally center-cropped to a square and resized (shorter edge to
``--resize``), encoded (``--encoding``, ``--quality``) or copied as they are
(``--pass-through``), with ``--num-thread`` worker processes; records keep the list's order.

>>> import tempfile, os, numpy as np, cv2
>>> root = tempfile.mkdtemp()
>>> _ = cv2.imwrite(os.path.join(root, 'a.png'), np.zeros((4, 6, 3), np.uint8))
>>> main([os.path.join(root, 'data'), root, '--list'])
>>> main([os.path.join(root, 'data'), root, '--encoding', '.png', '--quality', '3'])
... # doctest: +ELLIPSIS
Creating .rec file from .../data.lst in ...
>>> sorted(f for f in os.listdir(root) if f.startswith('data'))
['data.idx', 'data.lst', 'data.rec']
"""
from __future__ import annotations

import argparse
import logging
import os
import random
from concurrent.futures import ProcessPoolExecutor
from functools import partial

from .. import recordio
from ..fileio import atomic_write

__all__ = ["list_image", "main", "make_list", "read_list"]


def list_image(root: str, recursive: bool, exts):
    """``(index, relative path, label)`` of the images under ``root``, sorted by name."""
    exts = {e.lower() for e in exts}
    if not recursive:
        names = [f for f in sorted(os.listdir(root)) if os.path.isfile(os.path.join(root, f))
                 and os.path.splitext(f)[1].lower() in exts]
        return [(i, f, 0) for i, f in enumerate(names)]
    items, labels = [], {}
    for path, dirs, files in os.walk(root, followlinks=True):
        dirs.sort()
        for fname in sorted(files):
            full = os.path.join(path, fname)
            if os.path.isfile(full) and os.path.splitext(fname)[1].lower() in exts:
                label = labels.setdefault(path, len(labels))
                items.append((len(items), os.path.relpath(full, root), label))
    for path, label in labels.items():
        print(os.path.relpath(path, root), label)
    return items


def _write_list(path: str, items) -> None:
    # MXNet's layout: index, labels printed as "%f", path
    lines = [f"{item[0]:d}\t" + "".join(f"{v:f}\t" for v in item[2:]) + f"{item[1]}\n"
             for item in items]
    atomic_write(path, "".join(lines).encode())


def make_list(args) -> None:
    """Writes the ``.lst`` file(s) of ``args.root`` (split into chunks and train/val/test)."""
    items = list_image(args.root, args.recursive, args.exts)
    if args.shuffle:
        random.seed(100)  # MXNet's tool shuffles with this seed: same lists from same folders
        random.shuffle(items)
    size = (len(items) + args.chunks - 1) // args.chunks
    for c in range(args.chunks):
        chunk = items[c * size:(c + 1) * size]
        name = args.prefix + (f"_{c}" if args.chunks > 1 else "")
        n_train, n_test = int(size * args.train_ratio), int(size * args.test_ratio)
        if args.train_ratio == 1.0:
            _write_list(name + ".lst", chunk)
            continue
        if args.test_ratio:
            _write_list(name + "_test.lst", chunk[:n_test])
        if args.train_ratio + args.test_ratio < 1.0:
            _write_list(name + "_val.lst", chunk[n_test + n_train:])
        _write_list(name + "_train.lst", chunk[n_test:n_test + n_train])


def read_list(path: str):
    """The items ``[index, path, label...]`` of a ``.lst`` file (bad lines are reported)."""
    items = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            fields = [x.strip() for x in line.strip().split("\t")]
            if len(fields) < 3:
                logging.warning("%s:%d: a .lst line needs index, label(s) and path: %r",
                                path, number, line)
                continue
            try:
                items.append([int(fields[0]), fields[-1]] + [float(x) for x in fields[1:-1]])
            except ValueError as err:
                logging.warning("%s:%d: cannot parse %r: %s", path, number, line, err)
    return items


def _transform(img, args):
    import cv2
    h, w = img.shape[:2]
    if args.center_crop:
        if h > w:
            img = img[(h - w) // 2:(h - w) // 2 + w]
        else:
            img = img[:, (w - h) // 2:(w - h) // 2 + h]
        h, w = img.shape[:2]
    if args.resize:
        size = (args.resize, h * args.resize // w) if h > w else (w * args.resize // h, args.resize)
        img = cv2.resize(img, size)
    return img


def encode_item(item, args) -> bytes | None:
    """The packed record of one list item, or None (with a warning) if it cannot be read."""
    import cv2
    path = os.path.join(args.root, item[1])
    label = item[2:] if len(item) > 3 and args.pack_label else item[2]
    header = recordio.IRHeader(0, label, item[0], 0)
    try:
        if args.pass_through:
            with open(path, "rb") as f:
                return recordio.pack(header, f.read())
        img = cv2.imread(path, args.color)
        if img is None:
            logging.warning("im2rec: cannot read image %s", path)
            return None
        return recordio.pack_img(header, _transform(img, args), quality=args.quality,
                                 img_fmt=args.encoding)
    except (OSError, cv2.error, recordio.MXNetError) as err:
        logging.warning("im2rec: %s: %s", path, err)
        return None


def write_record(lst: str, args) -> None:
    """Packs the images of list ``lst`` into ``.rec``/``.idx`` beside it, in list order."""
    base = os.path.splitext(lst)[0]
    items = read_list(lst)
    record = recordio.MXIndexedRecordIO(base + ".idx", base + ".rec", "w")
    encode = partial(encode_item, args=args)
    if args.num_thread > 1:
        with ProcessPoolExecutor(args.num_thread) as pool:
            packed = pool.map(encode, items, chunksize=max(1, min(64, len(items) // 8 or 1)))
            _write_all(record, items, packed)
    else:
        _write_all(record, items, map(encode, items))
    record.close()


def _write_all(record, items, packed) -> None:
    for count, (item, s) in enumerate(zip(items, packed)):
        if s is not None:
            record.write_idx(item[0], s)
        if count % 1000 == 0:
            logging.info("im2rec: %d images packed", count)


def parse_args(argv=None):
    """MXNet's im2rec command line."""
    p = argparse.ArgumentParser(formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                                description="Create an image list or make a record database "
                                            "by reading from an image list")
    p.add_argument("prefix", help="prefix of input/output lst and rec files.")
    p.add_argument("root", help="path to folder containing images.")
    g = p.add_argument_group("Options for creating image lists")
    g.add_argument("--list", action="store_true", help="create <prefix>.lst from root")
    g.add_argument("--exts", nargs="+", default=[".jpeg", ".jpg", ".png"])
    g.add_argument("--chunks", type=int, default=1)
    g.add_argument("--train-ratio", type=float, default=1.0)
    g.add_argument("--test-ratio", type=float, default=0)
    g.add_argument("--recursive", action="store_true", help="one label per sub-folder")
    g.add_argument("--no-shuffle", dest="shuffle", action="store_false")
    g = p.add_argument_group("Options for creating database")
    g.add_argument("--pass-through", action="store_true", help="store files as they are")
    g.add_argument("--resize", type=int, default=0, help="shorter edge after resizing")
    g.add_argument("--center-crop", action="store_true", help="crop to a centered square")
    g.add_argument("--quality", type=int, default=95, help="JPEG quality / PNG compression")
    g.add_argument("--num-thread", type=int, default=1, help="worker processes")
    g.add_argument("--color", type=int, default=1, choices=[-1, 0, 1])
    g.add_argument("--encoding", type=str, default=".jpg", choices=[".jpg", ".png"])
    g.add_argument("--pack-label", action="store_true", help="pack multi-dimensional labels")
    args = p.parse_args(argv)
    args.prefix, args.root = os.path.abspath(args.prefix), os.path.abspath(args.root)
    return args


def main(argv=None) -> None:
    """Runs im2rec with the command line ``argv`` (default: ``sys.argv[1:]``)."""
    args = parse_args(argv)
    if args.list:
        make_list(args)
        return
    folder = args.prefix if os.path.isdir(args.prefix) else os.path.dirname(args.prefix)
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if os.path.isfile(path) and path.startswith(args.prefix) and path.endswith(".lst"):
            print("Creating .rec file from", path, "in", folder)
            write_record(path, args)


if __name__ == "__main__":
    main()
