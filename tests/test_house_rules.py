"""The house rules a program can check (../shared/STYLE.md, "House rules"), so they hold
without a reviewer: file and function sizes, parameter counts, who reads the environment,
what kernels import, compiler passes that never branch on op names, every public op carrying
test cases, no module-level import cycles, every module importable alone, and no file-wide
lint suppressions."""
from __future__ import annotations

import ast
import itertools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import symgraph.ops  # noqa: F401 - fills the registry
from symgraph.ops.base import canonical_ops

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "symgraph").rglob("*.py"))
KERNELS = ROOT / "symgraph" / "kernels"
MAX_LINES = 800

# Files over the budget, each with why; the list may only shrink (a stale entry fails too).
OVER_BUDGET = {
    "symgraph/test_utils.py": "MXNet's mx.test_utils surface in one module; to be split",
    "symgraph/gluon/parameter.py": "Parameter, Constant and ParameterDict with MXNet's "
                                   "error texts; to be split",
}
# Compiler passes: they see ops only through OpDef fields, never by name.
PASSES = sorted((ROOT / "symgraph" / "compiler").glob("*.py")) + [
    ROOT / "symgraph" / name
    for name in ("executor.py", "module/executor_group.py", "symbol/infer.py")]


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def test_files_stay_under_the_line_budget():
    over = {_rel(p) for p in SOURCES if len(p.read_text().splitlines()) > MAX_LINES}
    assert over <= set(OVER_BUDGET), f"over {MAX_LINES} lines: {sorted(over - set(OVER_BUDGET))}"
    assert set(OVER_BUDGET) <= over, f"under budget now: {sorted(set(OVER_BUDGET) - over)}"


def _environment_reads(tree: ast.Module) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb") \
                and isinstance(node.value, ast.Name) and node.value.id == "os":
            lines.append(node.lineno)
    return lines


def test_only_the_config_module_touches_the_environment():
    allowed = {"symgraph/config.py"}
    found = {_rel(p): lines for p in SOURCES
             if _rel(p) not in allowed and (lines := _environment_reads(_tree(p)))}
    assert not found, f"os.environ outside symgraph/config.py: {found}"


def test_kernels_import_only_torch_triton_and_the_standard_library():
    allowed = {"torch", "triton"} | set(sys.stdlib_module_names)
    bad = []
    for path in KERNELS.rglob("*.py"):
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            elif isinstance(node, ast.ImportFrom):  # relative: only siblings in kernels/
                names = [] if node.level == 1 else [f"{'.' * node.level}{node.module}"]
            else:
                continue
            bad += [f"{_rel(path)}:{node.lineno} {n}" for n in names
                    if n.split(".")[0] not in allowed and not n.startswith("symgraph.kernels")]
    assert not bad, bad


# kernel-module functions that still copy host values to the device per call, and why
HOST_COPIES = {
    "random.py::_lin": "table-entry test data",
    "detection.py::nms_order": "box_nms reference path (data-dependent order)",
    "roi.py::_align_roi": "ROIAlign reference path",
    "roi.py::_masked_max": "ROIPooling reference path (host bins moved to the data)",
    "roi.py::_rroi_one": "RROIAlign reference path (host sample grid moved to the data)",
}


def _host_copies(fn: ast.FunctionDef):
    """Lines where ``fn`` makes a device tensor from host values: ``torch.tensor(...,
    device=...)`` / ``torch.as_tensor`` or ``.to(<x>.device)``."""
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        f = node.func
        if isinstance(f.value, ast.Name) and f.value.id == "torch" and \
                f.attr in ("tensor", "as_tensor") and any(k.arg == "device"
                                                           for k in node.keywords):
            yield node.lineno
        elif f.attr == "to" and (any(_is_device(a) for a in node.args) or any(
                k.arg == "device" for k in node.keywords)) and (
                _makes_host_tensor(f.value) or any(isinstance(a, ast.Attribute)
                                                   for a in node.args)):
            yield node.lineno


