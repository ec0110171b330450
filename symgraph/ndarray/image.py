"""``mx.nd.image``: MXNet's ``_image_*`` operators as imperative functions, made from the
operator registry on first access (see :mod:`symgraph.ops.namespaces`)."""
from ..ops.namespaces import module_getattr as _module_getattr
from .register import make_function as _make_function

__getattr__ = _module_getattr("image", globals(), _make_function)
