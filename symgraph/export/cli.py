"""``python -m symgraph.export``: convert an MXNet checkpoint to ONNX or to PyTorch.

    python -m symgraph.export PREFIX EPOCH --to onnx --input-shape data:1,3,224,224
    python -m symgraph.export PREFIX EPOCH --to torch --input-shape data:1,3,224,224

reads ``PREFIX-symbol.json`` and ``PREFIX-%04d.params`` (written by MXNet or symgraph; no
MXNet needed) and writes ``PREFIX.onnx`` (``mx.onnx.export_model``) or ``PREFIX.pt2`` (a
``torch.export`` program of :func:`symgraph.export.to_torch`'s module, loadable with
``torch.export.load`` without symgraph), then prints a summary of what was exported.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys

import numpy as np

from .graph import ExportError, data_inputs, load_model


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m symgraph.export",
        description="Convert an MXNet checkpoint (PREFIX-symbol.json, PREFIX-EPOCH.params) "
                    "to ONNX or to a PyTorch program.")
    ap.add_argument("prefix", help="checkpoint prefix (PREFIX-symbol.json)")
    ap.add_argument("epoch", type=int, help="epoch of PREFIX-%%04d.params")
    ap.add_argument("--to", choices=("onnx", "torch"), required=True,
                    help="onnx: an ONNX model; torch: a torch.export program (.pt2)")
    ap.add_argument("--input-shape", action="append", default=[], metavar="NAME:D0,D1,...",
                    help="shape of a data input, e.g. data:1,3,224,224 (once per input)")
    ap.add_argument("--input-type", action="append", default=[], metavar="NAME:DTYPE",
                    help="dtype of a data input (default float32)")
    ap.add_argument("--output", help="output file (default PREFIX.onnx or PREFIX.pt2)")
    ap.add_argument("--opset", type=int, default=None,
                    help="ONNX opset (default: the newest tested)")
    ap.add_argument("--dynamic-batch", action="store_true",
                    help="leave dim 0 of every input dynamic")
    return ap.parse_args(argv)


def _pairs(items: list[str], what: str, convert) -> dict:
    out = {}
    for item in items:
        name, sep, value = item.rpartition(":")
        if not sep or not name:
            raise ExportError(f"--{what} {item!r}: expected NAME:VALUE")
        try:
            out[name] = convert(value)
        except ValueError:
            raise ExportError(f"--{what} {item!r}: cannot read {value!r}") from None
    return out


def _shape(text: str) -> tuple[int, ...]:
    return tuple(int(d) for d in text.split(","))


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        summary = convert(args)
    except (ExportError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(summary)
    return 0


def convert(args: argparse.Namespace) -> str:
    """Do the conversion ``args`` asks for; the summary to print."""
    from ..symbol import load as sym_load
    json_path = f"{args.prefix}-symbol.json"
    params_path = f"{args.prefix}-{args.epoch:04d}.params"
    for path in (json_path, params_path):
        if not os.path.exists(path):
            raise ExportError(f"{path}: no such file")
    sym, values = load_model(sym_load(json_path), params_path)
    names = data_inputs(sym, values)[0]
    shapes = _pairs(args.input_shape, "input-shape", _shape)
    types = _pairs(args.input_type, "input-type", lambda t: np.dtype(t).name)
    missing = [n for n in names if n not in shapes]
    if missing:
        raise ExportError(f"give --input-shape for the data inputs {missing} (the symbol's "
                          f"data inputs are {names})")
    out = args.output or f"{args.prefix}.{'onnx' if args.to == 'onnx' else 'pt2'}"
    if args.to == "onnx":
        _to_onnx(sym, values, names, shapes, types, out, args)
    else:
        _to_torch(sym, values, names, shapes, types, out, args.dynamic_batch)
    return _summary(sym, values, names, shapes, out, args.to)


def _to_onnx(sym, values, names, shapes, types, out, args) -> None:
    from ..onnx import export_model
    dynamic = args.dynamic_batch
    export_model(sym, values, [shapes[n] for n in names],
                 [types.get(n, "float32") for n in names], out, dynamic=dynamic,
                 dynamic_input_shapes=[(None,) + tuple(shapes[n][1:]) for n in names]
                 if dynamic else None, opset_version=args.opset)


def _to_torch(sym, values, names, shapes, types, out, dynamic: bool) -> None:
    import torch

    from ..base import dtype_name
    from .torch_module import to_torch
    module = to_torch(sym, values, input_shapes=shapes, input_types=types).eval()
    example = {n: torch.zeros(shapes[n], dtype=getattr(torch, dtype_name(types.get(n))))
               for n in names}
    dims = None
    if dynamic:
        batch = torch.export.Dim("batch")
        dims = {n: {0: batch} for n in names}
    program = torch.export.export(module, (), kwargs=example, dynamic_shapes=dims)
    folder, base = os.path.split(os.path.abspath(out))
    tmp = os.path.join(folder, f".{base}.partial.pt2")  # atomic: written, then renamed
    try:
        torch.export.save(program, tmp)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _summary(sym, values, names, shapes, out, kind) -> str:
    ops = collections.Counter(n["op"] for n in _nodes(sym) if n["op"] != "null")
    n_params = sum(int(np.prod(v.shape)) for v in values.values())
    size = os.path.getsize(out)
    lines = [f"exported {kind}: {out} ({size / 1e6:.2f} MB)" if size >= 1e5 else
             f"exported {kind}: {out} ({size / 1e3:.1f} kB)",
             f"inputs: {', '.join(f'{n}{tuple(shapes[n])}' for n in names)}",
             f"outputs: {', '.join(sym.list_outputs())}",
             f"parameters: {len(values)} arrays, {n_params:,} values",
             f"operators: {sum(ops.values())} nodes of {len(ops)} ops: "
             + ", ".join(f"{op} x{c}" for op, c in sorted(ops.items()))]
    return "\n".join(lines)


def _nodes(sym) -> list[dict]:
    import json
    return json.loads(sym.tojson())["nodes"]
