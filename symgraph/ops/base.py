"""The operator definition: one :class:`OpDef` holds everything about an operator.

An ``OpDef`` carries MXNet's parameter schema, input/aux/output names, a shape rule,
a dtype rule, a torch reference forward, an optional Triton kernel, a gradient rule
built from other registered ops, and its own test cases. The executor, the autodiff
pass and the planner read these fields and never branch on op names.

Shapes follow MXNet 1.x (legacy, non-numpy) conventions: a shape is a tuple of ints,
``()`` means "unknown" and a ``0`` entry is an unknown dimension.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from ..attrs import Param, Params
from ..base import DTypeError, OpNotFoundError, OpNotImplementedError, ShapeError
from ..sparse.rules import Storage

Shape = tuple[int, ...]


class Runtime:
    """Per-step state a forward call can read: training flag, random generator, device,
    and ``state``: what Python-level ops keep per run (an executor holds one Runtime; the
    Custom op keeps its ``CustomOp`` instances there, one per node)."""

    __slots__ = ("is_train", "generator", "device", "state", "defer_checks", "checks")

    def __init__(self, is_train: bool = False, generator: torch.Generator | None = None,
                 device: torch.device | None = None):
        self.is_train = is_train
        self.generator = generator
        self.device = device if device is not None else torch.device("cpu")
        self.state: dict | None = None
        # on an accelerator an op's data check (an index out of bounds, a failed pivot) is
        # not read at once: reading it would stop the step for a device-to-host copy
        self.defer_checks = self.device.type != "cpu"
        self.checks: list = []  # (device flag, error) pairs of the run in progress


def draw_seed(rt: Runtime) -> torch.Tensor:
    """A 62-bit launch seed for a Philox kernel (``kernels/philox.py``): a one-element int64
    tensor drawn on the runtime's device from its generator (``mx.random.seed`` reproduces
    it). Nothing is read back to the host, so a step list that draws can be captured as a
    CUDA graph, and each replay draws a new seed (torch advances a captured generator)."""
    gen = rt.generator
    return torch.randint(0, 1 << 62, (1,), generator=gen,
                         device=gen.device if gen is not None else rt.device)


def check(rt: Runtime | None, bad: torch.Tensor, error: Callable[[], Exception],
          traced: str) -> None:
    """Raise ``error()`` if the device boolean ``bad`` is true: at once on the CPU; with
    ``rt.defer_checks`` (an accelerator) recorded in ``rt.checks``, and the executor raises
    it where the outputs are read (as MXNet does), so the step needs no device-to-host
    sync and can be captured as a CUDA graph. Under torch.compile/export the check runs on
    the device (``torch._assert_async`` with the message ``traced``)."""
    if torch.compiler.is_compiling():
        torch._assert_async(~bad, traced)
    elif rt is not None and rt.defer_checks:
        rt.checks.append((bad, error))
    elif bool(bad):
        raise error()


class GradValue(Protocol):
    """A handle on a value in the backward graph (one output of a node)."""


class GradBuilder(Protocol):
    """What a gradient rule may do: add nodes of registered ops to the backward graph."""

    def op(self, name: str, *inputs: GradValue, **attrs: Any) -> GradValue: ...

    def multi(self, name: str, *inputs: GradValue, **attrs: Any) -> list[GradValue]: ...

    def zeros(self, like: GradValue) -> GradValue:
        """A zero gradient shaped like ``like``: where other gradients reach the same entry
        it adds nothing and is dropped (no ``add_n`` with zeros), as MXNet's zero ops."""


# (p, ins, aux, rt) -> outputs
ForwardFn = Callable[[Params, Sequence[torch.Tensor], Sequence[torch.Tensor], Runtime],
                     Sequence[torch.Tensor]]
