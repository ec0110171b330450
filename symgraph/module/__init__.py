"""``mx.mod``: the Module API (BaseModule, Module, BucketingModule, SequentialModule,
PythonModule, PythonLossModule), and the data-parallel executor group they bind
(:mod:`.executor_group`, MXNet's ``mxnet.module.executor_group``).

>>> import symgraph as mx
>>> mod = mx.mod.Module(mx.sym.Variable('data') * 2, label_names=None)
>>> mod.bind(data_shapes=[('data', (2, 3))])
>>> mod.binded, type(mod._exec_group).__module__
(True, 'symgraph.module.executor_group')
"""
from . import (
    base_module,
    bucketing_module,
    executor_group,
    module,
    python_module,
    sequential_module,
)
from .base_module import BaseModule
from .bucketing_module import BucketingModule
from .module import Module
from .python_module import PythonLossModule, PythonModule
from .sequential_module import SequentialModule

__all__ = ["BaseModule", "BucketingModule", "Module", "PythonLossModule", "PythonModule",
           "SequentialModule", "base_module", "bucketing_module", "executor_group", "module",
           "python_module", "sequential_module"]
