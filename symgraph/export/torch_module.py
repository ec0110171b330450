"""An MXNet model as a PyTorch module: :func:`to_torch` turns a Symbol and its parameters
into a ``torch.fx.GraphModule``.

Every MXNet node becomes one submodule call (``self.ops.<node>``) running the op's torch
reference with the node's parsed attributes, so the module is plain PyTorch code that
``torch.compile``, ``torch.export``, DDP/FSDP and ``state_dict()`` accept. Arguments with
values become ``nn.Parameter``s and auxiliary states buffers, under their MXNet names
(``fc1_weight``; a ``.`` in a name becomes ``_``). ``.train()`` and ``.eval()`` switch
MXNet's ``is_train``: Dropout drops and BatchNorm uses and updates batch statistics only in
training, as an executor's ``forward(is_train=True)`` does.

Gradients are autograd's through the references, which are MXNet's gradients for every op
whose gradient is the derivative of its forward. The ops that define another gradient (loss
heads such as ``SoftmaxOutput``, whose backward is ``softmax - onehot(label)`` whatever the
head gradient, and the ops in :data:`MXNET_GRADIENT`) run inside an
``autograd.Function`` whose backward is the op's own gradient rule, so the module's
parameter gradients equal the executor's.

>>> import symgraph as mx
>>> from symgraph.export import to_torch
>>> net = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=2, name='fc')
>>> m = to_torch(net, {'fc_weight': mx.nd.ones((2, 3)), 'fc_bias': mx.nd.zeros((2,))})
>>> sorted(m.state_dict())
['fc_bias', 'fc_weight']
>>> import torch
>>> m(torch.ones(1, 3))
tensor([[3., 3.]], grad_fn=<AddmmBackward0>)
"""
from __future__ import annotations

import keyword
import operator
import re

import torch
from torch import fx

from ..attrs import Params
from ..compiler.composite import _EagerBuilder
from ..ops.base import OpDef, Runtime
from ..symbol.graph import Node
from .graph import ExportError, ExportGraph, load_model, prepare


# ops whose MXNet gradient is not the derivative of their torch reference (checked over
# every op's cases by tests/test_export_torch.py): their backward runs the op's own rule;
# a predicate on the params picks the nodes (output_mean_var: MXNet ignores those heads)
def _always(p) -> bool:
    return True


def _mean_var_outputs(p) -> bool:
    return bool(p.get("output_mean_var"))


MXNET_GRADIENT: dict = {
    **dict.fromkeys(("BlockGrad", "stop_gradient", "_contrib_gradientmultiplier",
                     "_contrib_round_ste", "_contrib_sign_ste", "IdentityAttachKLSparseReg",
                     "_contrib_box_iou", "_contrib_box_encode", "_contrib_box_decode",
                     "_contrib_box_nms", "_contrib_MultiBoxDetection", "_contrib_Proposal",
                     "_contrib_MultiProposal", "CTCLoss", "_contrib_hawkesll",
                     "SoftmaxActivation", "_linalg_syevd"), _always),
    **dict.fromkeys(("BatchNorm", "BatchNorm_v1", "_contrib_SyncBatchNorm",
                     "_contrib_BatchNormWithReLU", "LayerNorm"), _mean_var_outputs),
    "LeakyReLU": lambda p: p.act_type == "selu",
}



def _never(p) -> bool:
    return False


def _rnn_forward(p, ins, aux, rt):
    from ..ops.rnn import autograd_forward
    return autograd_forward(p, ins, aux, rt)


# ops whose reference keeps plan plumbing (RNN's reserve of a detached autograd graph): the
# module runs this forward instead, differentiable by autograd
TORCH_FORWARD = {"RNN": _rnn_forward}


def to_torch(sym, arg_params=None, aux_params=None, input_shapes=None,
             input_types=None) -> fx.GraphModule:
    """A ``torch.fx.GraphModule`` computing ``sym`` with the given parameter values.

    Parameters
    ----------
    sym : Symbol or str
        The network (or the path of its ``-symbol.json``).
    arg_params, aux_params : dict of str to NDArray, or str
        Parameter values (or a ``.params`` path as ``arg_params``); arguments without a
        value (``data``, labels) become the module's inputs, in ``list_arguments`` order.
    input_shapes, input_types : dict, optional
        Shapes and dtypes of the inputs, needed only by graphs whose ops read an inferred
        shape (``zeros`` with ``0`` dims, RNN begin states).

    Returns
    -------
    torch.fx.GraphModule
        Its ``forward`` takes the inputs (labels of loss heads optional) and returns the
        symbol's output, or a tuple of them.
    """
    params = {**(arg_params or {}), **(aux_params or {})} \
        if not isinstance(arg_params, str) else arg_params
    sym, values = load_model(sym, params)
    shapes = input_shapes or {}
    graph = prepare(sym, values, shapes, input_types or {}) if shapes else None
    return _build(sym, values, graph)