# (p, shapes of inputs then aux) -> (completed input+aux shapes, output shapes) or None
ShapeFn = Callable[[Params, list[Shape]], "tuple[list[Shape], list[Shape]] | None"]
# (p, dtypes of inputs then aux; None = unknown) -> (completed, output dtypes) or None;
# a single output dtype stands for every output
TypeFn = Callable[[Params, list], "tuple[list, list] | None"]
# (g, p, ins, outs, ograds) -> one gradient (or None) per input
GradFn = Callable[[GradBuilder, Params, list, list, list], list]


@dataclass(frozen=True)
class Case:
    """A test case for an op: input shapes, attributes and how to draw inputs.

    ``low``/``high`` bound uniform inputs; ``ints`` maps an input index to an exclusive
    integer upper bound (indices, labels); ``grad`` False skips the finite-difference
    check of the forward (for example a loss head, whose gradient is by definition).
    ``loss(p, ins) -> scalar tensor`` is the loss a loss head's gradient differentiates;
    its central differences are checked against the head's data gradient instead.
    """

    shapes: tuple[Shape, ...]
    attrs: dict = field(default_factory=dict)
    low: float = -1.0
    high: float = 1.0
    ints: dict = field(default_factory=dict)
    grad: bool = True
    no_grad_inputs: tuple[int, ...] = ()
    train: bool = True
    rtol: float = 1e-4
    atol: float = 1e-5
    loss: Callable | None = None


def _names(spec, p: Params) -> list[str]:
    """A name list given as a list, or as a function of the params (variadic ops)."""
    return spec(p) if callable(spec) else list(spec)


def same_type(p: Params, types: list):
    """Default dtype rule: every input, aux and output shares one dtype."""
    known = [t for t in types if t is not None]
    if not known:
        return None
    first = known[0]
    for t in known:
        if t != first:
            raise DTypeError(f"dtype inconsistent: got {t} and {first}")
    return [first] * len(types), [first]


# a name list, or params -> names (variadic ops)
Names = Sequence[str] | Callable[[Params], Sequence[str]]


@dataclass(frozen=True)
class PlanHints:
    """How the plan may treat a node of the op beyond running it (a handful of ops each)."""

    # output 0 is input 0 unchanged or reshaped: with equal shapes the plan aliases it (no launch)
    view: bool = False
    # (output, input) pairs whose storage the output may take over when the input dies there
    inplace: tuple[tuple[int, int], ...] = ()
    # indices of regular inputs the forward writes in place (MXNet's FMutateInputs: an
    # optimizer's momentum and variance), a tuple or p -> tuple; the plan never aliases them
    mutates: tuple[int, ...] | Callable[[Params], tuple[int, ...]] = ()
    mutates_aux: bool = False  # training forward updates aux states in place
    # forward reads p.get("_needed") (a bool per output, set by the plan when some outputs
    # have no reader) and may return None for outputs nobody reads
    skips_unused_outputs: bool = False
    # forward reads p.get("_out_shape"), the output shape after inference, set by the plan
    # (creation ops whose ``shape`` param may leave dims 0 for inference to complete)
    reads_out_shape: bool = False
    # the activation this op applies, if it is one (relu/sigmoid/tanh): str or p -> str|None
    activation: str | Callable[[Params], str | None] | None = None
    # (p, act) -> a kernel computing this op with the activation fused into its epilogue,
    # or None where it cannot (GEMM-based ops: bias + activation in one launch)
    epilogue: Callable | None = None
    # under backend 'auto' on a GPU the first call times the Triton kernel against the torch
    # reference (cuDNN) on the real inputs and keeps the faster (pure ops: run twice there)
    measured: bool = False