def _is_device(node: ast.AST) -> bool:
    """``x.device``, or a name that says it is one (``dev``, ``device``)."""
    return (isinstance(node, ast.Attribute) and node.attr == "device") or (
        isinstance(node, ast.Name) and "dev" in node.id)


def _makes_host_tensor(node: ast.AST) -> bool:
    """``torch.tensor(...)`` / ``torch.as_tensor(...)`` (then moved by ``.to(dev)``)."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
        isinstance(node.func.value, ast.Name) and node.func.value.id == "torch" and \
        node.func.attr in ("tensor", "as_tensor")


def test_kernel_launches_copy_no_host_metadata():
    """Issue #22: a launch that copies host metadata to the device per call is a queue
    drain, and illegal inside CUDA-graph capture: metadata goes through
    ``kernels.runtime.device_meta``/``device_cached`` (copied once per distinct value). References
    (``*_ref``) and table-entry builders (``_make*``) are exempt."""
    bad, seen = [], set()
    for path in sorted(KERNELS.rglob("*.py")):
        for fn in ast.walk(_tree(path)):
            if not isinstance(fn, ast.FunctionDef) or fn.name.endswith("_ref") or \
                    fn.name.lstrip("_").startswith("make"):
                continue
            key = f"{path.name}::{fn.name}"
            lines = list(_host_copies(fn))
            if lines:
                seen.add(key)
                if key not in HOST_COPIES:
                    bad += [f"{_rel(path)}:{line} in {fn.name}" for line in lines]
    assert not bad, bad
    assert not set(HOST_COPIES) - seen, f"fixed, drop from HOST_COPIES: {set(HOST_COPIES) - seen}"


def _is_name_attr(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr in ("name", "op_name")


def _is_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_literal(e) for e in node.elts)
    return False


def test_compiler_passes_never_branch_on_op_names():
    hits = []
    for path in PASSES:
        name = _rel(path)
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if any(_is_name_attr(s) for s in sides) and any(_is_literal(s) for s in sides):
                    hits.append(f"{name}:{node.lineno}")
    assert not hits, f"op-name comparisons in compiler passes: {hits}"


def test_every_public_op_has_table_cases():
    missing = [op.name for op in canonical_ops() if not op.cases and not op.hidden
               and op.special.eager is None]  # imperative-only ops: tested by their own files
    assert not missing, missing


# ---------------------------------------------------------------- imports

def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


PACKAGE_SOURCES = [p for p in SOURCES if "alias_path" not in p.parts]  # the mxnet alias shim
MODULES = {_module_name(p) for p in PACKAGE_SOURCES}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _module_level_imports(body: list) -> list:
    """Import statements run at import: not in functions, not under ``if TYPE_CHECKING``."""
    found = []
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If) and not _is_type_checking(node.test):
            found += _module_level_imports(node.body) + _module_level_imports(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *[h.body for h in node.handlers]):
                found += _module_level_imports(block)
        elif isinstance(node, (ast.With, ast.ClassDef)):
            found += _module_level_imports(node.body)
    return found


def _imported(node: ast.Import | ast.ImportFrom, name: str, is_package: bool) -> list[str]:
    """What an import statement in module ``name`` names: modules, or the module it reads
    names from (``from .x import y``: ``.x.y`` if that is a submodule, else ``.x``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        package = (name if is_package else name.rpartition(".")[0]).split(".")
        package = ".".join(package[:len(package) - node.level + 1])
        base = f"{package}.{node.module}" if node.module else package
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]


def _targets(node: ast.Import | ast.ImportFrom, name: str, is_package: bool) -> set[str]:
    """The symgraph modules an import statement runs or reads from: the target, and the
    packages above it that are not already being imported (those of ``name`` itself)."""
    out = set()
    for target in _imported(node, name, is_package):
        while target and target not in MODULES:  # `import a.b.attr`: the module a.b
            target = target.rpartition(".")[0]
        if target:
            out.add(target)
            parent = target.rpartition(".")[0]
            while parent:
                if not (name == parent or name.startswith(parent + ".")):
                    out.add(parent)
                parent = parent.rpartition(".")[0]
    return out


