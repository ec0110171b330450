"""mx.base, mx.util, mx.runtime and mx.context against MXNet 1.9.1's behaviour (values and
messages recorded from MXNet 1.9.1's CPU build; tests marked "port" follow MXNet's
tests/python/unittest/test_base.py and test_runtime.py)."""
import array
import ctypes
import os
import threading
import types
import warnings

import numpy as np
import pytest
import torch

import symgraph as mx
from symgraph import base, runtime, util
from symgraph.base import MXNetError, UnsupportedError
from symgraph.test_utils import environment

NO_CUDA = not torch.cuda.is_available()
# MXNet 1.9.1's mx.runtime.Features() keys, in order
MXNET_FEATURES = [
    "CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3",
    "CPU_SSE4_1", "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C",
    "JEMALLOC", "BLAS_OPEN", "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN",
    "OPENCV", "CAFFE", "PROFILER", "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE",
    "SIGNAL_HANDLER", "DEBUG", "TVM_OP"]


# --- mx.base --------------------------------------------------------------------------------

def test_type_tuples_and_py_str():
    assert base.py_str(b"gpu") == "gpu"
    assert isinstance(np.int64(1), base.integer_types) and isinstance(3, base.integer_types)
    assert isinstance(np.float16(1), base.numeric_types) and isinstance(1.0, base.numeric_types)
    assert not isinstance(1.0, base.integer_types)
    assert base.string_types == (str,) and base.mx_real_t is np.float32
    assert base.mx_float_p == ctypes.POINTER(ctypes.c_float)
    assert repr(base._Null) == "_Null"


def test_data_dir_follows_mxnet_home():  # port of test_base.test_data_dir
    with environment("MXNET_HOME", None):
        assert base.data_dir() == os.path.join(os.path.expanduser("~"), ".mxnet")
        assert base.data_dir() == base.data_dir_default()
    with environment("MXNET_HOME", "/tmp/mxnet_data"):
        assert base.data_dir() == "/tmp/mxnet_data"


def test_register_error_and_error_types():
    for name in ("ValueError", "TypeError", "AttributeError", "IndexError",
                 "NotImplementedError", "NotImplementedForSymbol"):
        assert name in base.error_types

    @base.register_error
    class RegisteredByClass(MXNetError):
        pass

    @base.register_error("OtherName")
    class RegisteredByName(MXNetError):
        pass
    assert base.error_types["RegisteredByClass"] is RegisteredByClass
    assert base.error_types["OtherName"] is RegisteredByName
    base.error_types.pop("RegisteredByClass"), base.error_types.pop("OtherName")


def test_not_implemented_errors_messages():
    err = base.NotImplementedForSymbol(len, "size", 1, "a")
    assert isinstance(err, MXNetError)
    assert str(err) == ("Function len (namely operator \"size\") with arguments (<class 'int'>, "
                        "<class 'str'>) is not implemented for Symbol and only available in "
                        "NDArray.")
    assert str(base.NotImplementedForSymbol(len, None)) == \
        "Function len is not implemented for Symbol and only available in NDArray."
    assert str(base.NotSupportedForSparseNDArray(abs, "abs")) == \
        'Function abs (namely operator "abs") is not supported for SparseNDArray and only ' \
        "available in NDArray."


def test_c2pyerror_moves_the_stack_trace_first():
    msg, kind = base.c2pyerror("MXNetError: boom\nStack trace:\n  [bt] (0) a\n  [bt] (1) b\n"
                               "more text\n")
    assert kind == "MXNetError"
    assert msg == ("Traceback (most recent call last):\n  [bt] (1) b\n  [bt] (0) a\n"
                   "MXNetError: boom\nmore text")
    assert base.c2pyerror("no type here") == ("no type here", None)
    assert base.c2pyerror("bad name!: x")[1] is None


def test_c_api_needs_the_c_library():
    assert base.check_call(0) is None
    with pytest.raises(UnsupportedError, match="no MXNet C library"):
        base.check_call(-1)
    with pytest.raises(UnsupportedError):
        base.get_last_ffi_error()
    with pytest.raises(UnsupportedError):
        base.libinfo.find_lib_path()
    assert base.libinfo.__version__ == "1.9.1"
    with pytest.raises(UnsupportedError):
        base.c_handle_array([mx.nd.ones(1)])
    handles = base.c_handle_array([types.SimpleNamespace(handle=5)])
    assert list(handles) == [5]


