"""Executor behaviour: binding variants and errors, grad_req, freezing, reshape, monitor, plan."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as mx


def mlp(hidden=4, classes=3):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=hidden, name="fc1")
    net = mx.sym.Activation(net, act_type="tanh", name="act")
    net = mx.sym.FullyConnected(net, num_hidden=classes, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def filled(exe, seed=0):
    rng = np.random.RandomState(seed)
    for name, arr in exe.arg_dict.items():
        arr[:] = rng.randint(0, 3, arr.shape) if name == "softmax_label" else \
            rng.uniform(-1, 1, arr.shape)
    return exe


def test_simple_bind_allocates_zeros_and_infers_shapes():
    exe = mlp().simple_bind(mx.cpu(), data=(5, 7))
    assert exe.arg_dict["fc1_weight"].shape == (4, 7)
    assert exe.arg_dict["softmax_label"].shape == (5,)
    assert all(float(a.asnumpy().sum()) == 0 for a in exe.arg_arrays)
    assert exe.outputs[0].shape == (5, 3)


def test_grad_req_forms_and_freeze_attribute():
    net = mlp()
    exe = net.simple_bind(mx.cpu(), grad_req={"fc1_weight": "write", "fc2_bias": "add"},
                          data=(2, 3))
    assert [n for n, g in exe.grad_dict.items() if g is not None] == ["fc1_weight", "fc2_bias"]
    frozen = mx.sym.Variable("fc1_weight", attr={"__grad__": "freeze"})
    net2 = mx.sym.FullyConnected(mx.sym.Variable("data"), weight=frozen, num_hidden=2,
                                 name="fc1")
    exe2 = net2.simple_bind(mx.cpu(), data=(2, 3))
    assert exe2.grad_dict["fc1_weight"] is None
    assert exe2.grad_dict["fc1_bias"] is not None


@pytest.mark.parametrize("req", ["foo", ["write"], {"data": "nope"}, 3])
def test_invalid_grad_req_raises(req):
    with pytest.raises(mx.base.BindError):
        mlp().simple_bind(mx.cpu(), grad_req=req, data=(2, 3))


def test_missing_input_shape_names_the_argument():
    with pytest.raises(mx.base.ShapeError, match="data"):
        mlp().simple_bind(mx.cpu())


def test_bind_with_lists_and_dicts_and_errors():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    args = {"data": mx.nd.ones((2, 4)), "fc_weight": mx.nd.ones((3, 4)),
            "fc_bias": mx.nd.zeros((3,))}
    exe = net.bind(mx.cpu(), args)
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), np.full((2, 3), 4.0))
    exe = net.bind(mx.cpu(), [args[n] for n in net.list_arguments()],
                   args_grad={n: mx.nd.zeros(a.shape) for n, a in args.items()})
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 3)))
    np.testing.assert_allclose(exe.grad_dict["fc_bias"].asnumpy(), [2, 2, 2])
    with pytest.raises(mx.base.ShapeError, match="fc_weight"):
        net.bind(mx.cpu(), {**args, "fc_weight": mx.nd.ones((3, 5))})
    with pytest.raises(mx.base.BindError, match="missing"):
        net.bind(mx.cpu(), {"data": args["data"]})
    with pytest.raises(mx.base.BindError):
        net.bind(mx.cpu(), [args["data"]])
    with pytest.raises(mx.base.DTypeError):  # a float gradient array may differ: it is cast
        net.bind(mx.cpu(), args, args_grad={"fc_bias": mx.nd.zeros((3,), dtype="int32")})


def test_forward_kwargs_validate_everything_before_copying():
    exe = filled(mlp().simple_bind(mx.cpu(), data=(2, 3)))
    before = exe.arg_dict["data"].asnumpy().copy()
    with pytest.raises(mx.base.ShapeError, match="Shape not match"):
        exe.forward(data=np.ones((2, 3)), softmax_label=np.ones((3,)))
    np.testing.assert_array_equal(exe.arg_dict["data"].asnumpy(), before)
    with pytest.raises(mx.base.BindError, match="unknown argument"):
        exe.forward(nonexistent=np.ones((2, 3)))


def test_grad_req_add_accumulates_and_write_overwrites():
    net = mlp()
    exe_w = filled(net.simple_bind(mx.cpu(), grad_req="write", data=(3, 5)))
    exe_a = filled(net.simple_bind(mx.cpu(), grad_req="add", data=(3, 5)))
    for _ in range(2):
        for exe in (exe_w, exe_a):
            exe.forward(is_train=True)
            exe.backward()
    np.testing.assert_allclose(exe_a.grad_dict["fc1_weight"].asnumpy(),
                               2 * exe_w.grad_dict["fc1_weight"].asnumpy(), rtol=1e-5)


def test_copy_params_from_checks_names_and_shapes():
    exe = mlp().simple_bind(mx.cpu(), data=(2, 3))
    exe.copy_params_from({"fc1_weight": mx.nd.ones((4, 3))})
    assert float(exe.arg_dict["fc1_weight"].asnumpy().sum()) == 12
    with pytest.raises(ValueError, match="nope"):
        exe.copy_params_from({"nope": mx.nd.ones((1,))})
    exe.copy_params_from({"nope": mx.nd.ones((1,))}, allow_extra_params=True)
    with pytest.raises(mx.base.ShapeError):
        exe.copy_params_from({"fc1_bias": mx.nd.ones((4,)), "fc2_bias": mx.nd.ones((9,))})
    assert float(exe.arg_dict["fc1_bias"].asnumpy().sum()) == 0  # nothing half-applied


def test_reshape_shares_parameters_and_checks_sizes():
    exe = filled(mlp().simple_bind(mx.cpu(), data=(4, 3)))
    small = exe.reshape(data=(2, 3), softmax_label=(2,))
    assert small.arg_dict["fc1_weight"] is exe.arg_dict["fc1_weight"]
    assert small.arg_dict["data"].shape == (2, 3)
    with pytest.raises(mx.base.ShapeError, match="allow_up_sizing"):
        exe.reshape(data=(8, 3), softmax_label=(8,))
    big = exe.reshape(allow_up_sizing=True, data=(8, 3), softmax_label=(8,))
    assert big.outputs[0].shape == (8, 3)
    with pytest.raises(mx.base.ShapeError, match="partial_shaping"):
        exe.reshape(data=(2, 3))


def test_reshape():
    # Port of MXNet's test_executor.py::test_reshape. oracle: MXNet 1.9.1's reshaped
    # executor views the first elements of a shrunk argument and of the outputs of the
    # executor it came from; an up-sized argument is a new array, unchanged ones are shared.
    x = mx.sym.Variable("x")
    y = mx.sym.FullyConnected(x, num_hidden=4)
    exe = y.simple_bind(mx.cpu(), x=(5, 4), grad_req="null")
    exe.arg_arrays[0][:] = 1
    exe.arg_arrays[1][:] = mx.nd.ones((4, 4))
    exe.arg_arrays[2][:] = 0
    new_exe = exe.reshape(x=(3, 4))
    new_exe.forward(is_train=False)
    assert np.all(new_exe.outputs[0].asnumpy() == 4)
    assert np.all(exe.outputs[0].asnumpy()[:3] == 4)  # the outputs share memory
    exe.forward(is_train=False)
    assert np.all(exe.outputs[0].asnumpy() == 4)
    exe.arg_arrays[0][:] = 2  # the base keeps writing into the shared memory
    exe.forward(is_train=False)
    assert np.all(new_exe.outputs[0].asnumpy() == 8)
    new_exe.arg_arrays[0][:] = 3  # a shrunk argument views the original's first rows
    assert np.all(exe.arg_arrays[0].asnumpy()[:3] == 3)
    assert np.all(exe.arg_arrays[0].asnumpy()[3:] == 2)
    big = exe.reshape(allow_up_sizing=True, x=(6, 4))
    big.arg_arrays[0][:] = 0
    assert np.all(exe.arg_arrays[0].asnumpy()[3:] == 2)  # not shared when up-sized
    assert big.arg_arrays[1] is exe.arg_arrays[1]


def test_reshape_of_an_output_that_views_its_argument():
    # the base's output views its argument (reshape is a view); once the executor is
    # reshaped, both write the outputs into the base's own output memory
    x = mx.sym.Variable("x")
    exe = mx.sym.reshape(x, shape=(-1,)).simple_bind(mx.cpu(), x=(2, 3), grad_req="null")
    exe.arg_dict["x"][:] = 1
    exe.forward()
    small = exe.reshape(x=(1, 3))
    small.arg_dict["x"][:] = 5
    small.forward()
    assert small.outputs[0].asnumpy().tolist() == [5, 5, 5]
    assert exe.arg_dict["x"].asnumpy().tolist() == [[5, 5, 5], [1, 1, 1]]
    assert exe.outputs[0].asnumpy().tolist() == [5, 5, 5, 1, 1, 1]


def test_monitor_callback_sees_every_output():
    exe = filled(mlp().simple_bind(mx.cpu(), data=(2, 3)))
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append((name, arr.shape)))
    exe.forward(is_train=True)
    assert [n for n, _ in seen] == ["fc1_output", "act_output", "fc2_output", "softmax_output"]
    seen.clear()
    exe.set_monitor_callback(lambda name, arr: seen.append(name), monitor_all=True)
    exe.forward()
    assert "fc1_data" in seen and "fc1_weight" in seen


def test_backward_after_inference_forward_and_before_any_forward():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    exe = net.simple_bind(mx.cpu(), data=(2, 4))
    exe.arg_dict["data"][:] = 1
    exe.backward(mx.nd.ones((2, 3)))
    np.testing.assert_allclose(exe.grad_dict["fc_weight"].asnumpy(), np.full((3, 4), 2.0))
    exe.forward(is_train=False)
    exe.backward(mx.nd.ones((2, 3)) * 2)
    np.testing.assert_allclose(exe.grad_dict["fc_weight"].asnumpy(), np.full((3, 4), 4.0))


def test_shared_exec_and_shared_buffer_share_arrays():
    net = mlp()
    buf = {}
    a = net.simple_bind(mx.cpu(), data=(4, 3), shared_buffer=buf)
    b = net.simple_bind(mx.cpu(), data=(4, 3), shared_exec=a,
                        shared_arg_names=["fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"])
    assert b.arg_dict["fc1_weight"] is a.arg_dict["fc1_weight"]
    assert b.grad_dict["fc2_bias"] is a.grad_dict["fc2_bias"]
    assert buf["data"] is a.arg_dict["data"]


def test_type_dict_binds_float64():
    exe = mlp().simple_bind(mx.cpu(), type_dict={"data": np.float64}, data=(2, 3))
    assert all(a.dtype == np.float64 for a in exe.arg_arrays)
    assert filled(exe).forward()[0].dtype == np.float64


def test_debug_str_lists_launches_and_memory_plan():
    net = mx.sym.Variable("data")
    for i in range(6):
        net = mx.sym.Activation(mx.sym.FullyConnected(net, num_hidden=16, name=f"fc{i}"),
                                act_type="relu", name=f"relu{i}")
    exe = net.simple_bind(mx.cpu(), grad_req="null", data=(8, 16))
    text = exe.debug_str()
    assert "torch:FullyConnected" in text and "Total planned memory" in text
    mem = exe._plan.memory
    assert mem.planned_bytes < mem.naive_bytes  # lifetimes let buffers be reused


def test_an_entry_listed_as_several_heads_takes_the_last_head_gradient():
    """MXNet 1.9.1 (checked in its virtualenv) assigns head gradients per entry: the last
    listing wins, nothing is summed: [320, 320] and [10, 10] below."""
    x = mx.sym.Variable("x")
    y = x * 2
    exe = mx.sym.Group([y, y, x * 3]).simple_bind(mx.cpu(), x=(2,))
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((2,)), mx.nd.ones((2,)) * 10, mx.nd.ones((2,)) * 100])
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), [320.0, 320.0])
    exe = mx.sym.Group([x, x]).simple_bind(mx.cpu(), x=(2,))
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((2,)), mx.nd.ones((2,)) * 10])
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), [10.0, 10.0])


def _recording(monkeypatch, cls, name: str) -> list:
    """Patch method ``name`` of ``cls`` to record its receivers; the list of them."""
    seen, real = [], getattr(cls, name)

    def method(self):
        seen.append(self)
        return real(self)
    monkeypatch.setattr(cls, name, method)
    return seen


def test_data_checks_defer_to_the_read_on_an_accelerator(monkeypatch):
    """Issue #22: on an accelerator (``defer_checks``, forced here on CPU) gather_nd's and
    take's bound checks and potrf's pivot check read no device flag during the step: the
    error (MXNet's type and message) is raised where an output is read, once per forward;
    a replayed CUDA graph, which runs no Python, keeps the checks of the captured run."""
    import torch

    from symgraph.ops.indexing import IndexOutOfBoundsError
    from symgraph.ops.linalg_factor import NotPositiveDefiniteError
    data, idx = mx.sym.var("data"), mx.sym.var("idx")
    cases = [(mx.sym.gather_nd(data, idx), {"data": (3, 4), "idx": (2, 2)},
              np.array([[0, 5], [1, 1]], np.float32), IndexOutOfBoundsError,
              "index 5 is out of bounds for axis 0 with size 3"),
             (mx.sym.take(data, idx, mode="raise"), {"data": (3, 4), "idx": (2,)},
              np.array([1, 3], np.float32), IndexOutOfBoundsError, "out of bound"),
             (mx.sym.linalg.potrf(data), {"data": (2, 2)}, None, NotPositiveDefiniteError,
              "not positive definite")]
    for sym, shapes, bad_idx, error, match in cases:
        exe = sym.simple_bind(mx.cpu(), grad_req="null", **shapes)
        exe._rt.defer_checks = True
        exe.arg_dict["data"][:] = np.array([[1., 2.], [2., 4.]]) if bad_idx is None else \
            np.arange(12, dtype=np.float32).reshape(3, 4)
        if bad_idx is not None:
            exe.arg_dict["idx"][:] = bad_idx
        reads = _recording(monkeypatch, torch.Tensor, "__bool__")
        out = exe.forward()[0]
        assert not reads, sym.list_outputs()  # nothing read back during the step
        with pytest.raises(error, match=match):
            out.asnumpy()
        with pytest.raises(error, match=match):  # and again on a second read
            out.wait_to_read()
        monkeypatch.undo()
        # a replay (no Python ran, no checks registered) keeps the captured run's checks
        monkeypatch.setattr(exe, "_run_list", lambda key, steps: None)
        with pytest.raises(error, match=match):
            exe.forward()[0].asnumpy()
        monkeypatch.undo()
        if bad_idx is not None:
            exe.arg_dict["idx"][:] = np.zeros_like(bad_idx)
        else:
            exe.arg_dict["data"][:] = np.array([[4., 2.], [2., 5.]])
        exe.forward()[0].asnumpy()  # a good input: no error