def _import_graph() -> dict[str, set[str]]:
    graph = {}
    for path in PACKAGE_SOURCES:
        name = _module_name(path)
        nodes = _module_level_imports(_tree(path).body)
        graph[name] = set().union(*(_targets(n, name, path.name == "__init__.py")
                                    for n in nodes)) - {name}
    return graph


def _cycles(graph: dict[str, set[str]], per_group: int = 12) -> list[str]:
    """Every group of modules that import each other (a strongly connected component),
    with up to ``per_group`` of its cycles."""
    import networkx as nx
    digraph = nx.DiGraph([(a, b) for a, targets in graph.items() for b in targets])
    report = []
    groups = [g for g in nx.strongly_connected_components(digraph) if len(g) > 1]
    for group in sorted(groups, key=min):
        report.append(f"{len(group)} modules: {', '.join(sorted(group))}")
        for cycle in itertools.islice(nx.simple_cycles(digraph.subgraph(group)), per_group):
            start = cycle.index(min(cycle))
            report.append("    " + " -> ".join([*cycle[start:], *cycle[:start], min(cycle)]))
    return report


def test_no_module_level_import_cycles():
    # a module-level import of a module that imports you back, also through a package's
    # __init__; imports inside functions and under `if TYPE_CHECKING` do not count
    cycles = _cycles(_import_graph())
    assert not cycles, ("module-level import cycles (move the shared piece into a lower "
                        "module):\n" + "\n".join(cycles))


# Imports the package, then each module the package did not import, each in a fork of that
# state: the same as `python -c "import symgraph.<module>"` in a fresh interpreter (which
# runs symgraph/__init__ first), at a fraction of the cost.
_IMPORT_EACH = r"""
import importlib, os, sys
import symgraph
loaded, failed = set(sys.modules), []
for name in sys.argv[1:]:
    if name in loaded:
        continue
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            importlib.import_module(name)
            message = b""
        except BaseException as err:
            message = f"{type(err).__name__}: {err}".encode()[:2000]
        os.write(write, message)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        message = pipe.read().decode()
    status = os.waitpid(pid, 0)[1]
    if message or status:
        failed.append(f"{name}: {message or f'exit status {status}'}")
print("\n".join(failed))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks one child per module")
def test_every_module_imports_alone():
    env = {k: v for k, v in os.environ.items() if not k.startswith("DMLC_")}
    result = subprocess.run([sys.executable, "-c", _IMPORT_EACH, *sorted(MODULES)], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    failed = result.stdout.strip()
    assert not failed, f"modules that fail to import alone:\n{failed}"


# ---------------------------------------------------------------- functions

MAX_FUNCTION_LINES = 60
# Functions over MAX_FUNCTION_LINES, each with why; the dict may only shrink.
LONG_FUNCTIONS: dict[str, str] = {}
_TRITON_DECORATORS = {"kernel", "jit", "device", "autotune", "heuristics"}


def _functions(tree: ast.AST, scope: str = ""):
    """``(qualified name, node, nested in a function)`` of every function in ``tree``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"{scope}{node.name}"
            yield name, node, "<locals>" in scope
            yield from _functions(node, f"{name}.<locals>.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{scope}{node.name}.")
        else:
            yield from _functions(node, scope)


def _body_lines(fn: ast.FunctionDef) -> int:
    body = fn.body
    docstring = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
        and isinstance(body[0].value.value, str)
    first = body[1] if docstring and len(body) > 1 else body[0]
    return fn.end_lineno - first.lineno + 1


def _is_triton_body(path: Path, fn: ast.FunctionDef) -> bool:
    names = []
    for deco in fn.decorator_list:
        deco = deco.func if isinstance(deco, ast.Call) else deco
        names.append(deco.attr if isinstance(deco, ast.Attribute) else getattr(deco, "id", ""))
    return KERNELS in path.parents and bool(_TRITON_DECORATORS & set(names))


