"""RNN: MXNet 1.x's fused recurrent layers (vanilla RNN with relu/tanh, LSTM, GRU), TNC layout.

Inputs and outputs, with ``D = 2`` if bidirectional else 1, ``L = num_layers``,
``H = state_size`` and ``G`` gates (lstm 4, gru 3, rnn_relu/rnn_tanh 1)::

    data        (T, N, C)        parameters  (P,)       state  (L*D, N, H)
    state_cell  (L*D, N, H)      lstm only
    output      (T, N, D*H)      state_output (L*D, N, H), statecell_output (lstm)
                                 with state_outputs=True

``parameters`` is MXNet's packed vector: for each layer, for each direction, ``W_i2h``
(G*H, C or D*H) then ``W_h2h`` (G*H, H), row-major; then all biases in the same order,
``b_i2h`` (G*H,) then ``b_h2h`` (G*H,). Gates are stacked along the rows in cuDNN's order:
lstm ``[i, f, g, o]``, gru ``[r, z, n]``. ``P = (C + H + 2) * G*H*D + (L - 1) * (D*H + H + 2)
* G*H*D``. Per step (``xw = W_i2h x + b_i2h``, ``hw = W_h2h h + b_h2h``)::

    rnn   h' = act(xw + hw)
    lstm  i, f, o = sigmoid(.), g = tanh(.);  c' = f * c + i * g;  h' = o * tanh(c')
    gru   r, z = sigmoid(xw + hw);  n = tanh(xw_n + r * hw_n);  h' = (1 - z) * n + z * h

The reverse direction reads the sequence backwards; its outputs fill ``output[..., H:]``.
In training, ``p`` drops elements of each layer's output but the last (MXNet's native CPU
kernel: dropped where a uniform draw is below ``p``, kept ones scaled by ``1 / (1 - p)``).
The masks come from a seed drawn from the executor's generator (``mx.random.seed``
reproduces them), kept as a hidden last output so the backward recomputes the same masks.

The torch reference runs torch's fused recurrent kernels (``torch._VF.lstm`` etc.) on views
of the packed vector; the gradient is one hidden ``_backward_RNN`` node computing the data,
parameter and state gradients by autograd through that reference. The Triton path projects
the inputs of each layer with one GEMM (``symgraph.kernels.gemm``) and runs the recurrence with
``symgraph.kernels.rnn``.

LSTM with ``projection_size`` P (LSTMP, ``h' = W_h2r (o * tanh(c'))``) runs in inference, as
on MXNet's CPU: each layer and direction's weights are ``W_i2h`` (G*H, C or D*P), ``W_h2h``
(G*H, P), ``W_h2r`` (P, H); ``state``, ``state_output`` and ``output`` have width P.
Not supported (MXNet 1.9.1's CPU operator raises too): training with ``projection_size``,
``lstm_state_clip_min``/``lstm_state_clip_max`` and ``use_sequence_length`` raise when the
node runs; shape inference accepts them as MXNet does.

>>> import symgraph as mx
>>> net = mx.sym.RNN(mx.sym.Variable('data'), state_size=5, num_layers=2, mode='lstm',
...                  bidirectional=True, state_outputs=True, name='rnn')
>>> net.list_arguments()
['data', 'rnn_parameters', 'rnn_state', 'rnn_state_cell']
>>> net.infer_shape(data=(4, 3, 6))[:2]
([(4, 3, 6), (1200,), (4, 3, 5), (4, 3, 5)], [(4, 3, 10), (4, 3, 5), (4, 3, 5)])
>>> net.infer_shape(data=(4, 3))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
symgraph.base.ShapeError: ... Input data should be rank-3 tensor of dim [sequence length, ...
"""
from __future__ import annotations

from functools import lru_cache

import torch

from .. import config
from ..attrs import Param
from ..base import AttrError, DTypeError, ShapeError
from .base import Case, OpDef, PlanHints, draw_seed, register

GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}
_FUSED = {"lstm": torch._VF.lstm, "gru": torch._VF.gru, "rnn_tanh": torch._VF.rnn_tanh,
          "rnn_relu": torch._VF.rnn_relu}


def _dirs(p) -> int:
    return 2 if p.bidirectional else 1


def _drops(p) -> bool:
    """Whether training draws dropout masks (between layers only, as in MXNet)."""
    return p.p > 0 and p.num_layers > 1


def param_size(p, input_size: int) -> int:
    """Length of the packed parameter vector (MXNet's ``GetRnnParamSize``)."""
    size = p.state_size * _dirs(p) * GATES[p.mode]
    inner = p.state_size if p.projection_size is None else p.projection_size
    first = (input_size + inner + 2) * size
    other = (inner * _dirs(p) + inner + 2) * size
    total = first + (p.num_layers - 1) * other
    if p.projection_size is not None:
        total += p.projection_size * p.state_size * p.num_layers * _dirs(p)
    return total


@lru_cache(maxsize=256)
def _pieces(mode: str, layers: int, dirs: int, hidden: int, input_size: int, proj):
    """Sizes and shapes of the packed vector's pieces, and their order in torch's flat list
    (per layer and direction: w_ih, w_hh, b_ih, b_hh, then w_hr with a projection)."""
    gh, inner = GATES[mode] * hidden, proj or hidden
    weights, biases = [], []
    for layer in range(layers):
        width = input_size if layer == 0 else dirs * inner
        for _ in range(dirs):
            weights += [(gh, width), (gh, inner)] + ([(proj, hidden)] if proj else [])
            biases += [(gh,), (gh,)]
    shapes = weights + biases
    sizes = [s[0] * (s[1] if len(s) > 1 else 1) for s in shapes]
    n_w, per = len(weights), 3 if proj else 2
    order = []
    for k in range(layers * dirs):
        order += [per * k, per * k + 1, n_w + 2 * k, n_w + 2 * k + 1]
        order += [per * k + 2] if proj else []
    return tuple(sizes), tuple(shapes), tuple(order)


def unpack(p, w: torch.Tensor, input_size: int) -> list[torch.Tensor]:
    """Views of the packed vector in torch's flat order ``[w_ih, w_hh, b_ih, b_hh] * L*D``
    (``[w_ih, w_hh, b_ih, b_hh, w_hr]`` with a projection)."""
    sizes, shapes, order = _pieces(p.mode, p.num_layers, _dirs(p), p.state_size, input_size,
                                   p.projection_size)
    parts = w.split(sizes)
    return [parts[i].view(shapes[i]) for i in order]


def _check_supported(p, train: bool) -> None:
    """What MXNet 1.9.1's CPU operator refuses when it runs."""
    if p.projection_size is not None:
        if p.mode != "lstm":
            raise AttrError("Check failed: param_.mode == rnn_enum::kLstm: Projection is only "
                            "supported for LSTM.")
        if train:
            raise AttrError("No training support for LSTM with projection on CPU currently.")
        if p.projection_size == p.state_size:  # torch tells projections by the state widths
            raise AttrError("RNN: projection_size equal to state_size is not supported")
    if p.lstm_state_clip_min is not None or p.lstm_state_clip_max is not None:
        raise AttrError("LSTM state clipping is only supported for GPU with CuDNN later than "
                        "7.2.1")
    if p.use_sequence_length:
        raise AttrError("RNN use_sequence_length option is only available for cuDNN version "
                        ">= 7.2")
    if not 0 <= p.p < 1:
        raise AttrError("Check failed: param_.p >= 0.0f && param_.p < 1.0f: unsupported "
                        "dropout value, should be 0 <= dropout < 1")


# ---------------------------------------------------------------- schema, shapes, dtypes

def _inputs(p) -> list[str]:
    names = ["data", "parameters", "state"]
    if p.mode == "lstm":
        names.append("state_cell")
    if p.use_sequence_length:
        names.append("sequence_length")
    return names


def _num_visible(p) -> int:
    if not p.state_outputs:
        return 1
    return 3 if p.mode == "lstm" else 2


