"""``mx.mod``: the Module API (BaseModule, Module, BucketingModule, SequentialModule,
PythonModule, PythonLossModule)."""
from .. import executor_group
from . import base_module, bucketing_module, module, python_module, sequential_module
from .base_module import BaseModule
from .bucketing_module import BucketingModule
from .module import Module
from .python_module import PythonLossModule, PythonModule
from .sequential_module import SequentialModule

__all__ = ["BaseModule", "BucketingModule", "Module", "PythonLossModule", "PythonModule",
           "SequentialModule", "base_module", "bucketing_module", "executor_group", "module",
           "python_module", "sequential_module"]
