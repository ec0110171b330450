"""What the GluonCV zoo generator (MXNet side) and checker (symgraph side) share: numpy
only, so both virtualenvs import it.

- ``param_value``: every parameter from its name and shape alone (``RandomState`` seeded
  with the name's CRC-32), so symgraph rebuilds MXNet's parameters without a params file;
- ``family``: the task family of a GluonCV architecture name;
- ``attempts``: the constructor arguments and input shapes tried, smallest first;
- ``model_input``: the deterministic input of a given shape;
- ``widen_json`` / ``zero_skipped_rois``: the graph rewrites of the float64 check (every
  float32 dtype to float64; ROIAlign's rows for rois of batch index -1 zeroed, as MXNet's GPU
  kernel writes them and its CPU kernel leaves them uninitialised).

>>> bool(param_value("conv0_running_var", (3,)).min() > 0)
True
>>> family("yolo3_darknet53_voc"), family("psp_resnet101_ade"), family("resnet18_v1")
('detection', 'segmentation', 'classification')
"""
from __future__ import annotations

import json
import os
import subprocess
import time
import zlib

import numpy as np

FAMILIES = ("classification", "detection", "segmentation", "pose", "action", "other")

_DETECTION = ("ssd_", "yolo3_", "faster_rcnn", "mask_rcnn", "doublehead_rcnn",
              "custom_faster_rcnn", "custom_mask_rcnn", "center_net_")
_SEGMENTATION = ("fcn_", "psp_", "deeplab_", "icnet_", "fastscnn_", "danet_")
_POSE = ("simple_pose_", "mobile_pose_", "alpha_pose_")
_ACTION_2D_DATA = ("_ucf101", "_hmdb51", "_kinetics400", "_sthsthv2", "_kinetics700")
_ACTION_3D = ("c3d_", "p3d_", "r2plus1d_", "i3d_", "slowfast_")
_ACTION_CUSTOM = ("resnet18_v1b_custom", "resnet50_v1b_custom")
_OTHER = ("siamrpn_", "monodepth2_")


def family(name: str) -> str:
    """The task family of the architecture ``name`` (``FAMILIES``)."""
    if name.startswith(_DETECTION):
        return "detection"
    if name.startswith(_SEGMENTATION):
        return "segmentation"
    if name.startswith(_POSE):
        return "pose"
    if name.startswith(_ACTION_3D) or name.endswith(_ACTION_2D_DATA) or name in _ACTION_CUSTOM:
        return "action"
    if name.startswith(_OTHER):
        return "other"
    return "classification"


def is_quantized(name: str) -> bool:
    """int8 models: quantization ops are out of scope (docs/compat.md)."""
    return name.endswith("_int8")


def param_value(name: str, shape, dtype="float32") -> np.ndarray:
    """The fixed value of parameter ``name``: uniform noise from ``RandomState(crc32(name))``
    scaled by its role (weights of variance 1/fan-in, gamma near 1, positive variances)."""
    shape = tuple(int(s) for s in shape)
    rs = np.random.RandomState(zlib.crc32(name.encode("utf-8")) & 0xFFFFFFFF)
    u = rs.uniform(-1.0, 1.0, size=shape)
    if name.endswith(("running_var", "moving_var")):
        v = 0.5 + 0.5 * np.abs(u)
    elif name.endswith("gamma"):
        v = 1.0 + 0.1 * u
    elif name.endswith(("beta", "bias", "running_mean", "moving_mean")) or len(shape) < 2:
        v = 0.1 * u
    else:
        fan_in = max(1, int(np.prod(shape[1:])))
        v = u * np.sqrt(3.0 / fan_in)
    return v.astype(dtype)


def model_input(shape) -> np.ndarray:
    """The input both sides feed: uniform in [-1, 1) from ``RandomState(0)``."""
    return np.random.RandomState(0).uniform(-1.0, 1.0, size=tuple(shape)).astype("float32")


_NO_DOWNLOAD = {"pretrained": False, "pretrained_base": False}