def test_ctypes_helpers():
    assert base.c_str("Hello, World").value == b"Hello, World"
    assert list(base.c_str_array(["a", "bc"])) == [b"a", b"bc"]
    arr = base.c_array(base.mx_float, [1, 2, 3])
    assert len(arr) == 3 and arr[1] == 2.0
    buf = array.array("f", [1, 2, 3])
    shared = base.c_array_buf(base.mx_float, buf)
    buf[0] = 7
    assert shared[0] == 7.0  # shares the buffer
    raw = ctypes.create_string_buffer(b"xyz")
    assert base.ctypes2buffer(ctypes.cast(raw, ctypes.POINTER(ctypes.c_char)), 3) == \
        bytearray(b"xyz")
    with pytest.raises(TypeError):
        base.ctypes2buffer(raw, 3)
    floats = base.c_array(base.mx_float, [1, 2, 3, 4])
    view = base.ctypes2numpy_shared(ctypes.cast(floats, base.mx_float_p), (2, 2))
    floats[3] = 9
    assert view.tolist() == [[1, 2], [3, 9]]
    with pytest.raises(RuntimeError):
        base.ctypes2numpy_shared(raw, (1,))


def test_build_param_doc_skips_duplicates_and_num_args():
    doc = base.build_param_doc(["data", "num_args", "data", "axis"],
                               ["NDArray", "int", "NDArray", "int"], ["Input.", "", "", ""])
    assert doc == "Parameters\n----------\ndata : NDArray\n    Input.\naxis : int\n"
    assert base.build_param_doc(["a", "a"], ["x", "y"], ["", ""], remove_dup=False).count("a :") \
        == 2


def test_add_fileline_to_docstring():
    module = types.ModuleType("fake_module")

    def documented():
        """Doc."""
    module.documented = documented
    base.add_fileline_to_docstring(module)
    assert documented.__doc__.startswith("Doc.\n\nFrom:") and __file__ in documented.__doc__
    base.add_fileline_to_docstring(module)
    assert documented.__doc__.count("From:") == 1


def test_classproperty_get_set_and_read_only():
    class Settable(base.with_metaclass(base._MXClassPropertyMetaClass, object)):
        _value = 1

        @base.classproperty
        def value(cls):
            return cls._value

        @value.setter
        def value(cls, v):
            cls._value = v

    class ReadOnly(metaclass=base._MXClassPropertyMetaClass):
        @base.classproperty
        def value(cls):
            return 3
    assert type(Settable) is base._MXClassPropertyMetaClass
    Settable.value = 5
    assert Settable.value == 5 and Settable().value == 5
    assert ReadOnly.value == 3
    with pytest.raises(MXNetError, match="cannot use the setter"):
        ReadOnly.value = 4


def test_callback_list_structure():
    assert [f[0] for f in base.MXCallbackList._fields_] == ["num_callbacks", "callbacks",
                                                            "contexts"]


# --- mx.context ----------------------------------------------------------------------------

def test_gpu_context_objects_work_without_a_gpu():
    ctx = mx.gpu(3)
    assert (repr(ctx), ctx.device_type, ctx.device_typeid) == ("gpu(3)", "gpu", 2)
    assert mx.Context(ctx) == ctx and hash(mx.Context("gpu", 3)) == hash(ctx)
    with ctx:
        assert mx.current_context() == ctx
    assert mx.current_context() == mx.cpu()


@pytest.mark.skipif(not NO_CUDA, reason="needs a machine without CUDA")
@pytest.mark.parametrize("make", [lambda c: mx.nd.zeros((2,), ctx=c),
                                  lambda c: mx.nd.array([1, 2], ctx=c),
                                  lambda c: mx.nd.ones((1,)).as_in_context(c)])