def _outputs(p) -> list[str]:
    names = ["output", "state_output", "statecell_output"][:_num_visible(p)]
    return names + (["_dropout_seed"] if _drops(p) else []) + ["_reserve"]


def _check(p) -> None:
    if not 0 <= p.p <= 1:
        raise AttrError(f"value {p.p:g} for Parameter p exceed bound [0,1]")


def _shape(p, shapes):
    data = tuple(shapes[0])
    if not data:
        return None
    if len(data) != 3:
        raise ShapeError(f"Check failed: dshape.ndim() == 3U ({len(data)} vs. 3) : Input data "
                         "should be rank-3 tensor of dim [sequence length, batch size, input "
                         "size]")
    if p.num_layers < 1 or p.state_size < 1:  # MXNet's kernels then return garbage or fail
        raise ShapeError(f"RNN needs num_layers >= 1 and state_size >= 1, got num_layers="
                         f"{p.num_layers}, state_size={p.state_size}")
    steps, batch, width = data
    total = p.num_layers * _dirs(p)
    layer = p.state_size if p.projection_size is None else p.projection_size
    ins = list(shapes)
    ins[1] = (param_size(p, width),) if width else ()
    ins[2] = (total, batch, layer)
    if p.mode == "lstm":
        ins[3] = (total, batch, p.state_size)
    if p.use_sequence_length:
        ins[-1] = (batch,)
    outs = [(steps, batch, _dirs(p) * layer), (total, batch, layer),
            (total, batch, p.state_size)][:_num_visible(p)]
    return ins, outs + ([(1,)] if _drops(p) else []) + [(1,)]  # seed, reserve


def _type(p, types):
    dtype = types[0]
    if dtype is None:
        return None  # MXNet raises "First input must have specified type" here
    names = _inputs(p)
    out = list(types)
    for i, t in enumerate(types):
        if t is None:
            out[i] = dtype
        elif t != dtype and names[i] != "sequence_length":
            raise DTypeError(f"This layer requires uniform type. Expected '{dtype}' v.s. "
                             f"given '{t}' at '{names[i]}'")
    outs = [dtype] * _num_visible(p)
    return out, outs + (["int64"] if _drops(p) else []) + ["uint8"]  # seed, reserve


# ---------------------------------------------------------------- torch reference

def _draw_seed(p, rt) -> int:
    """A 62-bit seed for this step's dropout masks, or -1 when nothing is dropped."""
    if not (rt.is_train and _drops(p)):
        return -1
    gen = rt.generator
    device = gen.device if gen is not None else "cpu"
    return int(torch.randint(0, 1 << 62, (1,), generator=gen, device=device))


def _masks(p, seed: int, shape: tuple, like: torch.Tensor) -> torch.Tensor:
    """(L-1, T, N, D*H) scaled masks from ``seed``: 0 where u < p, else 1 / (1 - p)."""
    gen = torch.Generator(device=like.device)
    gen.manual_seed(seed)
    u = torch.rand((p.num_layers - 1,) + tuple(shape), generator=gen, device=like.device)
    return (u >= p.p).to(like.dtype) * (1.0 / (1.0 - p.p))


