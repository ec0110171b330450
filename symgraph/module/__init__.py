"""``mx.mod``: the Module API (BaseModule, Module, BucketingModule)."""
from .base_module import BaseModule
from .bucketing_module import BucketingModule
from .module import Module

__all__ = ["BaseModule", "BucketingModule", "Module"]