def _image(sizes, extra=None):
    return [(dict(_NO_DOWNLOAD, **(extra(s) if extra else {})), [(1, 3, s, s)]) for s in sizes]


def attempts(name: str) -> list[tuple[dict, list[tuple]]]:
    """``(get_model kwargs, input shapes)`` to try in order for ``name``; the first that
    builds and runs is the one recorded. ``*custom*`` detection models get two classes;
    action models no Kinetics weights."""
    extra = {}
    if family(name) == "action":  # fine-tuned action models load Kinetics weights otherwise
        extra = {"use_kinetics_pretrain": False}
    elif "custom" in name:
        extra = {"classes": ["a", "b"]}
    return [(dict(kw, **extra), shapes) for kw, shapes in _attempts(name)]


def _attempts(name: str) -> list[tuple[dict, list[tuple]]]:
    fam = family(name)
    if fam == "classification":
        if name.startswith("cifar_"):
            return _image([32])
        return _image([64, 128, 224, 299, 331])
    if fam == "detection":
        return _image([128, 256, 320, 512])
    if fam == "segmentation":
        sized = _image([64, 128], lambda s: {"crop_size": s, "base_size": s,
                                              "height": s, "width": s})
        return sized + _image([64, 128]) + _image([480])
    if fam == "pose":
        return [(dict(_NO_DOWNLOAD), [(1, 3, h, w)]) for h, w in ((64, 48), (128, 96),
                                                                  (256, 192))]
    if fam == "action":
        if name.startswith(_ACTION_3D):
            return [(dict(_NO_DOWNLOAD), [(1, 3, t, s, s)])
                    for t, s in ((8, 64), (16, 64), (32, 64), (36, 64), (40, 64), (80, 64),
                                 (16, 112), (32, 224), (64, 224))]
        return _image([64, 224, 299])
    if name.startswith("siamrpn_"):
        return [(dict(_NO_DOWNLOAD), [(1, 3, 127, 127), (1, 3, 255, 255)])]
    return [(dict(_NO_DOWNLOAD), [(1, 3, 64, 64)]), (dict(_NO_DOWNLOAD), [(1, 3, 192, 640)])]


# ops whose float32 output dtype is a default attribute the JSON leaves out
_FLOAT32_DEFAULT = {"argsort", "topk", "_arange", "_zeros", "_ones", "_full", "_linspace",
                    "_eye", "_contrib_arange_like", "_random_uniform", "_random_normal"}


def widen_json(graph_json: str) -> str:
    """The graph with every float32 dtype attribute (explicit or default) made float64."""
    graph = json.loads(graph_json)
    for node in graph["nodes"]:
        attrs = node.get("attrs", {})
        if node["op"] in _FLOAT32_DEFAULT and "dtype" not in attrs:
            node.setdefault("attrs", attrs)["dtype"] = "float64"
        elif attrs.get("dtype") == "float32":
            attrs["dtype"] = "float64"
        if attrs.get("__dtype__") == "0":  # variables' float32 type flag
            attrs["__dtype__"] = "1"
    return json.dumps(graph)


