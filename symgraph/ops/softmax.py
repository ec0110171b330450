"""softmax, log_softmax and SoftmaxActivation, with their hidden backward ops.

With ``T`` the temperature (1 when None) and ``y`` the output along ``axis``::

    softmax      y = exp(x / T) / sum(exp(x / T))     dx = y * (dy - sum(dy * y)) / T
    log_softmax  y = x / T - logsumexp(x / T)         dx = (dy - exp(y) * sum(dy)) / T

``dtype`` sets the output dtype (the data gradient keeps the data's). With
``use_length`` softmax takes a second input ``length`` (the data's shape without
``axis``): only the first ``length`` entries along ``axis`` take part; the rest of the
output is 0. SoftmaxActivation is the legacy op: ``instance`` mode is a softmax over the
last axis, ``channel`` mode over axis 1 (3-D or larger input). Its gradient, as in MXNet
1.9.1, is the softmax gradient over axis 1 in both modes (so not the derivative of an
instance-mode softmax of 3-D or larger data; 1-D data has no gradient).

>>> import symgraph as mx
>>> net = mx.sym.softmax(mx.sym.Variable('data'), mx.sym.Variable('len'), use_length=True,
...                      name='sm')
>>> net.list_arguments(), net.infer_shape(data=(2, 3, 4))[0]
(['data', 'len'], [(2, 3, 4), (2, 3)])
>>> mx.sym.softmax(mx.sym.Variable('data'), dtype='float64').infer_type(data='float32')[1]
[<class 'numpy.float64'>]
"""
from __future__ import annotations

import torch

from ..attrs import Param
from ..base import MXNetError, ShapeError, to_torch_dtype
from .base import Case, OpDef, register

_PARAMS = (
    Param("axis", "int", -1, doc="The axis along which to compute the softmax."),
    Param("temperature", "float_or_none", None, doc="Temperature (None means 1)."),
    Param("dtype", "dtype_or_none", None, choices=(None, "float16", "float32", "float64"),
          doc="Output dtype (None: the input's)."),
    Param("use_length", "bool", False, doc="Mask with the ``length`` input (softmax only)."),
)


def _axis(p, ndim: int) -> int:
    if not -ndim <= p.axis < ndim:
        raise ShapeError(f"axis {p.axis} is out of range for data with {ndim} dimensions")
    return p.axis % ndim


def _inputs(p):
    return ["data", "length"] if p.use_length else ["data"]


def _shape(p, shapes):
    data = shapes[0]
    if not data:
        return None
    ax = _axis(p, len(data))
    if not p.use_length:
        return shapes, [data]
    length = tuple(d for i, d in enumerate(data) if i != ax) or (1,)
    return [data, length], [data]


def _type(p, types):
    data = types[0]
    if data is None:
        return None
    # the length input keeps its own (integer) dtype
    return [data] + types[1:], [p.dtype or data]


def _compute_dtype(x: torch.Tensor, out: torch.dtype) -> torch.dtype:
    wide = torch.promote_types(x.dtype, out)
    return torch.float32 if wide == torch.float16 else wide


def _softmax(p, ins, log: bool) -> torch.Tensor:
    x = ins[0]
    ax = _axis(p, x.dim())
    out_dtype = to_torch_dtype(p.dtype) if p.dtype else x.dtype
    z = x.to(_compute_dtype(x, out_dtype))
    if p.temperature is not None and p.temperature != 1.0:
        z = z / p.temperature
    if not (p.use_length and len(ins) > 1):
        y = torch.log_softmax(z, dim=ax) if log else torch.softmax(z, dim=ax)
        return y.to(out_dtype)
    pos = torch.arange(x.shape[ax], device=x.device).view([-1] + [1] * (x.dim() - 1 - ax))
    keep = pos < ins[1].to(torch.long).reshape(
        [d if i != ax else 1 for i, d in enumerate(x.shape)])
    y = torch.softmax(z.masked_fill(~keep, float("-inf")), dim=ax)
    return y.masked_fill(~keep, 0.0).to(out_dtype)


_BACKWARD_DATA = {True: torch._log_softmax_backward_data, False: torch._softmax_backward_data}


def _backward_forward(log: bool):
    def run(p, ins, aux, rt):
        dy, y = ins[0], ins[1]
        ax = _axis(p, y.dim())
        grad_dtype = ins[2].dtype if len(ins) > 2 else y.dtype
        wide = torch.promote_types(_compute_dtype(y, grad_dtype), dy.dtype)
        # ``dy - exp(y) * sum(dy)`` (log) or ``y * (dy - sum(dy * y))``, by torch's kernels
        dx = _BACKWARD_DATA[log](dy.to(wide), y.to(wide), ax, wide)
        if p.temperature is not None and p.temperature != 1.0:
            dx = dx / p.temperature
        return (dx.to(grad_dtype),)
    return run


