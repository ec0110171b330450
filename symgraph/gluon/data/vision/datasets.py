"""Vision datasets (``mx.gluon.data.vision.datasets``, MXNet 1.9.1).

MNIST, FashionMNIST, CIFAR10 and CIFAR100 read the files MXNet keeps under ``root``
(MXNet's layout; nothing is downloaded): a file that is missing raises
:class:`DatasetNotFoundError` naming every expected path, a file whose header or length is
wrong raises :class:`~symgraph.base.FileFormatError` naming it. ``ImageRecordDataset``,
``ImageFolderDataset`` and ``ImageListDataset`` decode images with :mod:`symgraph.image`
(OpenCV).

>>> import gzip, os, struct, tempfile
>>> import numpy as np
>>> root = tempfile.mkdtemp()
>>> with gzip.open(os.path.join(root, 't10k-images-idx3-ubyte.gz'), 'wb') as f:
...     _ = f.write(struct.pack('>IIII', 2051, 2, 28, 28) + bytes(2 * 28 * 28))
>>> with gzip.open(os.path.join(root, 't10k-labels-idx1-ubyte.gz'), 'wb') as f:
...     _ = f.write(struct.pack('>II', 2049, 2) + bytes([3, 7]))
>>> test = MNIST(root, train=False)
>>> len(test), test[1][0].shape, int(test[1][1])
(2, (28, 28, 1), 7)
"""
from __future__ import annotations

import gzip
import os
import struct
import warnings

import numpy as np

from ....base import FileFormatError, MXNetError
from .. import dataset

__all__ = ["MNIST", "FashionMNIST", "CIFAR10", "CIFAR100", "ImageRecordDataset",
           "ImageFolderDataset", "ImageListDataset", "DatasetNotFoundError"]


class DatasetNotFoundError(MXNetError, FileNotFoundError):
    """A dataset's files are not on disk (symgraph never downloads them)."""


def _require(root: str, names, what: str) -> list[str]:
    """The paths of ``names`` under ``root``, or an error listing those missing."""
    paths = [os.path.join(root, name) for name in names]
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise DatasetNotFoundError(
            f"{what}: expected the file(s) {', '.join(missing)}; symgraph does not download "
            f"datasets: put MXNet's files for {what} in {root!r}")
    return paths


def _read_idx(path: str, magic: int, ndim: int) -> np.ndarray:
    """An idx-ubyte array (gzip-compressed) of ``ndim`` dimensions, header checked."""
    head_len = 4 + 4 * ndim
    try:
        with gzip.open(path, "rb") as fin:
            raw = fin.read()
    except (OSError, EOFError) as err:
        raise FileFormatError(f"{path}: not a readable gzip file ({err})") from err
    if len(raw) < head_len:
        raise FileFormatError(f"{path}: {len(raw)} bytes, shorter than the idx header "
                              f"({head_len} bytes)")
    found, *dims = struct.unpack(f">{1 + ndim}I", raw[:head_len])
    if found != magic:
        raise FileFormatError(f"{path}: magic number {found} at offset 0, expected {magic} "
                              f"(idx-ubyte with {ndim} dimension(s))")
    size = int(np.prod(dims))
    if len(raw) - head_len != size:
        raise FileFormatError(f"{path}: header says {dims} ({size} bytes of data after offset "
                              f"{head_len}), the file holds {len(raw) - head_len}")
    return np.frombuffer(raw, dtype=np.uint8, offset=head_len).reshape(dims)


class _TrainTestDataset(dataset._DownloadedDataset):
    """A dataset read from files under ``root`` (default ``$MXNET_HOME/datasets/<name>``),
    the training or the test split."""

    _namespace = ""

    def __init__(self, root=None, train=True, transform=None):
        self._train = train
        if root is None:
            from ....base import data_dir
            root = os.path.join(data_dir(), "datasets", self._namespace)
        super().__init__(root, transform)