def _safe(name: str) -> str:
    """A name an ``nn.Module`` attribute can take (``.`` and other marks become ``_``)."""
    safe = re.sub(r"\W", "_", name) or "_"
    if safe[0].isdigit() or keyword.iskeyword(safe):
        safe = f"_{safe}"
    return safe


class _Names:
    """Unique attribute names for MXNet names."""

    def __init__(self, taken=()):
        self.used = set(taken)
        self.given: dict[str, str] = {}  # attribute -> MXNet name

    def __call__(self, name: str) -> str:
        base = safe = _safe(name)
        count = 1
        while safe in self.used:
            safe, count = f"{base}_{count}", count + 1
        self.used.add(safe)
        self.given[safe] = name
        return safe


def _build(sym, values: dict, graph: ExportGraph | None) -> fx.GraphModule:
    """The GraphModule of ``sym``: placeholders, parameters, one call per op node."""
    from ..compiler.composite import expand
    from ..symbol.graph import IndexedGraph
    # composite ops as the primitives they expand to, as the executor runs them
    ig = graph.ig if graph is not None else IndexedGraph(expand(list(sym._outputs)))
    root, ops = torch.nn.Module(), torch.nn.Module()
    root.ops = ops
    g = fx.Graph()
    names, env = _Names({"ops"}), {}
    aux_names = set(sym.list_auxiliary_states())
    label = _labels(sym, values)
    hidden = _hidden_reads(ig)
    for nid, node in enumerate(ig.nodes):
        if node.op is None:
            env[id(node)] = _variable(g, root, node, values, names, aux_names, label)
            continue
        if node.op.special.eager is not None:
            raise ExportError(f"Error in {node.where}: its output shape depends on input "
                              "values; it cannot be exported to a static graph")
        shapes = _node_out_shapes(graph, nid) if graph is not None else None
        call = _OpCall(node, shapes, id(node) in hidden)
        attr = names(node.name)
        ops.add_module(attr, call)
        args = tuple(_value(g, env, src, k) for src, k in node.inputs)
        res = g.create_node("call_module", f"ops.{attr}", args, name=attr)
        env[id(node)] = (res, node.num_outputs, {})
    outs = [_value(g, env, n, k) for n, k in ig.heads]
    g.output(outs[0] if len(outs) == 1 else tuple(outs))
    gm = fx.GraphModule(root, g, class_name="MXNetModel")
    gm.mxnet_names = names.given  # attribute -> MXNet name, for state_dict users
    return gm


def _value(g: fx.Graph, env: dict, node: Node, k: int):
    """The fx value of output ``k`` of ``node`` (a getitem made on first use: a call returns
    a tensor for a single output, a tuple of all of them otherwise)."""
    got = env[id(node)]
    if not isinstance(got, tuple):
        return got  # a placeholder or parameter
    res, n_out, items = got
    if n_out == 1:
        return res
    if k not in items:
        items[k] = g.call_function(operator.getitem, (res, k))
    return items[k]


def _hidden_reads(ig) -> set[int]:
    """Ids of the nodes some of whose hidden outputs are read (or are heads)."""
    reads = [e for n in ig.nodes for e in n.inputs] + list(ig.heads)
    return {id(n) for n, k in reads if n.op is not None and k >= n.num_visible_outputs}


def _labels(sym, values: dict) -> set[str]:
    from .graph import data_inputs
    return set(data_inputs(sym, values)[1])


def _variable(g: fx.Graph, root: torch.nn.Module, node: Node, values: dict, names: _Names,
              aux_names: set, labels: set):
    """A placeholder (an input) or a parameter/buffer read (a value given)."""
    if node.name not in values:
        if node.name in labels:
            return g.placeholder(names(node.name), default_value=None)
        return g.placeholder(names(node.name))
    attr = names(node.name)
    tensor = values[node.name].clone()
    if node.name in aux_names:
        root.register_buffer(attr, tensor)
    else:
        root.register_parameter(attr, torch.nn.Parameter(
            tensor, requires_grad=tensor.is_floating_point()))
    return g.get_attr(attr)


