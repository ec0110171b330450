"""``SymbolBlock``: a Gluon block made from a Symbol (a pretrained network, a feature
extractor, a model written by ``HybridBlock.export``), as MXNet 1.9.1's.
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError
from ..ndarray.ndarray import _STORAGE_TYPE_STR_TO_ID, NDArray
from ..symbol import symbol as _sym
from ..symbol.symbol import Symbol
from .block import HybridBlock, _flatten, _np_dtype_name, _regroup
from .parameter import ParameterDict

__all__ = ["SymbolBlock"]


def _common_prefix(names: list[str]) -> str:
    if not names:
        return ""
    prefix = names[0]
    for name in names:
        i = 0
        while i < len(prefix) and i < len(name) and prefix[i] == name[i]:
            i += 1
        prefix = prefix[:i]
    return prefix


class SymbolBlock(HybridBlock):
    """A Block made from a Symbol (a pretrained network, a feature extractor):
    ``SymbolBlock(outputs, inputs, params=None)``."""

    _op_hooks_always = True  # it always runs its graph in MXNet too

    @staticmethod
    def imports(symbol_file: str, input_names, param_file: str | None = None, ctx=None,
                allow_missing: bool = False, ignore_extra: bool = False) -> SymbolBlock:
        """Load a model written by ``HybridBlock.export`` or ``Module.save_checkpoint``."""
        from ..symbol import load as load_symbol
        sym = load_symbol(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        if param_file is None:
            inputs = [_sym.Variable(i, dtype="float32") for i in input_names]
        else:
            inputs = [_sym.Variable(i) for i in input_names]
        ret = SymbolBlock(sym, inputs)
        if param_file is not None:
            ret.collect_params().load(param_file, ctx, allow_missing, ignore_extra,
                                      cast_dtype=True, dtype_source="saved")
        return ret

    def __repr__(self) -> str:
        out = self._cached_graph[1]
        return (f"{self.__class__.__name__}(\n{out} : {len(self._cached_graph[0])} -> "
                f"{len(out.list_outputs())}\n)")

    def __init__(self, outputs, inputs, params=None):
        super().__init__(prefix=None, params=None)
        self._prefix = ""
        self._params = ParameterDict("", params)
        if isinstance(inputs, Symbol) and len(inputs.list_outputs()) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        syms, self._in_format = _flatten(inputs, "input")
        out, self._out_format = _flatten(outputs, "output")
        names = set()
        for s in syms:
            if len(s.get_internals().list_outputs()) != 1:
                raise AssertionError(f"Input symbols must be variable, but {s} is an output of "
                                     "operators")
            names.add(s.name)
        _check_dense(out)
        out = _sym.Group(out) if len(out) > 1 else out[0]
        arg_types, aux_types = _param_types(syms, out)
        for arg, dtype in zip(out.list_arguments(), arg_types):
            if arg not in names:
                self.params.get(arg, allow_deferred_init=True, dtype=dtype)
        for aux, dtype in zip(out.list_auxiliary_states(), aux_types):
            if aux not in names:
                self.params.get(aux, grad_req="null", allow_deferred_init=True, dtype=dtype)
        self._cached_graph = syms, out
        cut = len(_common_prefix(list(self._params.keys())))
        self._reg_params = {key[cut:]: val for key, val in self._params.items()}

    def forward(self, x, *args):
        if isinstance(x, NDArray):
            return self._call_cached_op(x, *args)
        if not isinstance(x, Symbol):
            raise AssertionError("HybridBlock requires the first argument to forward be either "
                                 f"Symbol or NDArray, but got {type(x)}")
        flat, fmt = _flatten([x] + list(args), "input")
        if fmt != self._in_format:
            raise AssertionError("Invalid input format")
        ret = self._cached_graph[1](**{k.name: v for k, v in zip(self._cached_graph[0], flat)})
        return _regroup(list(ret), self._out_format)

    def _clear_cached_op(self) -> None:
        graph = self._cached_graph
        super()._clear_cached_op()
        self._cached_graph = graph

    def cast(self, dtype) -> None:
        """Cast the parameters; in float16, BatchNorm's statistics and scale stay float32
        (MXNet's BatchNorm needs them so)."""
        super().cast(dtype)
        if np.dtype(dtype).name != "float16":
            return
        inputs = self._cached_graph[1].get_internals().list_inputs()
        for var, stats in (("running_var", ("running_mean",)), ("moving_var", ("moving_mean",))):
            for node in inputs:
                if not node.endswith(var):
                    continue
                base = node[:-len(var)]
                sibs = [base + t for t in stats + ("gamma", "beta")]
                if all(p in inputs for p in sibs):
                    for name in [node] + sibs:
                        self.params.get(name).cast("float32")

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError


def _check_dense(outputs: list) -> None:
    """MXNet's SymbolBlock refuses row_sparse parameters; symgraph has no sparse storage."""
    row_sparse = str(_STORAGE_TYPE_STR_TO_ID["row_sparse"])
    for out in outputs:
        for node in out._graph().nodes:
            if node.attrs.get("__storage_type__") == row_sparse:
                raise AssertionError(f"SymbolBlock doesn't support Parameter '{node.name}' "
                                     "because its storage type is 'row_sparse'.")


def _param_types(inputs: list, out: Symbol):
    """The dtypes of the symbol's parameters as inference gives them from the inputs'
    ``__dtype__`` attributes (float32 where nothing says)."""
    given = {}
    for s in inputs:
        dtype = s.attr("__dtype__")
        if dtype is not None:
            given[s.name] = _dtype_from_attr(dtype)
    try:
        arg_types, _, aux_types = out.infer_type(**given)
    except MXNetError:
        arg_types = aux_types = None
    if arg_types is None:
        return (["float32"] * len(out.list_arguments()),
                ["float32"] * len(out.list_auxiliary_states()))
    return ([_np_dtype_name(t) for t in arg_types], [_np_dtype_name(t) for t in aux_types])


def _dtype_from_attr(value: str) -> str:
    from ..symbol.symbol import _as_dtype
    return _as_dtype(value)