class MNIST(_TrainTestDataset):
    """The MNIST digits: samples ``(image, label)``, the image a uint8 NDArray
    ``(28, 28, 1)``, the label an int32.

    Parameters
    ----------
    root : str, default $MXNET_HOME/datasets/mnist
        Folder holding ``train-images-idx3-ubyte.gz``, ``train-labels-idx1-ubyte.gz``,
        ``t10k-images-idx3-ubyte.gz`` and ``t10k-labels-idx1-ubyte.gz``.
    train : bool, default True
        The training set, else the test set.
    transform : callable, optional
        ``transform(data, label)`` applied to each sample.

    Examples
    --------
    >>> import tempfile
    >>> MNIST(tempfile.mkdtemp())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    symgraph.gluon.data.vision.datasets.DatasetNotFoundError: MNIST: expected the file(s) ...
    """

    _namespace = "mnist"
    _files = {True: ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
              False: ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")}

    def _get_data(self) -> None:
        from .... import ndarray as nd
        data_file, label_file = _require(self._root, self._files[self._train],
                                         type(self).__name__)
        label = _read_idx(label_file, 2049, 1).astype(np.int32)
        data = _read_idx(data_file, 2051, 3)
        if len(data) != len(label):
            raise FileFormatError(f"{data_file} holds {len(data)} images but {label_file} "
                                  f"holds {len(label)} labels")
        data = data.reshape(data.shape + (1,))
        self._data = nd.array(data, dtype=data.dtype)
        self._label = label


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST, with MNIST's file names and layout (see :class:`MNIST`).

    Parameters
    ----------
    root : str, default $MXNET_HOME/datasets/fashion-mnist
        Folder holding the four idx-ubyte ``.gz`` files.
    train : bool, default True
        The training set, else the test set.
    transform : callable, optional
        ``transform(data, label)`` applied to each sample.

    Examples
    --------
    >>> FashionMNIST._files[False][1]
    't10k-labels-idx1-ubyte.gz'
    """

    _namespace = "fashion-mnist"


class CIFAR10(_TrainTestDataset):
    """CIFAR-10 from its binary batches: samples ``(image, label)``, the image a uint8
    NDArray ``(32, 32, 3)``, the label an int32.

    Parameters
    ----------
    root : str, default $MXNET_HOME/datasets/cifar10
        Folder holding ``data_batch_1.bin`` .. ``data_batch_5.bin`` and ``test_batch.bin``
        (or the ``cifar-10-batches-bin`` folder of the official archive).
    train : bool, default True
        The training set, else the test set.
    transform : callable, optional
        ``transform(data, label)`` applied to each sample.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> root = tempfile.mkdtemp()
    >>> rows = np.zeros((2, 3073), np.uint8); rows[:, 0] = [4, 9]
    >>> rows.tofile(os.path.join(root, 'test_batch.bin'))
    >>> [int(label) for _, label in CIFAR10(root, train=False)]
    [4, 9]
    """

    _namespace = "cifar10"
    _subdir = "cifar-10-batches-bin"
    _label_bytes = 1
    _files = {True: tuple(f"data_batch_{i}.bin" for i in range(1, 6)),
              False: ("test_batch.bin",)}

    def _label_column(self) -> int:
        return 0

    def _read_batch(self, path: str):
        row = self._label_bytes + 3072
        size = os.path.getsize(path)
        if size == 0 or size % row:
            raise FileFormatError(f"{path}: {size} bytes is not a whole number of "
                                  f"{row}-byte CIFAR records")
        data = np.fromfile(path, dtype=np.uint8).reshape(-1, row)
        images = data[:, self._label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        return images, data[:, self._label_column()].astype(np.int32)

    def _get_data(self) -> None:
        from .... import ndarray as nd
        names = self._files[self._train]
        folder = self._root
        official = os.path.join(self._root, self._subdir)
        if not os.path.isfile(os.path.join(folder, names[0])) and os.path.isdir(official):
            folder = official
        paths = _require(folder, names, type(self).__name__)
        data, label = zip(*(self._read_batch(path) for path in paths))
        data = np.concatenate(data)
        self._data = nd.array(data, dtype=data.dtype)
        self._label = np.concatenate(label)


class CIFAR100(CIFAR10):
    """CIFAR-100 from ``train.bin`` / ``test.bin``: coarse labels (20 super-classes), or
    fine ones (100 classes) with ``fine_label``.

    Parameters
    ----------
    root : str, default $MXNET_HOME/datasets/cifar100
        Folder holding ``train.bin`` and ``test.bin`` (or the official
        ``cifar-100-binary`` folder).
    fine_label : bool, default False
        The 100 fine classes instead of the 20 coarse ones.
    train : bool, default True
        The training set, else the test set.
    transform : callable, optional
        ``transform(data, label)`` applied to each sample.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> root = tempfile.mkdtemp()
    >>> rows = np.zeros((1, 3074), np.uint8); rows[0, :2] = [3, 42]
    >>> rows.tofile(os.path.join(root, 'test.bin'))
    >>> int(CIFAR100(root, train=False)[0][1]), int(CIFAR100(root, True, False)[0][1])
    (3, 42)
    """

    _namespace = "cifar100"
    _subdir = "cifar-100-binary"
    _label_bytes = 2
    _files = {True: ("train.bin",), False: ("test.bin",)}

    def __init__(self, root=None, fine_label=False, train=True, transform=None):
        self._fine_label = fine_label
        super().__init__(root, train, transform)

    def _label_column(self) -> int:
        return int(bool(self._fine_label))


class ImageRecordDataset(dataset.RecordFileDataset):
    """Images in a RecordIO file (``x.rec`` + ``x.idx``, as ``im2rec`` writes them):
    samples ``(image, label)``, the image decoded to an ``(H, W, C)`` uint8 NDArray.

    Parameters
    ----------
    filename : str
        Path of the ``.rec`` file.
    flag : {0, 1}, default 1
        0 decodes to greyscale (1 channel), 1 to colour (3 channels, RGB).
    transform : callable, optional
        ``transform(data, label)`` applied to each sample.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> import symgraph as mx
    >>> path = os.path.join(tempfile.mkdtemp(), 'img.rec')
    >>> rec = mx.recordio.MXIndexedRecordIO(path[:-4] + '.idx', path, 'w')
    >>> img = np.full((4, 6, 3), 200, np.uint8)
    >>> rec.write_idx(0, mx.recordio.pack_img((0, 5.0, 0, 0), img, img_fmt='.png'))
    >>> rec.close()
    >>> data, label = ImageRecordDataset(path)[0]
    >>> data.shape, float(label)
    ((4, 6, 3), 5.0)
    """

    def __init__(self, filename, flag=1, transform=None):
        super().__init__(filename)
        self._flag = flag
        self._transform = transform

    def __getitem__(self, idx):
        from .... import image, recordio
        header, img = recordio.unpack(super().__getitem__(idx))
        data = image.imdecode(img, self._flag)
        if self._transform is not None:
            return self._transform(data, header.label)
        return data, header.label


_IMAGE_EXTS = (".jpg", ".jpeg", ".png")


class ImageFolderDataset(dataset.Dataset):
    """Image files in one sub-folder per class (``root/car/0001.jpg``,
    ``root/bus/023.png``): samples ``(image, label)``, label ``i`` for the ``i``-th
    sub-folder in sorted order.

    Parameters
    ----------
    root : str
        The folder of class folders.
    flag : {0, 1}, default 1
        0 loads greyscale (1 channel), 1 colour (3 channels).
    transform : callable, optional
        ``transform(data, label)`` applied to each sample.

    Attributes
    ----------
    synsets : list of str
        Class names; ``synsets[i]`` is the name of label ``i``.
    items : list of (str, int)
        The ``(filename, label)`` pairs.

    Examples
    --------
    >>> import os, tempfile
    >>> import cv2, numpy as np
    >>> root = tempfile.mkdtemp()
    >>> for name in ('cat', 'dog'):
    ...     os.mkdir(os.path.join(root, name))
    ...     _ = cv2.imwrite(os.path.join(root, name, 'a.png'), np.zeros((2, 3, 3), np.uint8))
    >>> folder = ImageFolderDataset(root)
    >>> folder.synsets, folder[1][0].shape, folder[1][1]
    (['cat', 'dog'], (2, 3, 3), 1)
    """

    def __init__(self, root, flag=1, transform=None):
        self._root = os.path.expanduser(root)
        self._flag = flag
        self._transform = transform
        self._exts = list(_IMAGE_EXTS)
        if not os.path.isdir(self._root):
            raise DatasetNotFoundError(f"ImageFolderDataset: {self._root!r} is not a folder")
        self._list_images(self._root)

    def _list_images(self, root: str) -> None:
        self.synsets: list[str] = []
        self.items: list[tuple[str, int]] = []
        for folder in sorted(os.listdir(root)):
            path = os.path.join(root, folder)
            if not os.path.isdir(path):
                warnings.warn(f"Ignoring {path}, which is not a directory.", stacklevel=3)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for filename in sorted(os.listdir(path)):
                filename = os.path.join(path, filename)
                ext = os.path.splitext(filename)[1]
                if ext.lower() not in self._exts:
                    warnings.warn(f"Ignoring {filename} of type {ext}. Only support "
                                  f"{', '.join(self._exts)}", stacklevel=3)
                    continue
                self.items.append((filename, label))

    def __getitem__(self, idx):
        from .... import image
        filename, label = self.items[idx]
        img = image.imread(filename, self._flag)
        if self._transform is not None:
            return self._transform(img, label)
        return img, label

    def __len__(self) -> int:
        return len(self.items)


class ImageListDataset(dataset.Dataset):
    """Images named by a list (MXNet 2.0's dataset, offered here too): a ``.lst`` file
    under ``root`` (``index<TAB>label(s)<TAB>path`` per line, as ``im2rec`` writes it) or a
    list of ``[label(s)..., path]`` entries; samples ``(image, label)``, the label a float32
    NDArray.

    Parameters
    ----------
    root : str, default '.'
        Folder the paths are relative to.
    imglist : str or list
        The ``.lst`` file name (relative to ``root``) or the entries.
    flag : {0, 1}, default 1
        0 loads greyscale (1 channel), 1 colour (3 channels).

    Examples
    --------
    >>> import os, tempfile
    >>> import cv2, numpy as np
    >>> root = tempfile.mkdtemp()
    >>> _ = cv2.imwrite(os.path.join(root, 'a.png'), np.zeros((2, 3, 3), np.uint8))
    >>> data = ImageListDataset(root, [[2.0, 'a.png'], [1.0, 0.5, 'a.png']])
    >>> data[1][0].shape, data[1][1].asnumpy().tolist()
    ((2, 3, 3), [1.0, 0.5])
    """

    def __init__(self, root=".", imglist=None, flag=1):
        self._root = os.path.expanduser(root)
        self._flag = flag
        if isinstance(imglist, str):
            entries = self._read_list(os.path.join(self._root, imglist))
        elif isinstance(imglist, (list, tuple)):
            entries = [self._entry(item, i) for i, item in enumerate(imglist)]
        else:
            raise ValueError("imglist must be filename or list of valid entries, given "
                             f"{type(imglist)}")
        self.items = [(os.path.join(self._root, path), label) for label, path in entries]

    @staticmethod
    def _entry(item, index: int):
        from .... import ndarray as nd
        if len(item) < 2 or not isinstance(item[-1], str):
            raise ValueError(f"imglist entry {index} must be [label(s)..., path], got {item!r}")
        labels = item[:-1] if len(item) > 2 else item[0]
        labels = np.atleast_1d(np.asarray(labels, dtype=np.float32))
        return nd.array(labels, dtype="float32"), item[-1]

    @staticmethod
    def _read_list(path: str):
        if not os.path.isfile(path):
            raise DatasetNotFoundError(f"ImageListDataset: list file {path!r} does not exist")
        entries = []
        with open(path, encoding="utf-8") as fin:
            for number, line in enumerate(fin, 1):
                fields = line.rstrip("\n").split("\t")
                if not line.strip():
                    continue
                try:
                    entries.append(ImageListDataset._entry(
                        [float(v) for v in fields[1:-1]] + [fields[-1]], number))
                except ValueError as err:
                    raise FileFormatError(f"{path}, line {number}: expected index<TAB>"
                                          f"label(s)<TAB>path, got {line!r}") from err
        return entries

    def __getitem__(self, idx):
        from .... import image
        path, label = self.items[idx]
        return image.imread(path, self._flag), label

    def __len__(self) -> int:
        return len(self.items)
