"""``Block.summary``: MXNet 1.9.1's table of layers, output shapes and parameter counts.

Forward hooks on every block (containers excepted) record each layer's output shape and
parameters while the block runs once on the inputs; a HybridBlock that is not hybridized
runs its ``hybrid_forward`` on NDArrays then, so the hooks see arrays, as in MXNet.

Examples
--------
>>> import symgraph as mx
>>> net = mx.gluon.nn.HybridSequential()
>>> with net.name_scope():
...     net.add(mx.gluon.nn.Dense(4, in_units=3), mx.gluon.nn.Activation('relu'))
>>> net.initialize()
>>> net.summary(mx.nd.ones((2, 3)))  # doctest: +NORMALIZE_WHITESPACE
--------------------------------------------------------------------------------
        Layer (type)                                Output Shape         Param #
================================================================================
               Input                                      (2, 3)               0
             Dense-1                                      (2, 4)              16
        Activation-2                                      (2, 4)               0
================================================================================
Parameters in forward computation graph, duplicate included
   Total params: 16
   Trainable params: 16
   Non-trainable params: 0
Shared params in forward computation graph: 0
Unique parameters in model: 16
--------------------------------------------------------------------------------
"""
from __future__ import annotations

from collections import OrderedDict

from ..ndarray.ndarray import NDArray
from .block import Block, HybridBlock

_LINE = "{:>20}  {:>42} {:>15}"


def summary(block: Block, *inputs) -> None:
    """Print the summary of ``block`` run on ``inputs`` (see the module docstring)."""
    rows: OrderedDict = OrderedDict()
    rows["Input"] = {"output_shape": _shape_str(inputs), "n_params": 0, "trainable": 0,
                     "shared": 0}
    seen: set = set()
    hooks: list = []
    try:
        block.apply(lambda b: _register(b, rows, seen, hooks))
        block(*inputs)
        _print(rows)
    finally:
        for h in hooks:
            h.detach()


def _register(block: Block, rows: OrderedDict, seen: set, hooks: list) -> None:
    from .nn.basic_layers import HybridSequential, Sequential
    if isinstance(block, HybridBlock) and block._active:
        raise AssertionError(f'"{block.name}" must not be hybridized to print summary.')
    if not isinstance(block, (Sequential, HybridSequential)):
        hooks.append(block.register_forward_hook(
            lambda b, _, outputs: _record(b, outputs, rows, seen)))


def _record(block: Block, outputs, rows: OrderedDict, seen: set) -> None:
    row = {"output_shape": _shape_str(outputs), "n_params": 0, "trainable": 0, "shared": 0}
    for p in block.params.values():
        size = p.data().size
        row["n_params"] += size
        row["trainable"] += 0 if p.grad_req == "null" else size
        if p in seen:
            row["shared"] += size
        else:
            seen.add(p)
    rows[f"{block.__class__.__name__}-{len(rows)}"] = row


def _shapes(args):
    """Nested lists/tuples of arrays -> the same nesting (lists) of their shapes."""
    if isinstance(args, (list, tuple)):
        return [_shapes(a) for a in args]
    return args.shape if isinstance(args, NDArray) else args


def _shape_str(args) -> str:
    shapes = _shapes(args)
    text = str(shapes)[1:-1] if isinstance(shapes, list) else str(shapes)
    return text.replace("L", "")


def _print(rows: OrderedDict) -> None:
    print("-" * 80)
    print(_LINE.format("Layer (type)", "Output Shape", "Param #"))
    print("=" * 80)
    total = trainable = shared = 0
    for layer, row in rows.items():
        print(_LINE.format(layer, str(row["output_shape"]), row["n_params"]))
        total += row["n_params"]
        trainable += row["trainable"]
        shared += row["shared"]
    print("=" * 80)
    print("Parameters in forward computation graph, duplicate included")
    print(f"   Total params: {total}")
    print(f"   Trainable params: {trainable}")
    print(f"   Non-trainable params: {total - trainable}")
    print(f"Shared params in forward computation graph: {shared}")
    print(f"Unique parameters in model: {total - shared}")
    print("-" * 80)