def test_functions_stay_short():
    long = {}
    for path in SOURCES:
        for name, fn, _ in _functions(_tree(path)):
            if _body_lines(fn) > MAX_FUNCTION_LINES and not _is_triton_body(path, fn):
                long[f"{_module_name(path)}:{name}"] = _body_lines(fn)
    new = {k: v for k, v in long.items() if k not in LONG_FUNCTIONS}
    assert not new, f"functions over {MAX_FUNCTION_LINES} lines (body, docstring excluded): {new}"
    stale = set(LONG_FUNCTIONS) - set(long)
    assert not stale, f"short enough now, remove from LONG_FUNCTIONS: {sorted(stale)}"


MAX_PARAMETERS = 6
_MXNET = "MXNet's signature"
_KERNEL = "kernel launch wrapper or its torch reference (tensors and sizes); to be reduced"
_INTERNAL = "internal; to be reduced (pass a dataclass)"
# Public functions with more than MAX_PARAMETERS parameters (self/cls, *args and **kwargs
# not counted), each with why; MXNet's own signatures stay as MXNet has them. The dict may
# only shrink.
MANY_PARAMETERS: dict[str, str] = {
    "symgraph.compiler.plan:build_plan": _INTERNAL,
    "symgraph.contrib.optimizer_updates:adamw_update": _MXNET,
    "symgraph.contrib.optimizer_updates:mp_adamw_update": _MXNET,
    "symgraph.contrib.optimizer_updates:multi_adamw_update": _MXNET,
    "symgraph.contrib.optimizer_updates:multi_lamb_update": _MXNET,
    "symgraph.contrib.optimizer_updates:multi_mp_adamw_update": _MXNET,
    "symgraph.contrib.optimizer_updates:multi_mp_lamb_update": _MXNET,
    "symgraph.distributed.launch:start_local": _INTERNAL,
    "symgraph.executor:Executor.__init__": _INTERNAL,
    "symgraph.executor:bind": _INTERNAL,
    "symgraph.executor:simple_bind": _INTERNAL,
    "symgraph.executor_manager:DataParallelExecutorGroup.__init__": _MXNET,
    "symgraph.executor_manager:DataParallelExecutorManager.__init__": _MXNET,
    "symgraph.training.feedforward:FeedForward.__init__": _MXNET,
    "symgraph.training.feedforward:FeedForward.create": _MXNET,
    "symgraph.training.feedforward:FeedForward.fit": _MXNET,
    "symgraph.gluon.block:HybridBlock.hybridize": _MXNET,
    "symgraph.onnx.export:export_model": _MXNET,
    "symgraph.gluon.block:HybridBlock.optimize_for": _MXNET,
    "symgraph.gluon.contrib.nn.basic_layers:SyncBatchNorm.__init__": _MXNET,
    "symgraph.gluon.contrib.rnn.rnn_cell:dynamic_unroll": _MXNET,
    "symgraph.gluon.data.dataloader:DataLoader.__init__": _MXNET,
    "symgraph.gluon.nn.basic_layers:BatchNorm.__init__": _MXNET,
    "symgraph.gluon.nn.basic_layers:Dense.__init__": _MXNET,
    "symgraph.gluon.nn.basic_layers:GroupNorm.__init__": _MXNET,
    "symgraph.gluon.nn.basic_layers:InstanceNorm.__init__": _MXNET,
    "symgraph.gluon.nn.basic_layers:LayerNorm.__init__": _MXNET,
    "symgraph.gluon.nn.conv_layers:Conv1D.__init__": _MXNET,
    "symgraph.gluon.nn.conv_layers:Conv1DTranspose.__init__": _MXNET,
    "symgraph.gluon.nn.conv_layers:Conv2D.__init__": _MXNET,
    "symgraph.gluon.nn.conv_layers:Conv2DTranspose.__init__": _MXNET,
    "symgraph.gluon.nn.conv_layers:Conv3D.__init__": _MXNET,
    "symgraph.gluon.nn.conv_layers:Conv3DTranspose.__init__": _MXNET,
    "symgraph.gluon.parameter:Parameter.__init__": _MXNET,
    "symgraph.gluon.parameter:ParameterDict.load": _MXNET,
    "symgraph.gluon.parameter:ParameterDict.load_dict": _MXNET,
    "symgraph.gluon.rnn.contrib_cells:LSTMPCell.__init__": _MXNET,
    "symgraph.gluon.rnn.contrib_cells:LSTMPCell.hybrid_forward": _MXNET,
    "symgraph.gluon.rnn.rnn_cell:GRUCell.__init__": _MXNET,
    "symgraph.gluon.rnn.rnn_cell:GRUCell.hybrid_forward": _MXNET,
    "symgraph.gluon.rnn.rnn_cell:LSTMCell.__init__": _MXNET,
    "symgraph.gluon.rnn.rnn_cell:LSTMCell.hybrid_forward": _MXNET,
    "symgraph.gluon.rnn.rnn_cell:RNNCell.__init__": _MXNET,
    "symgraph.gluon.rnn.rnn_cell:RNNCell.hybrid_forward": _MXNET,
    "symgraph.gluon.rnn.rnn_layer:GRU.__init__": _MXNET,
    "symgraph.gluon.rnn.rnn_layer:LSTM.__init__": _MXNET,
    "symgraph.gluon.rnn.rnn_layer:RNN.__init__": _MXNET,
    "symgraph.image.augment:CreateAugmenter": _MXNET,
    "symgraph.image.det_augment:CreateDetAugmenter": _MXNET,
    "symgraph.image.det_iterator:ImageDetIter.__init__": _MXNET,
    "symgraph.image.det_iterator:ImageDetIter.draw_next": _MXNET,
    "symgraph.image.functions:fixed_crop": _MXNET,
    "symgraph.image.iterator:ImageIter.__init__": _MXNET,
    "symgraph.io.file_iters:CSVIter": _MXNET,
    "symgraph.io.file_iters:LibSVMIter": _MXNET,
    "symgraph.io.file_iters:MNISTIter": _MXNET,
    "symgraph.io.io:DataBatch.__init__": _MXNET,
    "symgraph.io.io:NDArrayIter.__init__": _MXNET,
    "symgraph.kernels.deformable:deformable_col2im": _KERNEL,
    "symgraph.kernels.detection:box_encode": _KERNEL,
    "symgraph.kernels.conv:conv_data_grad": _KERNEL,
    "symgraph.kernels.conv:conv_data_grad_ref": _KERNEL,
    "symgraph.kernels.conv:conv_nd": _KERNEL,
    "symgraph.kernels.conv:conv_nd_ref": _KERNEL,
    "symgraph.kernels.conv:conv_transpose_nd": _KERNEL,
    "symgraph.kernels.conv:conv_transpose_nd_ref": _KERNEL,
    "symgraph.kernels.conv:conv_weight_grad": _KERNEL,
    "symgraph.kernels.conv:conv_weight_grad_ref": _KERNEL,
    "symgraph.kernels.hawkes:hawkesll": _KERNEL,
    "symgraph.kernels.hawkes:hawkesll_backward": _KERNEL,
    "symgraph.kernels.hawkes:hawkesll_backward_ref": _KERNEL,
    "symgraph.kernels.hawkes:hawkesll_ref": _KERNEL,
    "symgraph.kernels.im2col:col2im": _KERNEL,
    "symgraph.kernels.linalg:trsm": _KERNEL,
    "symgraph.kernels.multibox:multibox_prior": _KERNEL,
    "symgraph.kernels.norm:batch_norm_bwd": _KERNEL,
    "symgraph.kernels.norm:batch_norm_bwd_ref": _KERNEL,
    "symgraph.kernels.norm:batch_norm_fwd": _KERNEL,
    "symgraph.kernels.norm:batch_norm_fwd_ref": _KERNEL,
    "symgraph.kernels.norm:layer_norm_bwd": _KERNEL,
    "symgraph.kernels.optimizer:ftml_update": _KERNEL,
    "symgraph.kernels.optimizer:rmspropalex_update": _KERNEL,
    "symgraph.kernels.random:sample": _KERNEL,
    "symgraph.kernels.random:sample_ref": _KERNEL,
    "symgraph.kernels.random_pdf:pdf_backward": _KERNEL,
    "symgraph.kernels.rnn:rnn_layer_bwd": _KERNEL,
    "symgraph.kernels.rnn:rnn_layer_bwd_ref": _KERNEL,
    "symgraph.kernels.rnn:rnn_layer_fwd": _KERNEL,
    "symgraph.kernels.rnn:rnn_layer_fwd_ref": _KERNEL,
    "symgraph.kernels.softmax:softmax_bwd": _KERNEL,
    "symgraph.kernels.softmax:softmax_fwd": _KERNEL,
    "symgraph.kernels.softmax:softmax_output_bwd": _KERNEL,
    "symgraph.kernels.softmax:softmax_output_bwd_ref": _KERNEL,
    "symgraph.kernels.sort:topk": _KERNEL,
    "symgraph.lr_scheduler:FactorScheduler.__init__": _MXNET,
    "symgraph.lr_scheduler:PolyScheduler.__init__": _MXNET,
    "symgraph.module.base_module:BaseModule.bind": _MXNET,
    "symgraph.module.base_module:BaseModule.fit": _MXNET,
    "symgraph.module.base_module:BaseModule.score": _MXNET,
    "symgraph.module.bucketing_module:BucketingModule.__init__": _MXNET,
    "symgraph.module.bucketing_module:BucketingModule.bind": _MXNET,
    "symgraph.module.executor_group:DataParallelExecutorGroup.__init__": _MXNET,
    "symgraph.module.module:Module.__init__": _MXNET,
    "symgraph.module.module:Module.bind": _MXNET,
    "symgraph.module.python_module:PythonModule.bind": _MXNET,
    "symgraph.module.sequential_module:SequentialModule.bind": _MXNET,
    "symgraph.ndarray.utils:arange": _MXNET,
    "symgraph.ops.elementwise:binary": _INTERNAL,
    "symgraph.ops.elementwise:scalar": _INTERNAL,
    "symgraph.ops.elementwise:unary": _INTERNAL,
    "symgraph.ops.optimizer_update:update_op": _INTERNAL,
    "symgraph.optimizer.large_batch:LBSGD.__init__": _MXNET,
    "symgraph.optimizer.optimizer:Optimizer.__init__": _MXNET,
    "symgraph.optimizer.rules:LAMB.__init__": _MXNET,
    "symgraph.rnn.conv_cell:BaseConvRNNCell.__init__": _MXNET,
    "symgraph.rnn.conv_cell:ConvGRUCell.__init__": _MXNET,
    "symgraph.rnn.conv_cell:ConvLSTMCell.__init__": _MXNET,
    "symgraph.rnn.conv_cell:ConvRNNCell.__init__": _MXNET,
    "symgraph.rnn.fused_cell:FusedRNNCell.__init__": _MXNET,
    "symgraph.rnn.io:BucketSentenceIter.__init__": _MXNET,
    "symgraph.symbol.symbol:Symbol.bind": _MXNET,
    "symgraph.symbol.symbol:Symbol.simple_bind": _MXNET,
    "symgraph.symbol.symbol:Variable": _MXNET,
    "symgraph.symbol:arange": _MXNET,
    "symgraph.test_utils:assert_almost_equal": _MXNET,
    "symgraph.test_utils_sparse:rand_sparse_ndarray": _MXNET,
    "symgraph.test_utils_sparse:create_sparse_array": _MXNET,
    "symgraph.test_utils_sparse:create_sparse_array_zd": _MXNET,
    "symgraph.test_utils:assert_almost_equal_with_err": _MXNET,
    "symgraph.test_utils:check_consistency": _MXNET,
    "symgraph.test_utils:check_numeric_gradient": _MXNET,
    "symgraph.test_utils:check_symbolic_backward": _MXNET,
    "symgraph.test_utils:check_symbolic_forward": _MXNET,
    "symgraph.test_utils:compare_optimizer": _MXNET,
    "symgraph.test_utils:rand_ndarray": _MXNET,
    "symgraph.test_utils:verify_generator": _MXNET,
    "symgraph.visualization:plot_network": _MXNET,
}


