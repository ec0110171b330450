"""Every public name of MXNet 1.9.1's Python package, in the modules symgraph covers, exists
under the ``mxnet`` alias (names recorded from MXNet by ``tools/mxnet_surface.py`` into
``tests/fixtures/mxnet/surface.json``). A name symgraph leaves out still exists and raises
``UnsupportedError`` when used; that is checked where it is implemented."""
import importlib
import json
import os
import sys

import pytest

from symgraph import alias

SURFACE = json.load(open(os.path.join(os.path.dirname(__file__), "fixtures", "mxnet",
                                      "surface.json")))


@pytest.fixture(scope="module")
def mxnet():
    had = alias.installed()
    module = alias.install()
    yield module
    if not had:  # leave the process as it was: the alias is opt-in
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, alias.MXNetAliasFinder)]
        for name in [n for n in sys.modules if n == "mxnet" or n.startswith("mxnet.")]:
            del sys.modules[name]
        module.__version__ = module.SYMGRAPH_VERSION
        del module.SYMGRAPH_VERSION


@pytest.mark.parametrize("module", sorted(SURFACE["modules"]))
def test_module_has_every_public_name(mxnet, module):
    mod = importlib.import_module(module)
    missing = [n for n in SURFACE["modules"][module] if not hasattr(mod, n)]
    assert missing == [], f"{module} lacks {missing}"


@pytest.mark.parametrize("path", sorted(SURFACE["classes"]))
def test_class_has_every_public_member(mxnet, path):
    module, name = path.rsplit(".", 1)
    cls = getattr(importlib.import_module(module), name)
    missing = [n for n in SURFACE["classes"][path] if not hasattr(cls, n)]
    assert missing == [], f"{path} lacks {missing}"
