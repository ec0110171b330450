"""The imperative layer sits above NDArray: ``ndarray`` never imports it, NDArray operations
reach it only through ``symgraph.ndarray.hooks``, its modules import alone, and no
module-level import cycle runs through ``ndarray`` or ``imperative`` (issue #19)."""
from __future__ import annotations

import ast
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import symgraph as mx
from symgraph.ndarray import hooks

PACKAGE = Path(mx.__file__).parent
IMPERATIVE = ["symgraph.imperative", "symgraph.imperative.tape",
              "symgraph.imperative.cached_graph", "symgraph.imperative.deferred",
              "symgraph.imperative.recorded", "symgraph.imperative.autograd"]
# the modules of the imperative layer before it moved (any import of them is one of it)
IMPERATIVE_OLD = {"symgraph.autograd", "symgraph.cached_graph", "symgraph.deferred",
                  "symgraph.ndarray.recorded"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(path: Path, everywhere: bool) -> set[str]:
    """Modules ``path`` imports: at module level (not inside functions or classes), or
    ``everywhere``. ``from pkg import name`` counts ``pkg.name`` when that is a module, and
    ``pkg`` when a name is not."""
    module, tree = _module_name(path), ast.parse(path.read_text())
    is_package = path.name == "__init__.py"
    nodes = ast.walk(tree) if everywhere else _module_level(tree.body)
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_package, node)
            subs = [f"{target}.{a.name}" for a in node.names if _is_module(f"{target}.{a.name}")]
            found.update(subs)
            if len(subs) < len(node.names):
                found.add(target)
    # the top-level package is the facade every module runs under, not a layer
    return {m for m in found if m.startswith("symgraph.")}


def _module_level(body: list):
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        yield node
        for field in ("body", "orelse", "finalbody", "handlers"):
            yield from _module_level(getattr(node, field, []) or [])


def _is_module(name: str) -> bool:
    rel = Path(*name.split(".")[1:])
    return (PACKAGE / rel).with_suffix(".py").is_file() or \
        (PACKAGE / rel / "__init__.py").is_file()


def _graph() -> dict[str, set[str]]:
    return {_module_name(p): _imports(p, everywhere=False) for p in PACKAGE.rglob("*.py")}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    for v in graph:
        if v not in index:
            visit(v)
    return out


@pytest.mark.parametrize("name", ["ndarray.py", "register.py", "hooks.py"])
def test_ndarray_never_imports_the_imperative_layer(name):
    """Not even inside a function: NDArray is ignorant of autodiff."""
    got = _imports(PACKAGE / "ndarray" / name, everywhere=True)
    bad = {m for m in got if m.startswith("symgraph.imperative") or m in IMPERATIVE_OLD}
    assert not bad, f"ndarray/{name} imports {sorted(bad)}"


def test_no_module_level_cycle_through_ndarray_or_imperative():
    touching = [c for c in _cycles(_graph())
                if any(m.startswith(("symgraph.ndarray", "symgraph.imperative")) for m in c)]
    assert not touching, touching


@pytest.mark.parametrize("module", [*IMPERATIVE, "symgraph.ndarray.hooks",
                                    "symgraph.ndarray.ndarray", "symgraph.ndarray.register",
                                    "symgraph.contrib.autograd", "symgraph.contrib"])
def test_module_imports_alone(module):
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


def test_mxnet_paths_of_autograd_keep_working():
    from symgraph import alias
    from symgraph.imperative import autograd
    from symgraph.imperative.cached_graph import CachedOp
    assert mx.autograd is autograd
    assert alias.target_module("mxnet.autograd") == "symgraph.imperative.autograd"
    assert mx.contrib.autograd.train_section
    assert mx.nd.CachedOp is CachedOp
    assert autograd.NDArray is mx.nd.NDArray and autograd.Symbol is mx.sym.Symbol


def test_record_installs_the_recorder_per_thread():
    seen = []
    assert hooks.STATE.recorder is None
    with mx.autograd.record():
        assert hooks.STATE.recorder is not None and hooks.STATE.training
        worker = threading.Thread(target=lambda: seen.append(hooks.STATE.recorder))
        worker.start()
        worker.join()
        with mx.autograd.pause():
            assert hooks.STATE.recorder is None
    assert hooks.STATE.recorder is None and not hooks.STATE.training
    assert seen == [None]  # recording is per thread, as in MXNet


def test_ndarray_operations_go_to_the_installed_recorder():
    """The hook is the whole contract: any object with the Recorder methods receives the
    operations on arrays it tracks; ``nd`` functions and methods alike."""
    calls = []

    class Spy:
        def tracks(self, *arrays):
            return True

        def binary(self, name, lhs, rhs, reflected):
            calls.append(("binary", name))
            return "recorded"

        def apply(self, op, inputs, **attrs):
            calls.append(("apply", op))
            return "recorded"

        def apply_op(self, op, attrs, arrays, n_regular):
            calls.append(("apply_op", op))
            return ["recorded"]

    a, b = mx.nd.ones((2,)), mx.nd.ones((2,))
    with hooks.Scope(Spy()):
        assert a + b == "recorded"
        assert mx.nd.relu(a) == "recorded"  # nd.op's own torch function
        assert mx.nd.softmax(a) == "recorded"  # a registry-made function
    assert calls == [("binary", "add"), ("apply", "relu"), ("apply_op", "softmax")]
    assert (a + b).asnumpy().tolist() == [2.0, 2.0]  # uninstalled again
