"""``mx.image.ImageDetIter``: :class:`ImageIter` for object detection.

A raw label is MXNet's flat detection record: ``[header_width, object_width, header...,
obj0..., obj1..., ...]`` (header_width counts the first two fields too); each object is
``[class_id, xmin, ymin, xmax, ymax, ...]`` normalised to [0, 1]. Batches carry labels of
shape (batch, max objects, object_width), unused rows filled with -1.

>>> import os, tempfile, cv2, numpy as np, symgraph as mx
>>> root = tempfile.mkdtemp()
>>> _ = cv2.imwrite(os.path.join(root, 'a.png'), np.zeros((8, 8, 3), np.uint8))
>>> it = mx.image.ImageDetIter(1, (3, 4, 4), path_root=root,
...                            imglist=[[2, 5, 1, 0.1, 0.1, 0.5, 0.5, 'a.png']])
>>> batch = it.next()
>>> batch.label[0].shape, batch.label[0].asnumpy()[0, 0].tolist()
((1, 1, 5), [1.0, 0.10000000149011612, 0.10000000149011612, 0.5, 0.5])
"""
from __future__ import annotations

import logging

import numpy as np

from .. import ndarray as nd
from ..ndarray import NDArray
from .det_augment import CreateDetAugmenter
from .iterator import ImageIter

__all__ = ["ImageDetIter"]

_MEAN = np.array([123.68, 116.28, 103.53])
_STD = np.array([58.395, 57.12, 57.375])