def run(p, x: torch.Tensor, w: torch.Tensor, hx: torch.Tensor, cx, seed=-1):
    """The reference: ``(output, hy, cy or None)`` through torch's fused recurrent kernels."""
    flat = unpack(p, w, x.shape[2])
    fused, bi, layers = _FUSED[p.mode], p.bidirectional, p.num_layers
    # cuDNN keeps its reserve space only in training mode; dropout is 0 here either way
    train = torch.is_grad_enabled() and not p.projection_size
    seed = int(seed)  # a device-drawn seed is read here: the reference is not captured
    if seed < 0:
        if p.mode == "lstm":
            return fused(x, (hx, cx), flat, True, layers, 0.0, train, bi, False)
        y, hy = fused(x, hx, flat, True, layers, 0.0, train, bi, False)
        return y, hy, None
    # dropout between layers: one layer at a time, MXNet's masks from the seed
    d = _dirs(p)
    masks = _masks(p, seed, (x.shape[0], x.shape[1], d * p.state_size), x)
    hys, cys, y = [], [], x
    for layer in range(layers):
        if layer:
            y = y * masks[layer - 1]
        ws = flat[4 * d * layer:4 * d * (layer + 1)]  # no projection in training
        h0 = hx[d * layer:d * (layer + 1)]
        if p.mode == "lstm":
            y, hy, cy = fused(y, (h0, cx[d * layer:d * (layer + 1)]), ws, True, 1, 0.0,
                              train, bi, False)
            cys.append(cy)
        else:
            y, hy = fused(y, h0, ws, True, 1, 0.0, train, bi, False)
        hys.append(hy)
    return y, torch.cat(hys), torch.cat(cys) if cys else None


_DRAWN = "drawn on the device"  # the seed output is itself the seed (Triton path)


def _results(p, y, hy, cy, seed, like: torch.Tensor, reserve: torch.Tensor) -> tuple:
    """The visible outputs, the seed output (an int seed in a tensor, or the device-drawn
    seed tensor itself) and the reserve."""
    outs = [y, hy, cy][:_num_visible(p)]
    if _drops(p):
        if isinstance(seed, torch.Tensor):
            seed_out, value = seed, _DRAWN
        else:
            seed_out, value = torch.full((1,), seed, dtype=torch.int64, device=like.device), seed
        seed_out.rnn_seed = (value, seed_out._version)  # the backward reads it here
        outs.append(seed_out)
    return (*outs, reserve)


def _seed_of(t: torch.Tensor):
    """The dropout seed a forward output carries: an int, or the tensor itself when the
    forward drew it on the device (a device read only for a seed tensor that did not come
    from a forward here, or was written since)."""
    seed, version = getattr(t, "rnn_seed", (None, None))
    if seed is None or version != t._version:
        return int(t)
    return t if seed is _DRAWN else seed