def test_allocating_on_a_missing_gpu_raises_mxnet_error(make):
    with pytest.raises(MXNetError, match=r"gpu\(0\) is not available: symgraph sees no CUDA"):
        make(mx.gpu(0))


def test_gpu_index_past_the_visible_devices_raises():
    with pytest.raises(base.DeviceError, match=r"gpu\(99\) is not available"):
        mx.nd.zeros((1,), ctx=mx.gpu(99))
    with pytest.raises(OSError):  # MXNet's driver-load failures are OSErrors
        mx.context.gpu_memory_info(99)


@pytest.mark.skipif(not NO_CUDA, reason="needs a machine without CUDA")
def test_cuda_queries_on_a_cpu_machine():
    assert mx.context.num_gpus() == 0 and util.get_gpu_count() == 0
    for query in (mx.context.gpu_memory_info, util.get_gpu_memory):
        with pytest.raises(MXNetError):
            query(0)
    with pytest.raises(OSError):
        util.get_cuda_compute_capability(mx.gpu(0))


def test_default_ctx_is_a_deprecated_class_property():
    with pytest.warns(DeprecationWarning, match="default_ctx has been deprecated"):
        assert mx.Context.default_ctx == mx.cpu(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            mx.Context.default_ctx = mx.cpu(2)
            assert mx.current_context() == mx.cpu(2)
            assert mx.Context.default_ctx == mx.cpu(2)
        finally:
            mx.Context._default_ctx.value = None
    assert mx.current_context() == mx.cpu(0)
    assert isinstance(mx.context.classproperty, type(base.classproperty))


# --- mx.util -------------------------------------------------------------------------------

def test_getenv_setenv_round_trip():
    name = "SYMGRAPH_TEST_UTIL_VAR"
    util.setenv(name, "abc")
    try:
        assert util.getenv(name) == "abc" and os.environ[name] == "abc"
    finally:
        util.setenv(name, None)
    assert util.getenv(name) is None and name not in os.environ


def test_np_shape_flag_scopes_and_threads():
    assert not util.is_np_shape()
    with util.np_shape(True):
        assert util.is_np_shape()
        with util.np_shape(False):
            assert not util.is_np_shape()
        seen = []
        thread = threading.Thread(target=lambda: seen.append(util.is_np_shape()))
        thread.start(), thread.join()
        assert seen == [False]  # per thread, as MXNet's flag
        assert util.is_np_shape()
    assert not util.is_np_shape()
    assert util.set_np_shape(True) is False and util.set_np_shape(False) is True
    with util.np_shape(None):
        assert not util.is_np_shape()


def test_np_shape_keeps_legacy_semantics_but_guards_differences():
    with util.np_shape(True):
        assert mx.nd.zeros((2, 3)).shape == (2, 3)  # legacy code keeps working
        with pytest.raises(UnsupportedError, match="NumPy shape semantics"):
            util.legacy_shape_only("infer_shape_partial")
    util.legacy_shape_only("infer_shape_partial")


def test_use_np_shape_on_functions_and_classes():
    @util.use_np_shape
    def flag():
        return util.is_np_shape()

    @util.use_np_shape
    class Holder:
        def method(self):
            return util.is_np_shape()

        @staticmethod
        def static():
            return util.is_np_shape()

        @property
        def prop(self):
            return util.is_np_shape()
    assert flag() and flag.__name__ == "flag"
    assert Holder().method() and Holder.static() and Holder().prop
    assert not util.is_np_shape()
    with pytest.raises(TypeError, match="use_np_shape can only decorate"):
        util.use_np_shape(3)


def test_numpy_array_semantics_is_unsupported():
    assert not util.is_np_array()
    with util.np_array(False):
        assert not util.is_np_array()
    with pytest.raises(UnsupportedError, match="mx.np"):
        with util.np_array(True):
            pass

    @util.use_np  # decorating at import time works
    def np_test():
        return 1

    @util.use_np
    class NpBlock:
        def __init__(self):
            self.x = 1
    with pytest.raises(UnsupportedError):
        np_test()
    with pytest.raises(UnsupportedError):
        NpBlock()
    with pytest.raises(UnsupportedError):
        util.use_np_array(lambda: 1)()
    assert not util.is_np_shape() and not util.is_np_array()


def test_set_np_and_reset_np():
    with pytest.raises(UnsupportedError):
        util.set_np()
    assert not util.is_np_shape()
    with pytest.raises(ValueError, match="NumPy Shape semantics is required"):
        util.set_np(shape=False, array=True)
    util.set_np(shape=True, array=False)
    assert util.is_np_shape()
    util.reset_np()
    assert not util.is_np_shape()


def test_set_module_and_ufunc_options():
    @util.set_module("mxnet.numpy")
    def f():
        pass
    assert f.__module__ == "mxnet.numpy"
    assert util.set_module(None)(f).__module__ == "mxnet.numpy"
    legal = util.np_ufunc_legal_option
    assert legal("where", False) and legal("order", "C") and legal("subok", True)
    assert legal("dtype", np.float32) and legal("dtype", "int8") and legal("casting", "unsafe")
    assert not legal("dtype", np.int16) and not legal("casting", "x") and not legal("subok", 1)
    assert not legal("unknown", 1)


def test_wrap_np_funcs_check_ufunc_keywords():
    @util.wrap_np_unary_func
    def neg(x, out=None):
        return -x

    @util.wrap_np_binary_func
    def add(x1, x2, out=None):
        return x1 + x2
    assert neg(2, dtype=None, casting="same_kind") == -2 and add(1, 2, where=True) == 3
    with pytest.raises(TypeError, match="foo is an invalid keyword to function 'neg'"):
        neg(1, foo=1)
    with pytest.raises(NotImplementedError,
                       match="casting=safe is not implemented yet for operator neg"):
        neg(1, casting="safe")
    with pytest.raises(TypeError, match="casting=bad not understood for operator neg"):
        neg(1, casting="bad")
    with pytest.raises(NotImplementedError, match="^order=C is not implemented yet$"):
        add(1, 2, order="C")
    with pytest.raises(TypeError, match="^subok None not understood$"):
        add(1, 2, subok=None)


def test_util_exports_mxnet_names():
    assert mx.util is util and mx.runtime is runtime
    for name in ("c_str", "check_call", "py_str", "get_cuda_compute_capability"):
        assert callable(getattr(util, name))
    with pytest.raises(ValueError, match="Expecting a gpu context"):
        util.get_cuda_compute_capability(mx.cpu())


# --- mx.runtime ----------------------------------------------------------------------------

def test_features_are_mxnet_names_in_order():  # port of test_runtime.test_features
    features = runtime.Features()
    assert list(features) == MXNET_FEATURES
    assert [f.name for f in runtime.feature_list()] == MXNET_FEATURES
    assert runtime.Features() is features  # port of test_is_singleton
    runtime.Features.__init__(features)
    assert len(features) == 32
    assert str(features).startswith("[") and ("✔ DIST_KVSTORE" in repr(features))


def test_feature_values():
    features = runtime.Features()
    assert features.is_enabled("CUDA") == torch.cuda.is_available()
    assert features.is_enabled("cuda") == features["CUDA"].enabled  # case-insensitive
    for name in ("TVM_OP", "CUDA_RTC", "TENSORRT", "MKLDNN", "INT64_TENSOR_SIZE", "DEBUG",
                 "SIGNAL_HANDLER", "OPENCV", "PROFILER"):
        assert not features.is_enabled(name), name
    assert features.is_enabled("DIST_KVSTORE")
    assert features.is_enabled("OPENMP") == torch.backends.openmp.is_available()
    for name, feature in features.items():  # port of test_is_enabled
        assert features.is_enabled(name) == feature.enabled


def test_unknown_feature_raises_runtime_error():  # port of test_is_enabled_not_existing
    with pytest.raises(RuntimeError, match="Feature 'THIS GIRL IS ON FIRE' is unknown, known "
                                           "features are: \\['CUDA', 'CUDNN'"):
        runtime.Features().is_enabled("this girl is on fire")


def test_feature_repr():
    assert repr(runtime.Feature("CUDA", True)) == "✔ CUDA"
    assert repr(runtime.Feature("CUDA", False)) == "✖ CUDA"
