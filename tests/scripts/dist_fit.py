"""An MXNet 1.x data-parallel training script, written against MXNet's API only.

It runs unchanged under ``python -m symgraph.launch -n N`` (or torchrun, or MXNet's DMLC
launch contract) with ``--kvstore dist_sync``, and as one process with ``--kvstore local``.
``MX_IMPL=mxnet`` runs the very same file on MXNet 1.9.1 (in its virtualenv).

    python -m symgraph.launch -n 2 tests/scripts/dist_fit.py OUT --api module

Every worker trains on its shard of one fixed dataset: with ``--batch-size B`` on N workers,
worker r's batch k is rows ``[(k*N + r)*B, (k*N + r + 1)*B)``, so step k covers the rows that
one process with ``--batch-size N*B`` covers at its step k (and with ``--num-ctx N`` each of
its contexts gets exactly one worker's batch). Each worker writes its final parameters to
``OUT-rank<r>.params`` (``arg:``/``aux:`` keys, MXNet's format); ``--checkpoint PREFIX``
saves a checkpoint (with optimizer states) every epoch, ``--resume E`` restarts from
checkpoint E.
"""
import argparse
import importlib
import logging
import os

import numpy as np

mx = importlib.import_module(os.environ.get("MX_IMPL", "symgraph"))

N_SAMPLES, N_FEATURES, N_CLASSES = 96, 10, 4


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--api", default="module", choices=["module", "feedforward", "gluon"])
    parser.add_argument("--kvstore", default="dist_sync")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--num-epochs", type=int, default=3)
    parser.add_argument("--num-ctx", type=int, default=1, help="CPU contexts per worker")
    parser.add_argument("--compression", action="store_true", help="2-bit, threshold 0.5")
    parser.add_argument("--local-update", action="store_true",
                        help="update on the workers: the store only sums gradients")
    parser.add_argument("--checkpoint", default=None, help="prefix saved every epoch")
    parser.add_argument("--resume", type=int, default=0, help="epoch to restart from")
    return parser.parse_args(argv)


def dataset(kv, batch_size):
    rng = np.random.RandomState(7)
    x = rng.uniform(-1, 1, (N_SAMPLES, N_FEATURES)).astype(np.float32)
    y = rng.randint(0, N_CLASSES, N_SAMPLES).astype(np.float32)
    rows = np.arange(N_SAMPLES).reshape(-1, kv.num_workers, batch_size)[:, kv.rank].ravel()
    return x[rows], y[rows]


def mlp():
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = mx.sym.FullyConnected(act, num_hidden=N_CLASSES, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def initial_params():
    """Fixed starting weights (from numpy), the same on every worker and every library."""
    rng = np.random.RandomState(3)
    shapes = [("fc1_weight", (16, N_FEATURES)), ("fc1_bias", (16,)),
              ("fc2_weight", (N_CLASSES, 16)), ("fc2_bias", (N_CLASSES,))]
    return [(name, rng.uniform(-0.5, 0.5, shape).astype(np.float32)) for name, shape in shapes]


OPTIMIZER = {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.001}


def train_module(args, kv, contexts, train):
    compression = {"type": "2bit", "threshold": 0.5} if args.compression else None
    if args.resume:
        mod = mx.mod.Module.load(args.checkpoint, args.resume, load_optimizer_states=True,
                                 context=contexts, compression_params=compression)
    else:
        mod = mx.mod.Module(mlp(), context=contexts, compression_params=compression)
    callback = mx.callback.module_checkpoint(mod, args.checkpoint, save_optimizer_states=True) \
        if args.checkpoint else None
    arg_params = None if args.resume else {k: mx.nd.array(v) for k, v in initial_params()}
    mod.fit(train, kvstore=kv, optimizer="sgd", optimizer_params=OPTIMIZER,
            arg_params=arg_params, num_epoch=args.num_epochs, begin_epoch=args.resume,
            epoch_end_callback=callback)
    return mod.get_params()


def train_feedforward(args, kv, contexts, train):
    model = mx.model.FeedForward(mlp(), ctx=contexts, num_epoch=args.num_epochs,
                                 optimizer="sgd", arg_params={
                                     k: mx.nd.array(v) for k, v in initial_params()},
                                 **OPTIMIZER)
    model.fit(train, kvstore=kv)
    return model.arg_params, model.aux_params


def train_gluon(args, kv, contexts, train):
    net = mx.gluon.nn.HybridSequential(prefix="mlp_")  # names independent of earlier nets
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(16, activation="relu", in_units=N_FEATURES))
        net.add(mx.gluon.nn.Dense(N_CLASSES, in_units=16))
    net.initialize(ctx=contexts)
    for param, (_, value) in zip(net.collect_params().values(), initial_params()):
        param.set_data(mx.nd.array(value))
    net.hybridize()
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", OPTIMIZER, kvstore=kv,
                               update_on_kvstore=False if args.local_update else None)
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    for _ in range(args.num_epochs):
        train.reset()
        for batch in train:
            datas = mx.gluon.utils.split_and_load(batch.data[0], contexts)
            labels = mx.gluon.utils.split_and_load(batch.label[0], contexts)
            with mx.autograd.record():
                losses = [loss_fn(net(x), y) for x, y in zip(datas, labels)]
            for loss in losses:
                loss.backward()
            trainer.step(args.batch_size * kv.num_workers)  # the global batch
    return {k: v.data(contexts[0]) for k, v in net.collect_params().items()}, {}


def main(argv=None):
    logging.basicConfig(level=logging.WARNING)
    args = parse_args(argv)
    kv = mx.kv.create(args.kvstore)
    if args.compression and args.api != "module":
        kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    mx.random.seed(42)
    np.random.seed(42)
    if args.local_update:  # Module and FeedForward read it when they create the store
        os.environ["MXNET_UPDATE_ON_KVSTORE"] = "0"
    contexts = [mx.cpu(i) for i in range(args.num_ctx)]
    x, y = dataset(kv, args.batch_size)
    train = mx.io.NDArrayIter(x, y, batch_size=args.batch_size)
    arg_params, aux_params = {"module": train_module, "feedforward": train_feedforward,
                              "gluon": train_gluon}[args.api](args, kv, contexts, train)
    saved = {"arg:" + k: v.as_in_context(mx.cpu()) for k, v in arg_params.items()}
    saved.update({"aux:" + k: v.as_in_context(mx.cpu()) for k, v in aux_params.items()})
    mx.nd.save(f"{args.out}-rank{kv.rank}.params", saved)


if __name__ == "__main__":
    main()
