"""ONNX translation of MXNet's fused ``RNN`` operator: one ONNX LSTM/GRU/RNN node per layer,
its weights unpacked from MXNet's flat parameter vector and re-ordered to ONNX's gates:
re-ordered initializers when the vector is a parameter, else Gathers from the vector at the
positions its layout fixes (a graph input or a computed value)."""
from __future__ import annotations

import numpy as np

from ..emitter import Emitter, NodeCtx, converts

_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}
_ONNX_OP = {"rnn_relu": "RNN", "rnn_tanh": "RNN", "lstm": "LSTM", "gru": "GRU"}
# position of each ONNX gate in MXNet's gate stack: lstm MXNet [i, f, g, o] -> ONNX
# [i, o, f, c]; gru MXNet [r, z, n] -> ONNX [z, r, h]
_ORDER = {"lstm": (0, 3, 1, 2), "gru": (1, 0, 2), "rnn_relu": (0,), "rnn_tanh": (0,)}


def _unpack(flat: np.ndarray, mode: str, layers: int, dirs: int, hidden: int,
            width: int) -> list[list[tuple]]:
    """Per layer, per direction ``(W_i2h, W_h2h, b_i2h, b_h2h)`` from MXNet's packing: all
    weights of all layers first, then all biases, in the same order."""
    gh = _GATES[mode] * hidden
    pos, weights = 0, []
    for layer in range(layers):
        cols = width if layer == 0 else dirs * hidden
        row = []
        for _ in range(dirs):
            wi = flat[pos:pos + gh * cols].reshape(gh, cols)
            pos += gh * cols
            wh = flat[pos:pos + gh * hidden].reshape(gh, hidden)
            pos += gh * hidden
            row.append([wi, wh])
        weights.append(row)
    for layer in range(layers):
        for d in range(dirs):
            weights[layer][d] += [flat[pos:pos + gh], flat[pos + gh:pos + 2 * gh]]
            pos += 2 * gh
    if pos != flat.size:
        raise ValueError(f"parameter vector has {flat.size} values, the layout needs {pos}")
    return [[tuple(w) for w in row] for row in weights]


def _gates(a: np.ndarray, mode: str, hidden: int) -> np.ndarray:
    """Rows (gate stack) of ``a`` in ONNX's gate order."""
    return np.concatenate([a[g * hidden:(g + 1) * hidden] for g in _ORDER[mode]], axis=0)


def _layer_index(pieces: list[tuple], mode: str, hidden: int) -> tuple:
    """Positions in the flat vector of one layer's W, R and B (both directions stacked)."""
    w = np.stack([_gates(p[0], mode, hidden) for p in pieces])
    r = np.stack([_gates(p[1], mode, hidden) for p in pieces])
    b = np.stack([np.concatenate([_gates(p[2], mode, hidden), _gates(p[3], mode, hidden)])
                  for p in pieces])
    return w, r, b


def _layer_weights(e: Emitter, n: NodeCtx, index: tuple, dtype) -> tuple[str, ...]:
    """W, R, B of one layer: initializers when the flat parameters are known, else one
    Gather each from the flat input at the (static) positions of their values."""
    flat = n.const(1)
    if flat is not None:
        flat = np.asarray(flat).reshape(-1)
        return tuple(e.const(flat[i].astype(dtype), hint=h) for i, h in zip(index, "WRB"))
    return tuple(e.one("Gather", [n.ins[1], e.const(i.astype(np.int64), hint=f"{h}_index")],
                       axis=0) for i, h in zip(index, "WRB"))


def _check(n: NodeCtx) -> None:
    p = n.p
    if p.projection_size is not None:
        raise n.fail("projection_size (LSTMP has no ONNX recurrent op)")
    if p.use_sequence_length:
        raise n.fail("use_sequence_length (MXNet's CPU operator refuses it too)")
    if p.lstm_state_clip_min is not None or p.lstm_state_clip_max is not None:
        raise n.fail("lstm_state_clip_min/max (ONNX's clip bounds the gate inputs, not the "
                     "cell state)")
    if n.in_dtypes[0] not in ("float32", "float64"):
        raise n.fail(f"dtype {n.in_dtypes[0]} (ONNX recurrent ops take float and double)")
    if n.const(1) is None and (n.in_dtypes[1] != n.in_dtypes[0] or len(n.in_shapes[1]) != 1):
        raise n.fail("computed parameters that are not a 1-D vector of the data's dtype")


@converts("RNN")
def rnn(e: Emitter, n: NodeCtx):
    _check(n)
    p, mode = n.p, n.p.mode
    dirs, hidden, layers = (2 if p.bidirectional else 1), p.state_size, p.num_layers
    dtype = np.dtype(n.in_dtypes[0])
    try:
        pieces = _unpack(np.arange(int(np.prod(n.in_shapes[1]))), mode, layers, dirs,
                         hidden, n.in_shapes[0][2])
    except ValueError as err:
        raise n.fail(str(err)) from None
    lstm = mode == "lstm"
    attrs = dict(hidden_size=hidden, direction="bidirectional" if dirs == 2 else "forward")
    if mode == "gru":
        attrs["linear_before_reset"] = 1
    if mode.startswith("rnn_"):
        attrs["activations"] = ["Relu" if mode == "rnn_relu" else "Tanh"] * dirs
    x, hys, cys = n.ins[0], [], []
    for layer in range(layers):
        w, r, b = _layer_weights(e, n, _layer_index(pieces[layer], mode, hidden), dtype)
        ends = (e.ints([layer * dirs]), e.ints([(layer + 1) * dirs]), e.ints([0]))
        h0 = e.one("Slice", [n.ins[2], *ends])
        ins = [x, w, r, b, "", h0]
        if lstm:
            ins.append(e.one("Slice", [n.ins[3], *ends]))
        y, hy, *cy = e.node(_ONNX_OP[mode], ins, 3 if lstm else 2, **attrs)
        hys.append(hy)
        cys += cy
        # Y (T, D, N, H) -> (T, N, D*H), the next layer's input
        y = e.one("Transpose", [y], perm=[0, 2, 1, 3])
        last = layer == layers - 1
        x = e.one("Reshape", [y, e.ints([0, 0, -1])], n.outs[0] if last else None)
    outs = [x]
    if p.state_outputs:
        outs.append(_stack(e, hys, n.outs[1]))
        if lstm:
            outs.append(_stack(e, cys, n.outs[2]))
    return outs


def _stack(e: Emitter, values: list[str], out: str) -> str:
    if len(values) == 1:
        return e.one("Identity", values, out)
    return e.one("Concat", values, out, axis=0)