@dataclass(frozen=True)
class Special:
    """Hooks of the few ops that break a general rule."""

    # (p, input shapes, output shapes) -> input shapes completed from what is known of the
    # outputs, for MXNet rules that also run backwards (FullyConnected takes its batch size
    # from its output: a zeros begin state of shape (0, H) learns N from the graph)
    infer_inputs_from_outputs: Callable | None = None
    # extra attributes for inputs MXNet creates as variables, by slot name
    # (BatchNorm's moving_mean gets __init__ '["zero", {}]')
    var_attrs: dict[str, dict[str, str]] | None = None
    # an op whose output shape depends on input values (boolean_mask): (b, p, ins) -> outs,
    # run imperatively (mx.nd) in place of ``forward``: ``b.op(name, *arrays, **attrs)`` calls
    # registered fixed-shape ops (recorded under autograd, so their gradients apply),
    # ``b.value(array)`` reads a tensor, ``b.array(tensor)`` wraps one, ``b.constant(tensor,
    # *arrays)`` wraps one made from ``arrays`` with zero gradient. Bound graphs reject it.
    eager: Callable | None = None
    # (attrs, where) -> Params for an op whose attributes are no fixed schema (Custom: op_type
    # plus the prop's own keyword strings); None: ``params`` is the schema
    parse: Callable | None = None


@dataclass(frozen=True, eq=False)
class OpDef:
    """Everything about one operator; see the module docstring."""

    name: str
    forward: ForwardFn = None  # type: ignore[assignment] # None: derived from ``decompose``
    infer_shape: ShapeFn = None  # type: ignore[assignment] # None: derived from ``decompose``
    params: tuple[Param, ...] = ()
    inputs: Names = ("data",)
    aux: Names = ()
    outputs: Names = ("output",)  # "_..." names: plan plumbing MXNet has not (RNN's reserve)
    num_visible: Callable[[Params], int] | None = None
    infer_type: TypeFn = None  # type: ignore[assignment] # None: derived, or same_type
    gradient: GradFn | None = None
    aliases: tuple[str, ...] = ()
    kernel: ForwardFn | None = None  # Triton implementation; None = the reference
    cases: tuple[Case, ...] = ()
    doc: str = ""
    loss: bool = False  # gradient ignores the head gradient (SoftmaxOutput, MakeLoss, ...)
    hidden: bool = False  # internal op (backward helpers); no public sym.X function
    key_var_num_args: str | None = None  # param that counts variadic inputs ("num_args")
    # draws from the generator (forward is not a pure function): bool, or p -> bool; or
    # "device" (or p -> "device"): it draws only on the device (``draw_seed``, the device
    # generator), with no host read, so a step list running it can be captured
    random: bool | str | Callable[[Params], bool | str] = False
    # False: MXNet registers no gradient (an optimizer update); backward through it is an error
    differentiable: bool = True
    # Triton expression of an elementwise op: a str.format template over the inputs ({0}, {1},
    # ...) and params ({scalar}), e.g. "tl.maximum({0}, 0.0)"; or p -> template. The plan
    # lowers such ops (alone or fused into chains) to generated kernels.
    expr: str | Callable[[Params], str | None] | None = None
    # cross-parameter validation run when a node's attributes are parsed (MXNet's attr_parser)
    check: Callable[[Params], None] | None = None
    # bind-time specialisation of the torch reference: (p, input+aux shapes, output shapes,
    # out) -> a forward for exactly these shapes, with the per-step work (axis normalisation,
    # flattening, parameter decoding) done once. Given ``out`` (a tensor) the returned forward
    # writes its single output there and returns ``(out,)``. None: nothing to specialise.
    prepare: Callable | None = None
    # a composite op: (b, p, ins) -> outs builds the op from registered ops through a
    # builder like the gradient rules' (``b.op``, ``b.multi``; ``name=`` tags the node). Bound
    # graphs run the expansion (compiler.composite), never the op itself; forward, shape and
    # dtype rules default to ones derived from it (an explicit shape rule may override).
    decompose: Callable | None = None
    hints: PlanHints = PlanHints()
    special: Special = Special()
    storage: Storage | None = None  # kernels on sparse storage (row_sparse, csr)

    def __post_init__(self):
        if self.decompose is not None:
            from ..compiler import composite  # the mechanism works on graphs, above this module
            derived = {"forward": composite.eager_forward, "infer_shape": composite.derived_shape,
                       "infer_type": composite.derived_type}
            for key, make in derived.items():
                if getattr(self, key) is None:
                    object.__setattr__(self, key, make(self))
        elif self.infer_type is None:
            object.__setattr__(self, "infer_type", same_type)
        assert self.forward is not None and self.infer_shape is not None, self.name

    def input_names(self, p: Params) -> list[str]:
        return _names(self.inputs, p)

    def aux_names(self, p: Params) -> list[str]:
        return _names(self.aux, p)

    def output_names(self, p: Params) -> list[str]:
        return _names(self.outputs, p)

    def private_output(self, p: Params, index: int) -> bool:
        """Whether output ``index`` is plan plumbing MXNet does not have (name ``_...``)."""
        return self.output_names(p)[index].startswith("_")

    def mutated_inputs(self, p: Params) -> tuple[int, ...]:
        """Indices of the inputs a node with these params writes in place."""
        mutates = self.hints.mutates
        return tuple(mutates(p) if callable(mutates) else mutates)

    def draws_random(self, p: Params) -> bool:
        """Whether a node with these params draws random numbers."""
        return bool(self.random(p) if callable(self.random) else self.random)

    def draws_on_host(self, p: Params) -> bool:
        """Whether a node with these params draws random numbers through the host (a
        CUDA graph would replay the draw it captured), not only on the device."""
        kind = self.random(p) if callable(self.random) else self.random
        return bool(kind) and kind != "device"

    def activation_name(self, p: Params) -> str | None:
        """Which activation the op is (None: not a pure activation)."""
        activation = self.hints.activation
        return activation(p) if callable(activation) else activation

    def triton_expr(self, p: Params) -> str | None:
        """The Triton template for these params (None: not an elementwise op)."""
        return self.expr(p) if callable(self.expr) else self.expr

    def shape_from_outputs(self) -> Callable | None:
        """How inputs are completed from known outputs: the op's own rule, or the identity
        of the same-shape rules (MXNet's elementwise shape inference runs both ways)."""
        if self.special.infer_inputs_from_outputs is not None:
            return self.special.infer_inputs_from_outputs
        return _SAME_SHAPE_INVERSES.get(self.infer_shape)

    def visible_outputs(self, p: Params) -> int:
        return self.num_visible(p) if self.num_visible else len(self.output_names(p))


