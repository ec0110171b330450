"""``mx.test_utils``: the helpers MXNet users' own test suites import.

>>> import numpy as np, symgraph as mx
>>> mx.test_utils.assert_almost_equal(np.ones(3), np.ones(3) + 1e-9)
>>> x = mx.sym.Variable('x')
>>> mx.test_utils.check_symbolic_forward(2 * x, [np.ones((2, 2))], [2 * np.ones((2, 2))])
[array([[2., 2.],
       [2., 2.]], dtype=float32)]
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .base import MXNetError, dtype_name
from .context import Context, cpu
from .ndarray import NDArray, array
from .symbol import Symbol

_default_ctx: list[Context] = []
_DEFAULT_RTOL = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4,
                 np.dtype(np.float64): 1e-5}
_DEFAULT_ATOL = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3,
                 np.dtype(np.float64): 1e-20}


def default_context() -> Context:
    """The context tests run on (``cpu()`` unless :func:`set_default_context` changed it)."""
    return _default_ctx[-1] if _default_ctx else cpu()


def set_default_context(ctx: Context) -> None:
    """Set the context :func:`default_context` returns."""
    _default_ctx.clear()
    _default_ctx.append(ctx)


def _np(a) -> np.ndarray:
    return a.asnumpy() if isinstance(a, NDArray) else np.asarray(a)


def _tols(a: np.ndarray, b: np.ndarray, rtol, atol) -> tuple[float, float]:
    dt = np.result_type(a.dtype, b.dtype) if a.dtype.kind == "f" else np.dtype(np.float64)
    return (rtol if rtol is not None else _DEFAULT_RTOL.get(dt, 1e-5),
            atol if atol is not None else _DEFAULT_ATOL.get(dt, 1e-20))


def almost_equal(a, b, rtol=None, atol=None, equal_nan: bool = False) -> bool:
    """Whether ``a`` and ``b`` agree elementwise within ``rtol``/``atol``."""
    a, b = _np(a), _np(b)
    rtol, atol = _tols(a, b, rtol, atol)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol,
                                                   equal_nan=equal_nan))


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"),
                        equal_nan: bool = False) -> None:
    """Raise ``AssertionError`` naming the worst element when ``a`` and ``b`` differ."""
    a, b = _np(a), _np(b)
    if a.shape != b.shape:
        raise AssertionError(f"Shapes differ: {names[0]} {a.shape} vs {names[1]} {b.shape}")
    rtol, atol = _tols(a, b, rtol, atol)
    if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    err = np.abs(a.astype(np.float64) - b) / (atol + rtol * np.abs(b))
    idx = np.unravel_index(int(np.nanargmax(err)), err.shape) if err.size else ()
    raise AssertionError(
        f"Items are not equal (rtol={rtol}, atol={atol}): worst at {idx}: "
        f"{names[0]}={a[idx]!r}, {names[1]}={b[idx]!r}, error ratio {err[idx]:.3g}")


def same(a, b) -> bool:
    """Exact equality of two arrays."""
    return bool(np.array_equal(_np(a), _np(b)))


def rand_shape_nd(num_dim: int, dim: int = 10) -> tuple[int, ...]:
    """A random shape of ``num_dim`` dims, each in ``[1, dim]``."""
    return tuple(int(d) for d in np.random.randint(1, dim + 1, size=num_dim))


def rand_ndarray(shape, stype: str = "default", density=None, dtype=None, ctx=None) -> NDArray:
    """A dense random NDArray (uniform in [0, 1)); sparse storage types are not supported."""
    if stype != "default":
        raise MXNetError(f"rand_ndarray: storage type {stype!r} is not supported by symgraph")
    return array(np.random.uniform(size=shape), ctx=ctx or default_context(),
                 dtype=dtype or np.float32)


def _as_dict(sym: Symbol, values, names: list[str]) -> dict[str, np.ndarray]:
    if values is None:
        return {}
    if isinstance(values, Mapping):
        return {k: _np(v) for k, v in values.items()}
    if len(values) != len(names):
        raise ValueError(f"{len(values)} arrays given for {len(names)} names {names}")
    return {n: _np(v) for n, v in zip(names, values)}


def _bind(sym: Symbol, location, aux_states, ctx, grad_req="write", dtype=np.float32):
    args = _as_dict(sym, location, sym.list_arguments())
    aux = _as_dict(sym, aux_states, sym.list_auxiliary_states())
    exe = sym.simple_bind(ctx or default_context(), grad_req=grad_req,
                          type_dict={k: dtype for k in args},
                          **{k: v.shape for k, v in args.items()})
    for k, v in args.items():
        exe.arg_dict[k][:] = v
    for k, v in aux.items():
        exe.aux_dict[k][:] = v
    return exe


def check_symbolic_forward(sym: Symbol, location, expected, rtol=1e-4, atol=None,
                           aux_states=None, ctx=None, equal_nan=False, dtype=np.float32):
    """Bind ``sym`` at ``location``, run an inference forward, compare with ``expected``."""
    exe = _bind(sym, location, aux_states, ctx, grad_req="null", dtype=dtype)
    outputs = [o.asnumpy() for o in exe.forward(is_train=False)]
    if isinstance(expected, Mapping):
        expected = [expected[k] for k in sym.list_outputs()]
    for name, out, want in zip(sym.list_outputs(), outputs, expected):
        assert_almost_equal(out, _np(want), rtol, atol, (f"EXPECTED_{name}", f"FORWARD_{name}"),
                            equal_nan)
    return outputs


def check_symbolic_backward(sym: Symbol, location, out_grads, expected, rtol=1e-5, atol=None,
                            aux_states=None, grad_req="write", ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=np.float32):
    """Run forward(is_train=True) and backward(out_grads); compare gradients with ``expected``."""
    exe = _bind(sym, location, aux_states, ctx, grad_req=grad_req, dtype=dtype)
    exe.forward(is_train=True)
    grads = None if out_grads is None else [array(_np(g), dtype=dtype) for g in
                                            (out_grads if isinstance(out_grads, (list, tuple))
                                             else [out_grads])]
    exe.backward(grads)
    if not isinstance(expected, Mapping):
        expected = dict(zip(sym.list_arguments(), expected))
    got = {k: v.asnumpy() for k, v in exe.grad_dict.items() if v is not None}
    for name, want in expected.items():
        if want is None:
            continue
        assert_almost_equal(got[name], _np(want), rtol, atol,
                            (f"EXPECTED_{name}", f"BACKWARD_{name}"), equal_nan)
    return got


def numeric_grad(exe, location: dict[str, np.ndarray], eps: float = 1e-4,
                 use_forward_train: bool = True, proj=None) -> dict[str, np.ndarray]:
    """Central-difference gradients of ``sum(proj * output)`` at ``location``."""
    grads = {}
    for name, value in location.items():
        flat = value.reshape(-1).astype(np.float64)
        g = np.zeros_like(flat)
        for k in range(flat.size):
            vals = []
            for delta in (eps, -eps):
                bumped = flat.copy()
                bumped[k] += delta
                exe.arg_dict[name][:] = bumped.reshape(value.shape)
                out = exe.forward(is_train=use_forward_train)[0].asnumpy()
                vals.append(float((out * (1 if proj is None else proj)).sum()))
            g[k] = (vals[0] - vals[1]) / (2 * eps)
        exe.arg_dict[name][:] = value
        grads[name] = g.reshape(value.shape)
    return grads


def check_numeric_gradient(sym: Symbol, location, aux_states=None, numeric_eps=1e-3,
                           rtol=1e-2, atol=None, grad_nodes=None, use_forward_train=True,
                           ctx=None, grad_stype_dict=None, dtype=np.float64):
    """Compare ``sym``'s symbolic gradients with central finite differences.

    Like MXNet, the output is projected on a random array so one scalar is differentiated.
    """
    args = _as_dict(sym, location, sym.list_arguments())
    nodes = list(grad_nodes) if grad_nodes is not None else list(args)
    reqs = {k: ("write" if k in nodes else "null") for k in sym.list_arguments()}
    exe = _bind(sym, args, aux_states, ctx, grad_req=reqs, dtype=dtype)
    out = exe.forward(is_train=use_forward_train)[0]
    proj = np.random.uniform(-1, 1, size=out.shape)
    exe._rt.generator.manual_seed(0)
    exe.forward(is_train=use_forward_train)
    exe.backward([array(proj, dtype=dtype)])
    symbolic = {k: exe.grad_dict[k].asnumpy().copy() for k in nodes}
    numeric = numeric_grad(exe, {k: args[k].astype(dtype) for k in nodes}, numeric_eps,
                           use_forward_train, proj)
    for name in nodes:
        assert_almost_equal(numeric[name], symbolic[name], rtol, atol,
                            (f"NUMERICAL_{name}", f"BACKWARD_{name}"))


def check_consistency(sym, ctx_list: Sequence[dict], scale=1.0, grad_req="write",
                      arg_params=None, aux_params=None, tol=None, raise_on_err=True,
                      ground_truth=None, equal_nan=False, rand_type=np.float64):
    """Run ``sym`` under each ``{'ctx':..., <arg>: shape, 'type_dict': {...}}`` and compare.

    The most precise dtype is the reference; outputs and gradients of the others must match
    within per-dtype tolerances (fp16 1e-1, fp32 1e-3, fp64 1e-5).
    """
    tol = tol or {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3,
                  np.dtype(np.float64): 1e-5}
    syms = sym if isinstance(sym, (list, tuple)) else [sym] * len(ctx_list)
    names = syms[0].list_arguments()
    shapes = {k: v for k, v in ctx_list[0].items() if k not in ("ctx", "type_dict")}
    params = dict(arg_params or {})
    for n in names:
        if n not in params:
            params[n] = np.random.normal(size=shapes.get(n) or _infer_arg_shape(syms[0], shapes,
                                                                                  n)) * scale
    results = [_run_consistency(s, spec, params, aux_params, grad_req)
               for s, spec in zip(syms, ctx_list)]
    dtypes = [np.dtype(spec.get("type_dict", {}).get(names[0], np.float32)) for spec in ctx_list]
    ref = int(np.argmax([dt.itemsize for dt in dtypes]))
    for i, (res, dt) in enumerate(zip(results, dtypes)):
        for key, value in res.items():
            try:
                assert_almost_equal(value, results[ref][key], rtol=tol[dt], atol=tol[dt],
                                    names=(f"ctx{i}_{key}", f"ctx{ref}_{key}"),
                                    equal_nan=equal_nan)
            except AssertionError:
                if raise_on_err:
                    raise
    return [res for res in results]


def _infer_arg_shape(sym, shapes, name):
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    return dict(zip(sym.list_arguments(), arg_shapes))[name]


def _run_consistency(sym, spec, params, aux_params, grad_req) -> dict[str, np.ndarray]:
    shapes = {k: v for k, v in spec.items() if k not in ("ctx", "type_dict")}
    types = spec.get("type_dict", {})
    exe = sym.simple_bind(spec.get("ctx", default_context()), grad_req=grad_req,
                          type_dict=types, **shapes)
    for k, arr in exe.arg_dict.items():
        arr[:] = params[k].astype(dtype_name(arr.dtype))
    for k, arr in exe.aux_dict.items():
        if aux_params and k in aux_params:
            arr[:] = _np(aux_params[k])
    outs = exe.forward(is_train=True)
    res = {f"out{i}": o.asnumpy().astype(np.float64) for i, o in enumerate(outs)}
    if grad_req != "null":
        exe.backward([array(np.ones(o.shape), dtype=o.dtype) for o in outs]
                     if not _all_loss(sym) else None)
        res.update({f"grad_{k}": v.asnumpy().astype(np.float64)
                    for k, v in exe.grad_dict.items() if v is not None})
    return res


def _all_loss(sym: Symbol) -> bool:
    return all(node.op is not None and node.op.loss for node, _ in sym._outputs)
