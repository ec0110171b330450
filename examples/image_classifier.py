"""Train a small convolutional classifier from a RecordIO dataset with ``ImageRecordIter``.

Without ``--rec``, the script first packs the 8x8 digits bundled with symgraph into
``<out>/digits_train.rec`` / ``digits_val.rec`` (JPEG records with ``.idx`` files, the
format MXNet's ``im2rec`` writes and ``tools/im2rec.py`` makes from a folder of images), so
it runs with nothing to download. With ``--rec PATH`` (and ``--val-rec``) it reads your own.

    python examples/image_classifier.py [--epochs 4] [--out image-classifier]
    python examples/image_classifier.py --rec train.rec --val-rec val.rec --classes 10 \
        --image-size 32
"""
from __future__ import annotations

import argparse
import logging
import os

import numpy as np

import symgraph as mx
from symgraph.examples.datasets import load_digits


def pack_digits(out: str, size: int, limit: int = 0) -> tuple[str, str]:
    """The bundled digits as grey JPEG records (``size`` x ``size``), 80% / 20% split."""
    import cv2
    x, y = load_digits()
    if limit:
        x, y = x[:limit], y[:limit]
    order = np.random.RandomState(0).permutation(len(x))
    split = int(0.8 * len(x))
    paths = []
    for name, part in (("train", order[:split]), ("val", order[split:])):
        rec = os.path.join(out, f"digits_{name}.rec")
        writer = mx.recordio.MXIndexedRecordIO(rec[:-4] + ".idx", rec, "w")
        for i, k in enumerate(part):
            img = cv2.resize((x[k].reshape(8, 8) * 255).astype(np.uint8), (size, size),
                             interpolation=cv2.INTER_NEAREST)
            header = mx.recordio.IRHeader(0, float(y[k]), i, 0)
            writer.write_idx(i, mx.recordio.pack_img(header, img, quality=95))
        writer.close()
        paths.append(rec)
    return paths[0], paths[1]


def network(classes: int) -> mx.sym.Symbol:
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=16, name="conv1")
    net = mx.sym.Activation(mx.sym.BatchNorm(net, name="bn1"), act_type="relu")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max")
    net = mx.sym.Convolution(net, kernel=(3, 3), pad=(1, 1), num_filter=32, name="conv2")
    net = mx.sym.Activation(mx.sym.BatchNorm(net, name="bn2"), act_type="relu")
    net = mx.sym.Pooling(net, global_pool=True, kernel=(1, 1), pool_type="avg")
    net = mx.sym.FullyConnected(mx.sym.flatten(net), num_hidden=classes, name="fc")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def main(argv=None) -> float:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--rec", default=None, help="training .rec (default: the packed digits)")
    ap.add_argument("--val-rec", default=None, help="validation .rec")
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--image-size", type=int, default=16)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--limit", type=int, default=0, help="use only N digits (0: all)")
    ap.add_argument("--out", default="image-classifier", help="records and checkpoints")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    os.makedirs(args.out, exist_ok=True)
    if args.rec is None:
        args.rec, args.val_rec = pack_digits(args.out, args.image_size, args.limit)
    shape = (1, args.image_size, args.image_size)
    train = mx.io.ImageRecordIter(path_imgrec=args.rec, data_shape=shape,
                                  batch_size=args.batch_size, shuffle=True, rand_mirror=False,
                                  mean_r=128.0, scale=1.0 / 64)
    val = mx.io.ImageRecordIter(path_imgrec=args.val_rec, data_shape=shape,
                                batch_size=args.batch_size, mean_r=128.0, scale=1.0 / 64)
    mod = mx.mod.Module(network(args.classes), context=mx.cpu())
    mod.fit(train, eval_data=val, eval_metric="acc", optimizer="sgd",
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
            initializer=mx.init.Xavier(), num_epoch=args.epochs,
            epoch_end_callback=mx.callback.do_checkpoint(os.path.join(args.out, "cnn")))
    accuracy = mod.score(val, "acc")[0][1]
    print(f"validation accuracy {accuracy:.3f}; checkpoints in {args.out}")
    return accuracy


if __name__ == "__main__":
    main()