class ImageDetIter(ImageIter):
    """Detection iterator: as :class:`ImageIter`, with detection labels and augmenters
    (extra keyword arguments go to :func:`CreateDetAugmenter`)."""

    def __init__(self, batch_size, data_shape, path_imgrec=None, path_imglist=None,
                 path_root=None, path_imgidx=None, shuffle=False, part_index=0, num_parts=1,
                 aug_list=None, imglist=None, data_name="data", label_name="label",
                 last_batch_handle="pad", **kwargs):
        super().__init__(batch_size=batch_size, data_shape=data_shape, path_imgrec=path_imgrec,
                         path_imglist=path_imglist, path_root=path_root,
                         path_imgidx=path_imgidx, shuffle=shuffle, part_index=part_index,
                         num_parts=num_parts, aug_list=[], imglist=imglist,
                         data_name=data_name, label_name=label_name,
                         last_batch_handle=last_batch_handle)
        self.auglist = CreateDetAugmenter(data_shape, **kwargs) if aug_list is None \
            else aug_list
        label_shape = self._estimate_label_shape()
        self.provide_label = [(label_name, (self.batch_size,) + label_shape)]
        self.label_shape = label_shape

    def _check_valid_label(self, label):
        """RuntimeError unless ``label`` is (1+, 5+) with a valid object."""
        if len(label.shape) != 2 or label.shape[1] < 5:
            raise RuntimeError(f"Label with shape (1+, 5+) required, {label} received.")
        # MXNet passes the third condition as numpy's ``out``: only the first two count
        valid = np.where(np.logical_and(label[:, 0] >= 0, label[:, 3] > label[:, 1]))[0]
        if valid.size < 1:
            raise RuntimeError("Invalid label occurs.")

    def _estimate_label_shape(self):
        """(max objects over the data set, object width), reading every label once."""
        max_count, width = 0, None
        self.reset()
        try:
            while True:
                label, _ = self.next_sample()
                label = self._parse_label(label)
                max_count, width = max(max_count, label.shape[0]), label.shape[1]
        except StopIteration:
            pass
        self.reset()
        if width is None:
            raise RuntimeError("ImageDetIter: the data set holds no sample with a label")
        return (max_count, width)

    def _parse_label(self, label):
        """A raw flat label as an (objects, object_width) array of its valid objects."""
        if isinstance(label, NDArray):
            label = label.asnumpy()
        raw = np.asarray(label).ravel()
        if raw.size < 7:
            raise RuntimeError("Label shape is invalid: " + str(raw.shape))
        header_width, obj_width = int(raw[0]), int(raw[1])
        if obj_width < 5 or header_width < 2 or (raw.size - header_width) % obj_width != 0:
            raise RuntimeError(f"Label shape {raw.shape} inconsistent with annotation width "
                               f"{obj_width} (header width {header_width}).")
        out = np.reshape(raw[header_width:], (-1, obj_width))
        valid = np.where(np.logical_and(out[:, 3] > out[:, 1], out[:, 4] > out[:, 2]))[0]
        if valid.size < 1:
            raise RuntimeError("Encounter sample with no valid label.")
        return out[valid, :]

    def reshape(self, data_shape=None, label_shape=None):
        """Change the data shape (C, H, W) and/or the label shape (objects, width)."""
        if data_shape is not None:
            self.check_data_shape(data_shape)
            self.provide_data = [(self.provide_data[0][0], (self.batch_size,) + data_shape)]
            self.data_shape = data_shape
        if label_shape is not None:
            self.check_label_shape(label_shape)
            self.provide_label = [(self.provide_label[0][0], (self.batch_size,) + label_shape)]
            self.label_shape = label_shape

    def _sample(self):
        """The next valid (image, label) after augmentation."""
        while True:
            label, s = self.next_sample()
            data = self.imdecode(s)
            try:
                self.check_valid_image([data])
                label = self._parse_label(label)
                data, label = self.augmentation_transform(data, label)
                self._check_valid_label(label)
            except RuntimeError as e:
                logging.debug("Invalid image, skipping:  %s", e)
                continue
            return data, label

    def _new_label_batch(self):
        """Labels are (batch, objects, width), -1 where unused."""
        return nd.full(self.provide_label[0][1], -1)

    def _put_label(self, batch_label, i, label) -> None:
        num_object = label.shape[0]
        if num_object > batch_label.shape[1] or label.shape[1] != batch_label.shape[2]:
            raise RuntimeError(f"ImageDetIter: a label of shape {label.shape} does not "
                               f"fit label_shape {self.label_shape}")
        rows = np.full(batch_label.shape[1:], -1, dtype=np.float32)
        rows[:num_object] = label
        batch_label[i] = nd.array(rows)

    def augmentation_transform(self, data, label):
        """Apply the detection augmenters in order."""
        for aug in self.auglist:
            data, label = aug(data, label)
        return data, label

    def check_label_shape(self, label_shape):
        """A new label shape may grow the object count, never change the object width."""
        if not len(label_shape) == 2:
            raise ValueError("label_shape should have length 2")
        if label_shape[0] < self.label_shape[0]:
            raise ValueError(f"Attempts to reduce label count from {self.label_shape[0]} to "
                             f"{label_shape[0]}, not allowed.")
        if label_shape[1] != self.provide_label[0][1][2]:
            raise ValueError(f"label_shape object width inconsistent: "
                             f"{self.provide_label[0][1][2]} vs {label_shape[1]}.")

    def draw_next(self, color=None, thickness=2, mean=None, std=None, clip=True,
                  waitKey=None, window_name="draw_next", id2labels=None):
        """Yield augmented images (BGR uint8 numpy) with their boxes drawn by OpenCV;
        ``mean``/``std`` (True: ImageNet's) undo the normalisation first."""
        import cv2
        while True:
            try:
                label, s = self.next_sample()
            except StopIteration:
                return
            data = self.imdecode(s)
            try:
                self.check_valid_image([data])
                label = self._parse_label(label)
            except RuntimeError as e:
                logging.debug("Invalid image, skipping:  %s", e)
                continue
            data, label = self.augmentation_transform(data, label)
            image = _denormalized(data.asnumpy(), mean, std, clip)
            bgr = color[::-1] if color else None
            _draw_boxes(cv2, image, label, bgr, thickness, id2labels)
            if waitKey is not None:
                cv2.imshow(window_name, image)
                cv2.waitKey(waitKey)
            yield image

    def sync_label_shape(self, it, verbose=False):
        """Give this iterator and ``it`` the same label shape (the larger object count)."""
        if not isinstance(it, ImageDetIter):
            raise TypeError("Synchronize with invalid iterator.")
        train_shape, val_shape = self.label_shape, it.label_shape
        if train_shape[1] != val_shape[1]:
            raise ValueError(f"object width mismatch: {train_shape[1]} vs {val_shape[1]}")
        max_count = max(train_shape[0], val_shape[0])
        if max_count > train_shape[0]:
            self.reshape(None, (max_count, train_shape[1]))
        if max_count > val_shape[0]:
            it.reshape(None, (max_count, val_shape[1]))
        if verbose and max_count > min(train_shape[0], val_shape[0]):
            logging.info("Resized label_shape to (%d, %d).", max_count, train_shape[1])
        return it


def _denormalized(image: np.ndarray, mean, std, clip: bool) -> np.ndarray:
    """An augmented RGB float image back to BGR uint8 for drawing."""
    std = _STD if std is True else std
    mean = _MEAN if mean is True else mean
    if std is not None:
        image = image * std
    if mean is not None:
        image = image + mean
    image = image[:, :, (2, 1, 0)]
    if clip:
        image = np.clip(image, 0, 255)
    return np.ascontiguousarray(image.astype(np.uint8))


def _draw_boxes(cv2, image, label, color, thickness, id2labels) -> None:
    height, width, _ = image.shape
    for row in label:
        x1 = int(row[1] * width)
        if x1 < 0:
            continue
        y1, x2, y2 = int(row[2] * height), int(row[3] * width), int(row[4] * height)
        box_color = color if color else tuple(float(c) for c in np.random.rand(3) * 255)
        cv2.rectangle(image, (x1, y1), (x2, y2), box_color, thickness)
        if id2labels is not None and int(row[0]) in id2labels:
            text = f"{id2labels[int(row[0])]:s}"
            font = cv2.FONT_HERSHEY_SIMPLEX
            text_height = cv2.getTextSize(text, font, 0.5, 2)[0][1]
            cv2.putText(image, text, (x1 + 5, y1 + text_height + 5), font, 0.5,
                        (255, 255, 255), 2)
