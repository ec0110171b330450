"""Get a model out of MXNet's format: a checkpoint to ONNX (run by ONNX Runtime) and to a
PyTorch module, each checked against symgraph's own executor.

    python examples/export_model.py [--out exported]           # trains a small model first
    python examples/export_model.py --prefix PATH --epoch 10 --input-shape 1,3,224,224

The same from the command line: ``python -m symgraph.export PREFIX EPOCH --to onnx
--input-shape data:1,3,224,224`` (or ``--to torch``). ONNX needs ``pip install -e .[onnx]``.
"""
from __future__ import annotations

import argparse
import os

import numpy as np
import torch

import symgraph as mx
from symgraph.export import to_torch


def small_checkpoint(out: str) -> tuple[str, int, tuple]:
    """A tiny trained convolutional checkpoint (so the script runs on its own)."""
    data = mx.sym.Variable("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv")
    net = mx.sym.Activation(mx.sym.BatchNorm(net, name="bn"), act_type="relu")
    net = mx.sym.FullyConnected(mx.sym.flatten(net), num_hidden=3, name="fc")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    rng = np.random.RandomState(0)
    it = mx.io.NDArrayIter(rng.rand(40, 1, 8, 8).astype(np.float32),
                           rng.randint(0, 3, 40).astype(np.float32), batch_size=10)
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.fit(it, num_epoch=1, optimizer_params={"learning_rate": 0.1})
    prefix = os.path.join(out, "small")
    mod.save_checkpoint(prefix, 1)
    return prefix, 1, (1, 1, 8, 8)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--prefix", default=None, help="checkpoint prefix (default: train one)")
    ap.add_argument("--epoch", type=int, default=1)
    ap.add_argument("--input-shape", default=None, help="e.g. 1,3,224,224 (data's shape)")
    ap.add_argument("--out", default="exported", help="where the exported files go")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.prefix is None:
        prefix, epoch, shape = small_checkpoint(args.out)
    else:
        prefix, epoch = args.prefix, args.epoch
        shape = tuple(int(d) for d in args.input_shape.split(","))
    symbol, arg_params, aux_params = mx.model.load_checkpoint(prefix, epoch)
    x = np.random.RandomState(1).rand(*shape).astype(np.float32)
    # the reference: symgraph's executor in inference mode
    mod = mx.mod.Module(symbol, context=mx.cpu())
    label = [(n, (shape[0],)) for n in symbol.list_arguments() if n.endswith("label")]
    mod.bind([("data", shape)], label or None, for_training=False)
    mod.set_params(arg_params, aux_params)
    mod.forward(mx.io.DataBatch([mx.nd.array(x)]), is_train=False)
    want = mod.get_outputs()[0].asnumpy()
    errors = {}
    # to PyTorch: a torch.fx GraphModule with the parameters as nn.Parameters
    module = to_torch(symbol, arg_params, aux_params).eval()
    with torch.no_grad():
        got = module(data=torch.from_numpy(x))
    got = got[0] if isinstance(got, (tuple, list)) else got
    errors["torch"] = float(np.abs(got.numpy() - want).max())
    torch.save(module.state_dict(), os.path.join(args.out, "model_state.pt"))
    # to ONNX, run by ONNX Runtime
    try:
        import onnxruntime
    except ImportError:
        print("onnxruntime is not installed (pip install -e .[onnx]): ONNX skipped")
    else:
        path = os.path.join(args.out, "model.onnx")
        mx.onnx.export_model(symbol, {**arg_params, **aux_params}, [shape], [np.float32],
                             path)
        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        onnx_out = session.run(None, {session.get_inputs()[0].name: x})[0]
        errors["onnx"] = float(np.abs(onnx_out - want).max())
    for name, err in errors.items():
        print(f"{name}: max abs difference from the executor {err:.2e}")
    return errors


if __name__ == "__main__":
    main()