def _is_public(path: Path, name: str) -> bool:
    private_module = any(p.startswith("_") and p != "__init__.py"
                         for p in path.relative_to(ROOT).parts)
    return not private_module and all(
        not part.startswith("_") or part == "__init__" for part in name.split("."))


def _parameters(fn: ast.FunctionDef, method: bool) -> int:
    args = fn.args
    count = len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs)
    first = (args.posonlyargs + args.args)[:1]
    return count - (method and bool(first) and first[0].arg in ("self", "cls"))


def _public_signatures() -> dict[str, int]:
    counts = {}
    for path in PACKAGE_SOURCES:
        tree = _tree(path)
        classes = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        for name, fn, nested in _functions(tree):
            if not nested and _is_public(path, name):
                method = "." in name and name.split(".")[-2] in classes
                counts[f"{_module_name(path)}:{name}"] = _parameters(fn, method)
    return counts


def test_public_functions_take_few_parameters():
    many = {k: n for k, n in _public_signatures().items() if n > MAX_PARAMETERS}
    new = {k: n for k, n in many.items() if k not in MANY_PARAMETERS}
    assert not new, (f"public functions over {MAX_PARAMETERS} parameters (pass a dataclass, "
                     f"or list an MXNet signature in MANY_PARAMETERS): {new}")
    stale = set(MANY_PARAMETERS) - set(many)
    assert not stale, f"few enough now, remove from MANY_PARAMETERS: {sorted(stale)}"