_PLAIN = (torch.float32, torch.float64)


def _plain(p, n_inputs: int, expected: int) -> bool:
    """No dtype change, temperature or length input: the one-call case."""
    return not p.dtype and p.temperature in (None, 1.0) and not p.use_length and \
        n_inputs == expected


def _plain_axis(p, in_shapes: list, expected: int, data: int) -> int | None:
    """The axis of a one-call case on these shapes (input ``data`` holds the values), or
    None: the general path runs (and reports a bad axis when the step runs)."""
    if not _plain(p, len(in_shapes), expected):
        return None
    try:
        return _axis(p, len(in_shapes[data]))
    except MXNetError:
        return None


def _prepare(log: bool):
    """``prepare`` for softmax/log_softmax: the axis decided once; float32/64 data runs one
    torch call (other dtypes take the general path, which widens float16)."""
    fn = torch.log_softmax if log else torch.softmax

    def prepare(p, in_shapes, out_shapes, out=None):
        ax = None if out is not None else _plain_axis(p, in_shapes, 1, 0)
        if ax is None:
            return None

        def run(p, ins, aux, rt):
            x = ins[0]
            if x.dtype in _PLAIN:
                return (fn(x, ax),)
            return (_softmax(p, ins, log),)
        return run
    return prepare


def _backward_prepare(log: bool):
    """``prepare`` for the softmax/log_softmax gradients (same rule as their prepare)."""
    general = _backward_forward(log)

    def prepare(p, in_shapes, out_shapes, out=None):
        ax = None if out is not None else _plain_axis(p, in_shapes, 2, 1)
        if ax is None:
            return None

        def run(p, ins, aux, rt):
            dy, y = ins[0], ins[1]
            if dy.dtype is not y.dtype or y.dtype not in _PLAIN:
                return general(p, ins, aux, rt)
            return (_BACKWARD_DATA[log](dy, y, ax, y.dtype),)
        return run
    return prepare


def _triton(log: bool):
    def run(p, ins, aux, rt):
        from ..kernels.softmax import softmax_fwd
        x = ins[0]
        length = ins[1] if p.use_length and len(ins) > 1 else None
        dtype = to_torch_dtype(p.dtype) if p.dtype else x.dtype
        return (softmax_fwd(x, _axis(p, x.dim()), p.temperature, length, log=log,
                            dtype=dtype),)
    run.__name__ = "triton_log_softmax" if log else "triton_softmax"
    run.__doc__ = f"Triton kernel for {'log_' if log else ''}softmax (``kernels.softmax``)."
    return run


def _triton_backward(log: bool):
    def run(p, ins, aux, rt):
        from ..kernels.softmax import softmax_bwd
        dy, y = ins[0], ins[1]
        dtype = ins[2].dtype if len(ins) > 2 else y.dtype
        return (softmax_bwd(dy, y, _axis(p, y.dim()), p.temperature, log=log, dtype=dtype),)
    run.__name__ = f"triton_{'log_' if log else ''}softmax_backward"
    run.__doc__ = f"Triton kernel for _backward_{'log_' if log else ''}softmax."
    return run


def _backward_type(p, types):
    if types[1] is None:
        return None
    grad = types[2] if len(types) > 2 and types[2] is not None else types[1]
    return types, [grad]


def _grad_fn(backward: str):
    def gradient(g, p, ins, outs, og):
        attrs = {k: v for k, v in p.items() if k != "use_length"}
        extra = [ins[0]] if p.dtype else []  # the data, for the gradient's dtype
        dx = g.op(backward, og[0], outs[0], *extra, **attrs)
        return [dx, None] if p.use_length else [dx]
    return gradient


for _name in ("softmax", "log_softmax"):
    register(OpDef(
        name=f"_backward_{_name}", params=_PARAMS, hidden=True,
        inputs=lambda p: ["ograd", "output", "data"] if p.dtype else ["ograd", "output"],
        infer_shape=lambda p, s: (s, [s[1]]) if s[1] else None, infer_type=_backward_type,
        forward=_backward_forward(_name == "log_softmax"),
        prepare=_backward_prepare(_name == "log_softmax"),
        kernel=_triton_backward(_name == "log_softmax"),
        doc=f"The data gradient of ``{_name}`` from its output and output gradient."))