OPS: dict[str, OpDef] = {}
"""Every registered operator under its canonical name and each alias."""


def register(op: OpDef) -> OpDef:
    """Add ``op`` (and its aliases) to :data:`OPS`; a name may be registered once."""
    for name in (op.name, *op.aliases):
        assert name not in OPS, f"operator {name} registered twice"
        OPS[name] = op
    return op


@dataclass(frozen=True)
class Rewrite:
    """A bind-time graph rewrite, declared beside the op it introduces.

    ``apply(node, ctx)`` is tried on every node whose op is ``root``, inputs first; it
    returns the replacement node (made with ``ctx.node``) or None. ``ctx`` (see
    :mod:`symgraph.compiler.rewrite`) tells how many readers an entry has in the user's graph and
    its inferred shape and dtype. A rewrite must not change any value the graph can
    observe: heads, their gradients, and entries read elsewhere.
    """

    name: str
    root: str
    apply: Callable


REWRITES: dict[str, list[Rewrite]] = {}
"""Registered rewrites by the op name they start from."""


def register_rewrite(rule: Rewrite) -> Rewrite:
    """Add a graph rewrite (see :mod:`symgraph.compiler.rewrite`)."""
    assert all(r.name != rule.name for r in REWRITES.get(rule.root, ())), rule.name
    REWRITES.setdefault(rule.root, []).append(rule)
    return rule