def _same_seed(a, b) -> bool:
    """Seeds equal without a device read (a device-drawn seed is its tensor object)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return a is b
    return a == b


# A training forward hands its backward what it needs through the hidden ``reserve`` output
# (the counterpart of cuDNN's reserve space; the plan sees it as a value that lives from the
# forward step to the backward step): a one-byte tensor carrying the autograd graph of the
# torch path, or the Triton path's per-layer record (gate activations and inputs of every
# step). The backward differentiates it instead of running the forward again. It is used only
# if it was made by the same path for the very input objects the backward receives, unchanged
# in place (version counters) and with the same dropout seed; otherwise (an inference
# forward, an input changed since) the backward recomputes.

def _reserve(ins, n_state: int, seed: int, kind: str, payload) -> torch.Tensor:
    """The ``reserve`` output holding ``payload`` for exactly these inputs."""
    handle = torch.zeros(1, dtype=torch.uint8, device=ins[0].device)
    if payload is not None:
        handle.rnn_saved = (tuple(ins[:n_state]), tuple(t._version for t in ins[:n_state]),
                            seed, kind, payload)
    return handle


def _reserved(reserve: torch.Tensor, rest, n_state: int, seed: int, kind: str):
    """What the forward of ``kind`` kept in ``reserve`` for exactly these inputs, or None."""
    entry = getattr(reserve, "rnn_saved", None)
    if entry is None:
        return None
    inputs, versions, saved_seed, saved_kind, payload = entry
    same = all(a is b for a, b in zip(inputs, rest[:n_state])) and \
        _same_seed(saved_seed, seed) and \
        saved_kind == kind and versions == tuple(t._version for t in rest[:n_state])
    return payload if same else None


def _save_graph(p, ins, seed: int):
    """Run the reference with grad on detached leaves: plain outputs and the reserve
    holding the graph."""
    n_state = 4 if p.mode == "lstm" else 3
    leaves = [t.detach().requires_grad_(t.is_floating_point()) for t in ins[:n_state]]
    with torch.enable_grad():
        outs = run(p, leaves[0], leaves[1], leaves[2], leaves[3] if n_state > 3 else None, seed)
    reserve = _reserve(ins, n_state, seed, "autograd", (leaves, outs))
    return tuple(None if o is None else o.detach() for o in outs), reserve


def _forward(p, ins, aux, rt):
    _check_supported(p, rt.is_train)
    seed = _draw_seed(p, rt)
    if rt.is_train and not p.projection_size:
        (y, hy, cy), reserve = _save_graph(p, ins, seed)
    else:
        y, hy, cy = run(p, ins[0], ins[1], ins[2], ins[3] if p.mode == "lstm" else None, seed)
        reserve = _reserve(ins, 0, seed, "autograd", None)
    return _results(p, y, hy, cy, seed, ins[0], reserve)


def autograd_forward(p, ins, aux, rt):
    """The visible outputs through torch's fused kernels, differentiable by autograd (no
    reserve: what a PyTorch module made from the graph runs)."""
    _check_supported(p, rt.is_train)
    seed = _draw_seed(p, rt)
    y, hy, cy = run(p, ins[0], ins[1], ins[2], ins[3] if p.mode == "lstm" else None, seed)
    return [y, hy, cy][:_num_visible(p)]


# ---------------------------------------------------------------- backward

def _backward_inputs(p) -> list[str]:
    ograds = ["ograd_" + n for n in _outputs(p)[:_num_visible(p)]]
    state = ["data", "parameters", "state"] + (["state_cell"] if p.mode == "lstm" else [])
    return ograds + state + (["dropout_seed"] if _drops(p) else []) + ["reserve"]


def _backward_outputs(p) -> list[str]:
    names = ["data_grad", "parameters_grad", "state_grad"]
    return names + ["state_cell_grad"] if p.mode == "lstm" else names


def _backward_shape(p, shapes):
    nv = _num_visible(p)
    targets = shapes[nv:nv + len(_backward_outputs(p))]
    if not all(targets):
        return None
    return list(shapes), [tuple(s) for s in targets]


def _backward_type(p, types):
    dtype = types[_num_visible(p)]
    if dtype is None:
        return None
    return list(types), [dtype] * len(_backward_outputs(p))


def _backward_forward(p, ins, aux, rt):
    """All input gradients by autograd through :func:`run` (the forward's masks)."""
    _check_supported(p, True)
    nv = _num_visible(p)
    ograds, rest = ins[:nv], ins[nv:]
    n_state = len(_backward_outputs(p))
    seed = _seed_of(rest[n_state]) if _drops(p) else -1
    needed = p.get("_needed") or (True,) * n_state
    saved = _reserved(ins[-1], rest, n_state, seed, "autograd")
    if saved is not None:
        leaves, outs = saved
        want = [bool(w) and t.requires_grad for t, w in zip(leaves, needed)]
    else:
        leaves = [t.detach().requires_grad_(bool(w)) for t, w in zip(rest[:n_state], needed)]
        want = [t.requires_grad for t in leaves]
    wanted = [t for t, w in zip(leaves, want) if w]
    if not wanted:
        return (None,) * n_state
    with torch.enable_grad():
        if saved is None:
            outs = run(p, leaves[0], leaves[1], leaves[2], leaves[3] if n_state > 3 else None,
                       seed)
        got = torch.autograd.grad(outs[:nv], wanted, ograds, allow_unused=True)
    it = iter(got)
    grads = [next(it) if w else None for w in want]
    return tuple(torch.zeros_like(t) if g is None and w else g
                 for g, t, w in zip(grads, leaves, want))


def _gradient(g, p, ins, outs, og):
    nv = _num_visible(p)
    n_state = 4 if p.mode == "lstm" else 3
    seed = [outs[nv]] if _drops(p) else []
    grads = g.multi("_backward_RNN", *og[:nv], *ins[:n_state], *seed, outs[-1], **p)
    return grads + [None] * (len(ins) - n_state)


# ---------------------------------------------------------------- Triton path

_GOLDEN = 0x9E3779B97F4A7C15


def _layer_seed(seed, layer: int):
    """Philox key of the mask after ``layer`` (one stream per layer): the same value for an
    int seed and, computed on the device, for a seed tensor (int64 arithmetic wraps)."""
    if isinstance(seed, torch.Tensor):
        step = layer * _GOLDEN % (1 << 64)
        return (seed + (step - (1 << 64) if step >= 1 << 63 else step)) & ((1 << 63) - 1)
    return (seed + layer * _GOLDEN) & ((1 << 63) - 1)


def _dropping(seed) -> bool:
    """Whether ``seed`` asks for dropout masks (-1: an inference forward's)."""
    return isinstance(seed, torch.Tensor) or seed >= 0


def _triton_layers(p, x, w, hx, cx, seed):
    """Run every layer with the Triton kernels. Returns (output, [hT], [cT], record) where
    ``record[layer]`` = (layer input (T*N, width), [per direction: (xw, h0, c0, w_ih, w_hh,
    b_hh, y, saved)], mask applied to the input or None)."""
    from ..kernels.copy import concat
    from ..kernels.dropout import dropout
    from ..kernels.gemm import linear
    from ..kernels.rnn import rnn_layer_fwd
    flat = unpack(p, w, x.shape[2])
    d, steps, batch = _dirs(p), x.shape[0], x.shape[1]
    hys, cys, record, inp, mask = [], [], [], x, None
    for layer in range(p.num_layers):
        if layer and _dropping(seed):
            inp, mask = dropout(inp, p.p, _layer_seed(seed, layer - 1))
        inp2 = inp.reshape(steps * batch, inp.shape[2])
        dirs, ys = [], []
        for k in range(d):
            idx = layer * d + k
            w_ih, w_hh, b_ih, b_hh = flat[4 * idx:4 * idx + 4]
            xw = linear(inp2, w_ih, b_ih).view(steps, batch, -1)
            c0 = cx[idx] if p.mode == "lstm" else None
            y, h_t, c_t, saved = rnn_layer_fwd(p.mode, xw, hx[idx], c0, w_hh, b_hh, k == 1,
                                               config.get().rnn_persistent)
            dirs.append((xw, hx[idx], c0, w_ih, w_hh, b_hh, y, saved))
            ys.append(y)
            hys.append(h_t)
            cys.append(c_t)
        record.append((inp2, dirs, mask))
        inp = ys[0] if d == 1 else concat(ys, 2)
    return inp, hys, cys, record


def triton_rnn(p, ins, aux, rt):
    """RNN forward: per layer one input-projection GEMM per direction (bias fused), the
    recurrence in ``kernels.rnn``, directions concatenated, Philox dropout between layers."""
    from ..kernels.copy import copy_view, stack
    if p.projection_size is not None:  # symgraph.kernels.rnn has no projection: the reference runs
        return _forward(p, ins, aux, rt)
    _check_supported(p, rt.is_train)
    # the masks' seed is drawn on the device: no host read, so the step can be captured
    seed = draw_seed(rt) if rt.is_train and _drops(p) else -1
    x = ins[0]
    y, hys, cys, record = _triton_layers(p, x, ins[1], ins[2],
                                         ins[3] if p.mode == "lstm" else None, seed)
    # a training forward keeps the record: the backward reuses it instead of running the
    # layers again
    reserve = _reserve(ins, 4 if p.mode == "lstm" else 3, seed, "triton",
                       record if rt.is_train else None)
    y = y if y.is_contiguous() else copy_view(y)
    if not p.state_outputs:
        return _results(p, y, None, None, seed, x, reserve)
    hy = stack(hys, 0)
    cy = stack(cys, 0) if p.mode == "lstm" else None
    return _results(p, y, hy, cy, seed, x, reserve)


def _write(src: torch.Tensor, dst: torch.Tensor) -> None:
    from ..kernels.copy import copy_view
    copy_view(src, out=dst)


def triton_backward_rnn(p, ins, aux, rt):
    """RNN backward: the training forward's record of the layers (recomputed when there is
    none), then per layer from the top ``symgraph.kernels.rnn``'s
    recurrence backward per direction, weight gradients of the input projection by GEMM
    into the packed gradient, the layer input's gradient by one GEMM over both directions."""
    from ..kernels.copy import concat, copy_view, reduce_sum
    from ..kernels.dropout import apply_mask
    from ..kernels.gemm import matmul
    from ..kernels.rnn import rnn_layer_bwd
    _check_supported(p, True)
    nv, lstm = _num_visible(p), p.mode == "lstm"
    ograds, rest = ins[:nv], ins[nv:]
    x, w, hx = rest[:3]
    cx = rest[3] if lstm else None
    seed = _seed_of(rest[4 if lstm else 3]) if _drops(p) else -1
    record = _reserved(ins[-1], rest, 4 if lstm else 3, seed, "triton")
    if record is None:  # no training forward of these inputs kept one
        record = _triton_layers(p, x, w, hx, cx, seed)[3]
    d, hidden = _dirs(p), p.state_size
    dw = torch.empty_like(w)
    dflat = unpack(p, dw, x.shape[2])
    dhx = torch.empty_like(hx)
    dcx = torch.empty_like(cx) if lstm else None
    dy_all = ograds[0]
    for layer in reversed(range(p.num_layers)):
        inp2, dirs, mask = record[layer]
        dxws = []
        for k, (xw, h0, c0, _, w_hh, b_hh, y, saved) in enumerate(dirs):
            idx = layer * d + k
            dy = dy_all if d == 1 else copy_view(dy_all[..., k * hidden:(k + 1) * hidden])
            dh_t = ograds[1][idx] if nv > 1 else None
            dc_t = ograds[2][idx] if nv > 2 else None
            dxw, dh0, dc0, dw_hh, db_hh = rnn_layer_bwd(p.mode, dy, dh_t, dc_t, xw, h0, c0,
                                                        w_hh, b_hh, y, saved, k == 1,
                                                        config.get().rnn_persistent)
            dw_ih_v, dw_hh_v, db_ih_v, db_hh_v = dflat[4 * idx:4 * idx + 4]
            dxw2 = dxw.reshape(-1, dxw.shape[2])
            matmul(dxw2.t(), inp2, out=dw_ih_v)
            reduce_sum(dxw2, (0,), out=db_ih_v)
            _write(dw_hh, dw_hh_v)
            _write(db_hh, db_hh_v)
            _write(dh0, dhx[idx])
            if lstm:
                _write(dc0, dcx[idx])
            dxws.append(dxw2)
        w_ihs = [entry[3] for entry in dirs]
        dinp = (matmul(dxws[0], w_ihs[0]) if d == 1
                else matmul(concat(dxws, 1), concat(w_ihs, 0)))
        if mask is not None:
            dinp = apply_mask(dinp, mask.reshape(dinp.shape))
        dy_all = dinp.view(x.shape[0], x.shape[1], -1)
    grads = (dy_all, dw, dhx) + ((dcx,) if lstm else ())
    return grads


# ---------------------------------------------------------------- registration

_PARAMS = (
    Param("state_size", "int", lower=0, doc="Size of the state of each layer."),
    Param("num_layers", "int", lower=0, doc="Number of stacked layers."),
    Param("bidirectional", "bool", False, doc="Whether the layers are bidirectional."),
    Param("mode", "str", choices=("gru", "lstm", "rnn_relu", "rnn_tanh"),
          doc="The type of recurrent layer."),
    Param("p", "float", 0.0, doc="Dropout on the outputs of each layer but the last, in [0, 1)."),
    Param("state_outputs", "bool", False, doc="Whether the final states are outputs."),
    Param("projection_size", "int_or_none", None, doc="LSTM projection size (unsupported)."),
    Param("lstm_state_clip_min", "float_or_none", None,
          doc="Minimum LSTM cell state (GPU only in MXNet; unsupported)."),
    Param("lstm_state_clip_max", "float_or_none", None,
          doc="Maximum LSTM cell state (GPU only in MXNet; unsupported)."),
    Param("lstm_state_clip_nan", "bool", False, doc="Clip NaN cell states (unsupported)."),
    Param("use_sequence_length", "bool", False,
          doc="Take a sequence_length input (cuDNN only in MXNet; unsupported)."),
)


def _case(mode: str, shape: tuple, hidden: int, layers: int = 1, bi: bool = False,
          **attrs) -> Case:
    """A case with the state and packed-parameter shapes derived from data (T, N, C)."""
    from ..attrs import Params
    proj = attrs.get("projection_size")
    p = Params(mode=mode, state_size=hidden, num_layers=layers, bidirectional=bi,
               projection_size=proj)
    cells = (layers * (2 if bi else 1), shape[1], hidden)
    states = cells[:2] + (proj or hidden,)
    shapes = (shape, (param_size(p, shape[2]),), states) + ((cells,) if mode == "lstm" else ())
    train, grad = attrs.pop("train", True), attrs.pop("grad", True)
    return Case(shapes, dict(mode=mode, state_size=hidden, num_layers=layers,
                             bidirectional=bi, **attrs), train=train, grad=grad, rtol=1e-4,
                atol=1e-6)


register(OpDef(
    name="_backward_RNN", params=_PARAMS, hidden=True, inputs=_backward_inputs,
    outputs=_backward_outputs, infer_shape=_backward_shape, infer_type=_backward_type,
    forward=_backward_forward, kernel=triton_backward_rnn,
    hints=PlanHints(skips_unused_outputs=True),
    doc="Gradients of RNN with respect to data, parameters, state (and state_cell)."))

register(OpDef(
    name="RNN", params=_PARAMS, inputs=_inputs, outputs=_outputs, num_visible=_num_visible,
    check=_check, infer_shape=_shape, infer_type=_type, forward=_forward,
    gradient=_gradient, kernel=triton_rnn, aliases=("_npx_rnn",),
    random=lambda p: "device" if _drops(p) else False,
    cases=(
        _case("rnn_tanh", (4, 2, 3), 3),
        _case("rnn_relu", (3, 2, 3), 2, 2, True, state_outputs=True),
        _case("lstm", (3, 2, 3), 2, 2, state_outputs=True),
        _case("lstm", (4, 3, 2), 3, 1, True, state_outputs=True),
        _case("gru", (3, 2, 3), 2, 2, True, state_outputs=True),
        _case("gru", (5, 1, 4), 3),
        _case("lstm", (3, 2, 3), 2, 2, True, p=0.4),
        _case("gru", (3, 2, 2), 2, 2, p=0.5, state_outputs=True, train=False),
        _case("lstm", (3, 2, 3), 4, 2, True, projection_size=2, state_outputs=True,
              train=False, grad=False),
    ),
    doc="""Recurrent layers (vanilla RNN with relu or tanh, LSTM, GRU), stacked and
    optionally bidirectional, over TNC data with MXNet's packed parameter vector.

    See the module notes for the layout of ``parameters``, the gate order and equations,
    dropout between layers (``p``, training only) and what is not supported. With
    ``state_outputs`` the final hidden state (and the LSTM cell state) are outputs too.

    Examples
    --------
    >>> import symgraph as mx
    >>> gru = mx.sym.RNN(mx.sym.Variable('data'), state_size=4, num_layers=1, mode='gru',
    ...                  name='gru')
    >>> gru.infer_shape(data=(5, 2, 3))[0]
    [(5, 2, 3), (108,), (1, 2, 4)]
    >>> mx.sym.RNN(mx.sym.Variable('data'), state_size=4, num_layers=1, mode='gru',
    ...            p=1.5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symgraph.base.AttrError: ... value 1.5 for Parameter p exceed bound [0,1]
    """))