# ---------------------------------------------------------------- lint

LINTED = sorted(p for folder in ("symgraph", "tests", "benchmarks", "tools")
                for p in (ROOT / folder).rglob("*.py"))
_FILE_WIDE = re.compile(r"^\s*#\s*(?:(?:ruff|flake8)\s*:\s*noqa|noqa\s*$)", re.I | re.M)
# Files with a file-wide suppression, each with why; the dict may only shrink.
FILE_WIDE_NOQA = {
    "tests/fixtures/mxnet/generate.py": "runs only under the MXNet 1.9.1 oracle interpreter; "
                                        "never imported by the suite",
}


def test_no_file_wide_lint_suppressions():
    found = {_rel(p) for p in LINTED if _FILE_WIDE.search(p.read_text(encoding="utf-8"))}
    assert found <= set(FILE_WIDE_NOQA), f"file-wide noqa: {sorted(found - set(FILE_WIDE_NOQA))}"
    assert set(FILE_WIDE_NOQA) <= found, f"clean now: {sorted(set(FILE_WIDE_NOQA) - found)}"
    sections = re.split(r"^(?=\[)", (ROOT / "pyproject.toml").read_text(encoding="utf-8"),
                        flags=re.M)
    ruff = "".join(s for s in sections if s.startswith("[tool.ruff"))
    assert not re.search(r"per-file-ignores|^\s*(?:extend-)?exclude\s*=", ruff, re.M), \
        "pyproject.toml silences ruff for whole files (per-file-ignores / exclude)"


def test_ruff_is_clean():
    """Rule 11: the linter (pyproject's selection, with RUF100: no unused ``noqa``) passes
    on the whole tree; CI installs ruff with the test extras."""
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed (pip install -e .[test])")
    run = subprocess.run([ruff, "check", "--output-format", "concise", "symgraph", "tests",
                          "benchmarks", "tools"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-1000:]