def get_op(name: str) -> OpDef:
    """Look an operator up by name or alias; unknown names raise ``OpNotFoundError``."""
    try:
        return OPS[name]
    except KeyError:
        from .mxnet_names import MXNET_OPERATORS
        if name in MXNET_OPERATORS:
            raise OpNotImplementedError(
                f"operator {name!r} is not supported by symgraph: MXNet 1.9.1 has it, "
                "symgraph does not implement it yet (the operators issue tracks it)") from None
        raise OpNotFoundError(f"Operator {name!r} is not registered in symgraph "
                              f"({len(set(OPS.values()))} operators are)") from None


def canonical_ops() -> list[OpDef]:
    """Each registered operator once, in registration order."""
    seen: dict[int, OpDef] = {}
    for op in OPS.values():
        seen.setdefault(id(op), op)
    return list(seen.values())


# ---------------------------------------------------------------- shape helpers

def known(shape: Shape | None) -> bool:
    """A shape is fully known: non-empty tuple without zero entries."""
    return bool(shape) and all(d > 0 for d in shape)


# The most dimensions an array may have: numpy's limit, so every value can be read back
# (``asnumpy``); inference refuses larger ranks (a shape attribute of 100 ones).
MAX_NDIM = 64


def merge_shape(a: Shape, b: Shape, what: str) -> Shape:
    """Unify two partial shapes, raising a ``ShapeError`` quoting both when they disagree
    (or when ``b``, a rule's result, has a negative dimension or more than ``MAX_NDIM``)."""
    if len(b) > MAX_NDIM or any(d < 0 for d in b):
        raise ShapeError(f"Invalid shape for {what}: {tuple(b)} (dimensions must be >= 0, "
                         f"at most {MAX_NDIM} of them)")
    if not a:
        return tuple(b)
    if not b:
        return tuple(a)
    if len(a) != len(b):
        raise ShapeError(f"Shape inconsistent for {what}: Provided={tuple(a)}, "
                         f"inferred shape={tuple(b)}")
    out = []
    for x, y in zip(a, b):
        if x and y and x != y:
            raise ShapeError(f"Shape inconsistent for {what}: Provided={tuple(a)}, "
                             f"inferred shape={tuple(b)}")
        out.append(x or y)
    return tuple(out)


def elemwise_shape(p: Params, shapes: list[Shape]):
    """All inputs and the single output share one shape."""
    merged: Shape = ()
    for i, s in enumerate(shapes):
        merged = merge_shape(merged, s, f"input {i}")
    if not merged:
        return None
    return [merged] * len(shapes), [merged]


def unary_shape(p: Params, shapes: list[Shape]):
    """Output has the input's shape."""
    if not shapes[0]:
        return None
    return shapes, [shapes[0]]


def grad_rule(forward_shape: ShapeFn) -> ShapeFn:
    """The shape rule of a backward helper ``(ograd, *forward inputs)`` computing the first
    input's gradient: ``forward_shape`` completes the forward inputs, ``ograd`` must have the
    forward's output shape (a file naming the helper cannot make the kernel read past it)."""
    def rule(p: Params, shapes: list[Shape]):
        ograd, ins = shapes[0], list(shapes[1:])
        if not ins[0]:
            return None
        forward = forward_shape(p, ins)
        if forward is not None:
            ins = list(forward[0])
            ograd = merge_shape(ograd, forward[1][0], "input 'ograd'")
        return [ograd] + ins, [ins[0]]
    return rule


def _first_from_output(p: Params, shapes: list[Shape], outs: list[Shape]):
    """Inverse of :func:`unary_shape`: input 0 has the output's shape."""
    if not outs or not outs[0]:
        return None
    return [merge_shape(shapes[0], outs[0], "input 0")] + list(shapes[1:])


def _all_from_output(p: Params, shapes: list[Shape], outs: list[Shape]):
    """Inverse of :func:`elemwise_shape`: every input has the output's shape."""
    if not outs or not outs[0]:
        return None
    return [merge_shape(s, outs[0], f"input {i}") for i, s in enumerate(shapes)]


_SAME_SHAPE_INVERSES: dict[Callable, Callable] = {unary_shape: _first_from_output,
                                                 elemwise_shape: _all_from_output}
