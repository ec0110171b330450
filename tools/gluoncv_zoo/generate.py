"""Export GluonCV's model zoo with MXNet 1.9.1 (run with the oracle virtualenv).

    nice /work/mxvenv/bin/python tools/gluoncv_zoo/generate.py --out /tmp/gcvzoo/detection \
        --family detection [--models ssd_300_vgg16_atrous_voc ...]

For every architecture of ``gluoncv.model_zoo.get_model_list()`` (int8 models aside):
build it with ``pretrained=False`` for each of ``gcvzoo_common.attempts`` until one runs,
fill every parameter with ``gcvzoo_common.param_value`` (``gluon.Constant`` parameters keep
their values), hybridize, run ``gcvzoo_common.model_input`` and ``export`` to
``<out>/<name>-symbol.json`` and ``-0000.params``; inputs, outputs and constants go to
``<out>/<name>-io.npz``. One line per model goes to ``<out>/results.jsonl`` (built, ran,
exported, errors, shapes, seconds).

Models run in a worker process; one that runs past ``--timeout`` seconds is recorded as
timed out and the worker restarts after it.

>>> flatten_outputs([1, (2, [3])])
[1, 2, 3]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gcvzoo_common as common  # noqa: E402


def flatten_outputs(out) -> list:
    """Nested tuples/lists of outputs as one flat list."""
    if isinstance(out, (list, tuple)):
        return [leaf for item in out for leaf in flatten_outputs(item)]
    return [out]


def _get_model(gcv, name: str, kwargs: dict):
    kwargs = dict(kwargs)
    while True:
        try:
            return gcv.model_zoo.get_model(name, **kwargs)
        except TypeError as err:
            bad = [k for k in kwargs if k != "pretrained" and f"'{k}'" in str(err)]
            if not bad:
                raise
            kwargs.pop(bad[0])
        except Exception as err:  # darknet53 refuses any extra keyword
            extra = [k for k in kwargs if k != "pretrained"]
            if "should only accept kwargs" not in str(err) or not extra:
                raise
            kwargs.pop(extra[0])


def _fill(mx, net) -> list[str]:
    """Every parameter set from ``param_value``; the names of the kept constants."""
    constants = []
    for name, param in net.collect_params().items():
        if isinstance(param, mx.gluon.Constant):
            constants.append(name)
            continue
        param.set_data(mx.nd.array(common.param_value(name, param.shape, "float32"),
                                   dtype=param.dtype))
    return constants


def _try(mx, gcv, name: str, kwargs: dict, shapes: list) -> tuple:
    net = _get_model(gcv, name, kwargs)
    with __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("ignore")
        net.initialize(mx.init.Zero())
    net.hybridize()
    xs = [mx.nd.array(common.model_input(s)) for s in shapes]
    net(*xs)  # deferred shapes
    constants = _fill(mx, net)
    outs = [o.asnumpy() for o in flatten_outputs(net(*xs))]
    return net, xs, outs, constants


def run_one(mx, gcv, np, name: str, out_dir: str) -> dict:
    """Build, fill, run and export ``name``; the result record."""
    rec = {"name": name, "family": common.family(name), "built": False, "exported": False,
           "errors": []}
    fallback = None
    for kwargs, shapes in common.attempts(name):
        try:
            net, xs, outs, constants = _try(mx, gcv, name, kwargs, shapes)
        except Exception as err:  # MXNet's error is the record
            rec["errors"].append(f"{shapes}: {type(err).__name__}: {str(err)[:400]}")
            continue
        if any(o.size == 0 for o in outs):
            # MXNet's graph-level Reshape floor-divides a -1 dimension without checking
            # the size, so too small an input can "run" and give empty outputs (c3d).
            rec["errors"].append(f"{shapes}: empty output {[list(o.shape) for o in outs]}")
            fallback = fallback or (kwargs, shapes, net, xs, outs, constants)
            continue
        fallback = (kwargs, shapes, net, xs, outs, constants)
        break
    if fallback is not None:
        kwargs, shapes, net, xs, outs, constants = fallback
        rec.update(built=True, kwargs=kwargs, inputs=[list(s) for s in shapes],
                   outputs=[list(o.shape) for o in outs], constants=constants)
    if not rec["built"]:
        return rec
    prefix = os.path.join(out_dir, name)
    try:
        net.export(prefix, epoch=0)
        rec["exported"] = True
    except Exception as err:
        rec["export_error"] = f"{type(err).__name__}: {str(err)[:400]}"
    params = net.collect_params()
    arrays = {f"in{i}": x.asnumpy() for i, x in enumerate(xs)}
    arrays.update({f"out{i}": o for i, o in enumerate(outs)})
    arrays.update({f"const:{c}": params[c].data().asnumpy() for c in constants})
    np.savez(prefix + "-io.npz", **arrays)
    return rec


def _tolerate_reset_ctx(mx) -> None:
    """GluonCV's action models call ``reset_ctx`` on parameters that ``pretrained_base=False``
    left uninitialized; MXNet refuses. Here that is a no-op (the net is initialized later)."""
    original = mx.gluon.Parameter.reset_ctx

    def reset_ctx(self, ctx):
        if self._data is None and not self._deferred_init:
            return None
        return original(self, ctx)
    mx.gluon.Parameter.reset_ctx = reset_ctx


def _no_pretrained_base(gcv) -> None:
    """GluonCV 0.10's ``resnet*_v1b_<dataset>`` action models build their base with the
    class default ``pretrained_base=True`` whatever they are given (a download); here that
    default is off."""
    cls = gcv.model_zoo.action_recognition.actionrec_resnetv1b.ActionRecResNetV1b
    original = cls.__init__

    def init(self, *args, **kwargs):
        kwargs["pretrained_base"] = False
        original(self, *args, **kwargs)
    cls.__init__ = init


def worker(names: list[str], out_dir: str) -> None:
    import gluoncv as gcv
    import mxnet as mx
    import numpy as np
    _tolerate_reset_ctx(mx)
    _no_pretrained_base(gcv)
    log = os.path.join(out_dir, "results.jsonl")
    for name in names:
        common.log_start(log, name)
        t0 = time.time()
        rec = run_one(mx, gcv, np, name, out_dir)
        rec["seconds"] = round(time.time() - t0, 2)
        common.log_result(log, rec)
        print(name, rec["built"], rec["exported"], rec["seconds"], flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--family", choices=common.FAMILIES)
    ap.add_argument("--models", nargs="*")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--worker", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.worker:
        worker(args.models, args.out)
        return
    names = args.models
    if not names:
        import gluoncv
        every = list(gluoncv.model_zoo.get_model_list())
        names = [n for n in every if not common.is_quantized(n)]
        with open(os.path.join(args.out, "meta.json"), "w") as f:
            json.dump({"gluoncv": gluoncv.__version__, "models": len(every),
                       "int8": len(every) - len(names), "names": names}, f)
    if args.family:
        names = [n for n in names if common.family(n) == args.family]
    env = {"MXNET_MKLDNN_ENABLED": "0"}  # MXNet's 3-D convolutions fail with oneDNN
    common.drive([sys.executable, __file__, "--worker", "--out", args.out, "--models"], names,
                 os.path.join(args.out, "results.jsonl"), args.timeout, env)


if __name__ == "__main__":
    main()