def _node_out_shapes(graph: ExportGraph, nid: int) -> list[tuple]:
    row = graph.ig.row_ptr
    return graph.shapes[row[nid]:row[nid + 1]]


class _OpCall(torch.nn.Module):
    """One MXNet node: its op's torch reference with the node's attributes."""

    def __init__(self, node: Node, out_shapes: list[tuple] | None, hidden_read: bool = False):
        super().__init__()
        self.op: OpDef = node.op
        self.where = node.where
        p = node.params
        if self.op.hints.reads_out_shape:
            if not out_shapes:
                raise ExportError(f"Error in {node.where}: its output shape comes from "
                                  "inference; give input_shapes")
            p = Params({**p, "_out_shape": tuple(out_shapes[0])})
        self.p = p
        self.n_reg = node.num_regular_inputs()
        self.fn = TORCH_FORWARD.get(self.op.name, self.op.forward)
        # a composite that shows an inner node's hidden outputs (BatchNorm_v1's mean and
        # var) gets no gradient through them, as the inner op's rule ignores them
        self.rule = self.op.loss or hidden_read or MXNET_GRADIENT.get(self.op.name, _never)(p)
        self.n_out = node.num_outputs

    def forward(self, *ins):
        if not self.op.loss and any(t is None for t in ins):
            # computed from a label the caller left out (inference): missing too
            return None if self.n_out == 1 else (None,) * self.n_out
        if self.rule and torch.is_grad_enabled() and any(
                t is not None and t.requires_grad for t in ins):
            outs = _MXNetRule.apply(self, *ins)
        else:
            outs = self.run(ins)
        return outs[0] if self.n_out == 1 else tuple(outs)

    def run(self, ins) -> tuple:
        """The op's outputs (a tuple, hidden outputs included)."""
        device = next((t.device for t in ins if t is not None), torch.device("cpu"))
        rt = Runtime(is_train=self.training, device=device)
        n = self.n_reg
        return tuple(self.fn(self.p, list(ins[:n]), list(ins[n:]), rt))

    def extra_repr(self) -> str:
        return self.where


class _EagerGrad(_EagerBuilder):
    """A gradient rule's builder on tensors: each op's forward in turn."""

    def zeros(self, like: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(like)


class _MXNetRule(torch.autograd.Function):
    """An op run forward by its reference and backward by its MXNet gradient rule."""

    @staticmethod
    def forward(ctx, call: _OpCall, *ins):
        outs = call.run(ins)
        ctx.call, ctx.ins, ctx.outs = call, ins, outs
        return outs

    @staticmethod
    def backward(ctx, *ograds):
        call, ins = ctx.call, ctx.ins
        if any(t is None for t in ins[:call.n_reg]):
            raise ExportError(f"Error in {call.where}: its gradient needs every input; "
                              "give the labels to the module")
        ograds = [g if g is not None else torch.zeros_like(o)
                  for g, o in zip(ograds, ctx.outs)]
        rt = Runtime(is_train=True, device=ograds[0].device)
        # grad mode on: some backward references differentiate with autograd themselves
        # (ROIAlign's); the rule's results are values, not part of a graph
        with torch.enable_grad():
            grads = call.op.gradient(_EagerGrad(call.where, rt), call.p, list(ins),
                                     list(ctx.outs), ograds)
        grads = [None if g is None else g.detach() for g in grads]
        grads = grads + [None] * (len(ins) - len(grads))
        return (None, *[g if t is not None and t.requires_grad else None
                        for g, t in zip(grads, ins)])


def block_to_torch(block, *example_inputs) -> fx.GraphModule:
    """A gluon HybridBlock (or SymbolBlock) as a GraphModule, traced on symbolic inputs
    named ``data`` (``data0``, ``data1``, ... for several)."""
    from .. import symbol
    n = max(len(example_inputs), 1)
    names = ["data"] if n == 1 else [f"data{i}" for i in range(n)]
    out = block(*[symbol.var(name) for name in names])
    if isinstance(out, (list, tuple)):
        out = symbol.Group(list(out))
    params = block.collect_params()
    values = {p.name: p.data() for p in params.values() if p._data is not None}
    aux = set(out.list_auxiliary_states())
    return to_torch(out, {k: v for k, v in values.items() if k not in aux},
                    {k: v for k, v in values.items() if k in aux})