def zero_skipped_rois(graph_json: str) -> str:
    """The graph with each ``_contrib_ROIAlign`` computed as MXNet's GPU kernel does for
    rois of a negative batch index (their output rows zero): MXNet's CPU kernel
    (roi_align.cc, ``top_data[n] = 0``) leaves those rows uninitialised and zeroes element
    ``n`` of the output instead, a row of some other roi. Rewritten as ``where(batch >= 0,
    ROIAlign(data, rois with the batch index clamped to 0), 0)``."""
    graph = json.loads(graph_json)
    nodes, remap = [], {}

    def add(op, name, inputs, attrs=None):
        nodes.append({"op": op, "name": name, "attrs": attrs or {}, "inputs": inputs})
        return [len(nodes) - 1, 0, 0]

    for old, node in enumerate(graph["nodes"]):
        node = dict(node, inputs=[[remap[i], o, v] for i, o, v in node["inputs"]])
        if node["op"] != "_contrib_ROIAlign":
            nodes.append(node)
            remap[old] = len(nodes) - 1
            continue
        (data, rois), name = node["inputs"], node["name"]
        batch = add("slice_axis", f"{name}_batch", [rois], {"axis": "1", "begin": "0", "end": "1"})
        boxes = add("slice_axis", f"{name}_boxes", [rois], {"axis": "1", "begin": "1",
                                                            "end": "None"})
        first = add("relu", f"{name}_batch0", [batch])
        valid = add("Concat", f"{name}_rois", [first, boxes], {"dim": "1", "num_args": "2"})
        out = add(node["op"], name, [data, valid], node.get("attrs"))
        keep = add("_greater_equal_scalar", f"{name}_keep", [batch], {"scalar": "0"})
        keep = add("Reshape", f"{name}_keep4", [keep], {"shape": "(-1, 1, 1, 1)"})
        keep = add("broadcast_like", f"{name}_keepall", [keep, out])
        zero = add("zeros_like", f"{name}_zero", [out])
        remap[old] = add("where", f"{name}_zeroed", [keep, out, zero])[0]
    graph["nodes"] = nodes
    graph["arg_nodes"] = [i for i, n in enumerate(nodes) if n["op"] == "null"]
    graph["heads"] = [[remap[i], o, v] for i, o, v in graph["heads"]]
    graph.pop("node_row_ptr", None)
    return json.dumps(graph)


def compare(got: np.ndarray, want: np.ndarray, rtol: float = 1e-3) -> tuple[bool, float]:
    """``(close, worst error relative to want's largest magnitude)`` for one output."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return False, float("inf")
    if want.size == 0:
        return True, 0.0
    scale = max(float(np.max(np.abs(want[np.isfinite(want)]), initial=0.0)), 1e-12)
    same = (got == want) | (np.isnan(got) & np.isnan(want))  # equal infinities too
    with np.errstate(invalid="ignore"):
        err = np.where(same, 0.0, np.abs(got - want))
        ok = bool(np.all(same | (err <= rtol * np.abs(want) + rtol * scale)))
    return ok, float(np.nanmax(err) / scale)


def read_log(log: str) -> tuple[dict, tuple | None]:
    """A worker's ``results.jsonl``: ``(finished records by name, (name, start time) of the
    model it is inside, or None)``."""
    done, started = {}, None
    if os.path.exists(log):
        with open(log) as f:
            for line in f:
                rec = json.loads(line)
                if "start" in rec:
                    started = (rec["start"], rec["time"])
                else:
                    done[rec["name"]] = rec
                    started = None
    return done, started


def log_start(log: str, name: str) -> None:
    """A worker says it starts ``name`` (so a crash or hang is charged to it)."""
    with open(log, "a") as f:
        f.write(json.dumps({"start": name, "time": time.time()}) + "\n")


def log_result(log: str, rec: dict) -> None:
    with open(log, "a") as f:
        f.write(json.dumps(rec) + "\n")


def drive(command: list[str], names: list[str], log: str, timeout: float,
          env: dict | None = None) -> None:
    """Run ``command + names-not-yet-done`` until every name has a record in ``log``; a
    worker that dies or spends over ``timeout`` seconds in one model is killed, that model
    recorded as such, and a new worker goes on after it."""
    while True:
        done, _ = read_log(log)
        todo = [n for n in names if n not in done]
        if not todo:
            return
        proc = subprocess.Popen(command + todo, env=dict(os.environ, **(env or {})),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while proc.poll() is None:
            time.sleep(2)
            _, started = read_log(log)
            if started and time.time() - started[1] > timeout:
                proc.kill()
                proc.wait()
                break
        after, started = read_log(log)
        if not started and len(after) == len(done):
            raise RuntimeError(f"worker {command[:3]} made no progress (exit {proc.returncode})")
        if started:
            log_result(log, {"name": started[0], "family": family(started[0]), "crashed": True,
                             "errors": [f"worker died or ran past {timeout:.0f} s "
                                        f"(exit {proc.returncode})"]})