register(OpDef(
    name="softmax", params=_PARAMS, inputs=_inputs, infer_shape=_shape, infer_type=_type,
    forward=lambda p, ins, aux, rt: (_softmax(p, ins, log=False),), kernel=_triton(log=False),
    prepare=_prepare(log=False),
    gradient=_grad_fn("_backward_softmax"),
    cases=(Case(((3, 5),)),
           Case(((2, 3, 4),), {"axis": 1, "temperature": 2.0}),
           Case(((2, 3, 4),), {"axis": 0, "dtype": "float64"}),
           Case(((2, 3, 4), (2, 3)), {"use_length": True}, ints={1: 5}, no_grad_inputs=(1,)),
           Case(((4, 3), (3,)), {"use_length": True, "axis": 0}, ints={1: 5},
                no_grad_inputs=(1,))),
    doc="""Softmax along ``axis``: ``exp(x / T) / sum(exp(x / T))``.

    ``temperature`` divides the input first; ``dtype`` sets the output dtype. With
    ``use_length`` a second input ``length`` (integer; the data's shape without ``axis``)
    limits each softmax to its first ``length`` entries and zeroes the rest.
    """))


def _log_shape(p, shapes):
    if p.use_length:
        raise ShapeError("log_softmax takes no length input; use_length must be False")
    return _shape(p, shapes)


register(OpDef(
    name="log_softmax", params=_PARAMS, infer_shape=_log_shape, infer_type=_type,
    forward=lambda p, ins, aux, rt: (_softmax(p, ins, log=True),), kernel=_triton(log=True),
    prepare=_prepare(log=True),
    gradient=_grad_fn("_backward_log_softmax"),
    cases=(Case(((3, 5),)),
           Case(((2, 3, 4),), {"axis": 1, "temperature": 0.5}),
           Case(((2, 3, 4),), {"axis": -3, "dtype": "float64"})),
    doc="""Log-softmax along ``axis``: ``x / T - log(sum(exp(x / T)))``.

    ``temperature`` and ``dtype`` as for ``softmax``. ``use_length`` is accepted by the
    parser but, as in MXNet 1.9.1, rejected when shapes are inferred.
    """))


def _activation_shape(p, shapes):
    data = shapes[0]
    if not data:
        return None
    if p.mode == "channel" and len(data) < 3:
        raise ShapeError(f"Input need to have a least 3 dimensions when mode=channel, got "
                         f"shape {tuple(data)}")
    return shapes, [data]


def _activation_forward(p, ins, aux, rt):
    ax = 1 if p.mode == "channel" else -1
    return (torch.softmax(ins[0], dim=ax),)


def triton_softmax_activation(p, ins, aux, rt):
    """Triton kernel for SoftmaxActivation (``kernels.softmax``)."""
    from ..kernels.softmax import softmax_fwd
    return (softmax_fwd(ins[0], 1 if p.mode == "channel" else -1),)


def _activation_grad(g, p, ins, outs, og):
    # MXNet 1.9.1 differentiates both modes over axis 1, though instance mode's forward
    # normalises over the last axis: the same for 2-D data, not the derivative beyond
    return [g.op("_backward_softmax", og[0], outs[0], axis=1)]


register(OpDef(
    name="SoftmaxActivation", infer_shape=_activation_shape,
    params=(Param("mode", "str", "instance", choices=("channel", "instance"),
                  doc="Softmax over the last axis (instance) or over axis 1 (channel)."),),
    forward=_activation_forward, gradient=_activation_grad, kernel=triton_softmax_activation,
    cases=(Case(((3, 5),)), Case(((2, 3, 4),), grad=False),  # MXNet's gradient (see above)
           Case(((2, 3, 2, 2),), {"mode": "channel"}), Case(((6,),), grad=False)),
    doc="""Legacy softmax activation: ``instance`` mode normalises over the last axis (the
    data flattened to 2-D, as MXNet does), ``channel`` mode over axis 1 at each position.
    The gradient is MXNet's: the softmax gradient over axis 1 in both modes.
    """))


def _softmin(b, p, ins):
    """softmin(x) = softmax(-x): the composite inherits softmax's kernels and gradient."""
    attrs = {"axis": p.axis, "temperature": p.temperature, "dtype": p.dtype,
             "use_length": p.use_length}
    return [b.op("softmax", b.op("negative", ins[0], name="neg"), *ins[1:], **attrs)]


register(OpDef(
    name="softmin", params=_PARAMS, inputs=_inputs, decompose=_softmin, infer_shape=_shape,
    cases=(Case(((3, 5),)),
           Case(((2, 3, 4),), {"axis": 0, "temperature": 2.0}),
           Case(((2, 3, 4),), {"axis": 1, "dtype": "float64"}),
           Case(((2, 3, 4), (2, 3)), {"use_length": True}, ints={1: 5}, no_grad_inputs=(1,))),
    doc="""Softmin along ``axis``: ``softmax(-x)``, with softmax's ``temperature``, ``dtype``
    and ``use_length`` (a composite of ``negative`` and ``softmax``).
    """))
