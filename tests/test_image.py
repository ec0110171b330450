"""``mx.image`` (symgraph/image/) against MXNet 1.9.1's results recorded by
tests/fixtures/mx_image/generate.py, plus behaviour ported from MXNet's
tests/python/unittest/test_image.py on images these tests write to tmp_path.

Seeded cases seed Python's ``random`` and ``numpy.random`` as the generator did: symgraph
draws in MXNet's order, so crops, jitters and shuffles equal MXNet's. Pixels go through
OpenCV: exact except bicubic resizes (interp 2, also picked by 9 and 10), within one level.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import cv2
import numpy as np
import pytest

import symgraph as mx
from symgraph.ops.image import opencv_resize

HERE = Path(__file__).resolve().parent / "fixtures" / "mx_image"
EXPECTED = np.load(HERE / "expected.npz")
META = json.loads((HERE / "cases.json").read_text())


def _base():
    return mx.image.imdecode((HERE / "base.jpg").read_bytes())


def _close(got, key, atol=0.0):
    want = EXPECTED[key]
    assert got.shape == want.shape, (key, got.shape, want.shape)
    np.testing.assert_allclose(np.asarray(got, np.float64), want.astype(np.float64),
                               rtol=1e-5 if atol < 1 else 0, atol=atol, err_msg=key)


@pytest.fixture
def images(tmp_path):
    """Five small JPEGs of different sizes in tmp_path; their names."""
    rng = np.random.RandomState(0)
    names = []
    for i, (h, w) in enumerate([(30, 40), (50, 20), (24, 24), (40, 33), (21, 47)]):
        img = (rng.uniform(0, 255, (h // 3 + 1, w // 3 + 1, 3))).astype(np.uint8)
        img = cv2.resize(img, (w, h), interpolation=cv2.INTER_LINEAR)
        names.append(f"img{i}.jpg")
        cv2.imwrite(str(tmp_path / names[-1]), img)
    return names


# ---------------------------------------------------------------- decoding and resizing

def test_imdecode_accepts_bytes_bytearray_numpy_and_ndarray():
    data = (HERE / "prog.jpg").read_bytes()
    want = EXPECTED["decode/prog.jpg/1/1"]
    for buf in (data, bytearray(data), np.frombuffer(data, np.uint8),
                mx.nd.array(np.frombuffer(data, np.uint8), dtype="uint8")):
        np.testing.assert_array_equal(mx.image.imdecode(buf).asnumpy(), want)
    with pytest.raises(ValueError, match="bytes"):
        mx.image.imdecode(data.decode("latin-1"))


def test_imdecode_flag_to_rgb_and_out():
    data = (HERE / "rgba.png").read_bytes()
    np.testing.assert_array_equal(mx.image.imdecode(data, 0).asnumpy(),
                                  EXPECTED["decode/rgba.png/0/1"])
    out = mx.nd.zeros(EXPECTED["decode/rgba.png/1/0"].shape, dtype="uint8")
    mx.image.imdecode(data, to_rgb=False, out=out)
    np.testing.assert_array_equal(out.asnumpy(), EXPECTED["decode/rgba.png/1/0"])


def test_imdecode_errors_are_mxnet_errors():
    # ported from MXNet's test_imdecode_empty_buffer / test_imdecode_invalid_image
    for data in (b"", b"clearly not image content"):
        with pytest.raises(mx.base.MXNetError):
            mx.image.imdecode(data)


def test_imread_equals_mxnet_and_imdecode(images, tmp_path):
    np.testing.assert_array_equal(mx.image.imread(str(HERE / "prog.jpg")).asnumpy(),
                                  EXPECTED["imread/prog.jpg"])
    path = tmp_path / images[0]
    bgr = mx.image.imread(str(path), to_rgb=0).asnumpy()
    np.testing.assert_array_equal(bgr, cv2.imread(str(path)))
    np.testing.assert_array_equal(mx.image.imread(str(path), flag=0).asnumpy()[:, :, 0],
                                  cv2.imread(str(path), cv2.IMREAD_GRAYSCALE))
    with pytest.raises(mx.base.MXNetError):
        mx.img.image.imread("/139810923jadjsajlskd.___adskj/blah.jpg")


def test_scale_down():
    # ported from MXNet's test_scale_down
    assert mx.image.scale_down((640, 480), (720, 120)) == (640, 106)
    assert mx.image.scale_down((360, 1000), (480, 500)) == (360, 375)
    assert mx.image.scale_down((300, 400), (0, 0)) == (0, 0)


def test_interp_method_codes():
    get = mx.image._get_interp_method
    assert [get(i) for i in range(5)] == list(range(5))
    assert get(9) == 2 and get(9, (4, 4, 8, 8)) == 2 and get(9, (8, 8, 4, 4)) == 3
    assert get(9, (8, 4, 4, 8)) == 1
    random.seed(3)
    draws = {get(10) for _ in range(50)}
    assert draws == {0, 1, 2, 3, 4}
    with pytest.raises(ValueError, match="Unknown interp method 5"):
        get(5)


def test_resize_short_center_and_fixed_crop_equal_mxnet():
    base = _base()
    for size in (10, 20):
        _close(mx.image.resize_short(base, size, interp=9).asnumpy(), f"resize_short/9/{size}",
               atol=1)
    _close(mx.image.center_crop(base, (30, 20), interp=9)[0].asnumpy(), "center_crop/9", atol=1)
    _close(mx.image.fixed_crop(base, 3, 2, 10, 12, size=(20, 6), interp=1).asnumpy(),
           "fixed_crop")


def test_imresize_and_copymakeborder_functions():
    base = _base()
    _close(mx.image.imresize(base, 13, 11, interp=3).asnumpy(), "resize/u8/3/13x11")
    _close(mx.image.copyMakeBorder(base[:8, :9], 2, 3, 4, 1, type=4,
                                   values=(10, 200, 30)).asnumpy(), "border/4")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_seeded_random_crops_equal_mxnet(seed):
    base = _base()
    random.seed(seed)
    img, rect = mx.image.random_crop(base, (12, 9), interp=10)
    assert list(rect) == META[f"random_crop/{seed}"]
    _close(img.asnumpy(), f"random_crop/{seed}", atol=1)
    random.seed(seed)
    img, rect = mx.image.random_size_crop(base, (10, 10), 0.3, (0.75, 1.33), interp=1)
    assert list(rect) == META[f"random_size_crop/{seed}"]
    _close(img.asnumpy(), f"random_size_crop/{seed}")


def test_random_size_crop_ratio_bounds_and_min_area():
    # ported from MXNet's test_random_size_crop
    rng = np.random.RandomState(1)
    src = mx.nd.array(rng.rand(120, 90, 3) * 255)
    random.seed(0)
    for _ in range(5):
        out, (x0, y0, w, h) = mx.image.random_size_crop(src, (90, 120), 0.08, (0.75, 1))
        assert out.shape == (120, 90, 3) and 0.7 <= w / h <= 1.05
        assert 0 <= x0 <= 90 - w and 0 <= y0 <= 120 - h
    with pytest.warns(DeprecationWarning):
        mx.image.random_size_crop(src, (10, 10), None, (1, 1), min_area=0.5)


def test_color_normalize_in_place():
    # ported from MXNet's test_color_normalize
    rng = np.random.RandomState(2)
    mean, std = rng.rand(3) * 255, rng.rand(3) + 1
    src = rng.rand(20, 30, 3) * 255.0
    arr = mx.nd.array(src)
    out = mx.image.color_normalize(arr, mx.nd.array(mean), mx.nd.array(std))
    np.testing.assert_allclose(out.asnumpy(), (src - mean) / std, rtol=1e-4, atol=1e-3)
    assert out is arr


def test_imrotate_equals_mxnet_and_errors():
    src = EXPECTED["rotate/src"]
    _close(mx.image.imrotate(mx.nd.array(src[0]), 20).asnumpy(), "rotate/single")
    for mode in ("zoom_in", "zoom_out"):
        got = mx.image.imrotate(mx.nd.array(src), mx.nd.array([15, -40]), **{mode: True})
        _close(got.asnumpy(), f"rotate/{mode}")
    np.testing.assert_allclose(mx.image.imrotate(mx.nd.array(src), 0).asnumpy(), src,
                               atol=1e-5)
    with pytest.raises(ValueError, match="cannot be both"):
        mx.image.imrotate(mx.nd.array(src), 1, zoom_in=True, zoom_out=True)
    with pytest.raises(TypeError, match="float32"):
        mx.image.imrotate(mx.nd.array(src, dtype="float64"), 1)
    with pytest.raises(TypeError, match="scalar"):
        mx.image.imrotate(mx.nd.array(src[0]), mx.nd.array([1, 2]))
    with pytest.raises(ValueError, match="number of images"):
        mx.image.imrotate(mx.nd.array(src), mx.nd.array([1, 2, 3]))
    with pytest.raises(ValueError, match="3D and 4D"):
        mx.image.imrotate(mx.nd.zeros((4, 4)), 1)


def test_random_rotate_shapes():
    # ported from MXNet's test_random_rotate
    single = mx.nd.random.uniform(0, 1, (3, 10, 12))
    assert mx.image.random_rotate(single, (-5.0, 5.0)).shape == (3, 10, 12)
    batch = mx.nd.stack(single, single)
    assert mx.image.random_rotate(batch, (-5.0, 5.0)).shape == (2, 3, 10, 12)


# ---------------------------------------------------------------- augmenters

AUG_NAMES = ["brightness", "contrast", "saturation", "hue", "color_jitter", "lighting", "gray",
             "flip", "normalize", "create"]


def _fixture_augmenters():
    import importlib.util
    spec = importlib.util.spec_from_file_location("mx_image_generate", HERE / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module._augmenters(mx)


@pytest.mark.parametrize("name", AUG_NAMES)
def test_seeded_augmenters_equal_mxnet(name):
    aug = _fixture_augmenters()[name]
    random.seed(7)
    np.random.seed(7)
    got = aug(_base()[:7, :9].astype("float32")).asnumpy()
    _close(got, f"aug/{name}", atol=1e-4)
    assert aug.dumps() == META[f"dumps/{name}"]


def test_create_augmenter_lists_and_errors():
    augs = mx.image.CreateAugmenter((3, 8, 8), resize=10, rand_crop=True, rand_resize=True,
                                    rand_mirror=True, mean=True, std=np.array([1.1, 1, 1]),
                                    brightness=0.1, hue=0.1, pca_noise=0.1, rand_gray=0.2)
    assert [type(a).__name__ for a in augs] == [
        "ResizeAug", "RandomSizedCropAug", "HorizontalFlipAug", "CastAug", "ColorJitterAug",
        "HueJitterAug", "LightingAug", "RandomGrayAug", "ColorNormalizeAug"]
    assert [type(a).__name__ for a in mx.image.CreateAugmenter((3, 4, 4))] == [
        "CenterCropAug", "CastAug"]
    with pytest.raises(ValueError, match="rand_crop"):
        mx.image.CreateAugmenter((3, 4, 4), rand_resize=True)
    with pytest.raises(ValueError, match="mean"):
        mx.image.CreateAugmenter((3, 4, 4), mean=[1, 2, 3])


def test_force_resize_random_order_and_sequential():
    img = mx.nd.array(np.arange(4 * 6 * 3).reshape(4, 6, 3), dtype="uint8")
    assert mx.image.ForceResizeAug((3, 5))(img).shape == (5, 3, 3)
    assert mx.image.RandomCropAug((2, 2))(img).shape == (2, 2, 3)
    flip, cast = mx.image.HorizontalFlipAug(1.0), mx.image.CastAug()
    seq = mx.image.SequentialAug([flip, cast])
    got = seq(img).asnumpy()
    np.testing.assert_array_equal(got, img.asnumpy()[:, ::-1].astype(np.float32))
    assert seq.dumps() == ["sequentialaug", [flip.dumps(), cast.dumps()]]
    assert json.loads(cast.dumps()) == ["castaug", {"type": "float32"}]
    both = mx.image.RandomOrderAug([mx.image.BrightnessJitterAug(0), cast])
    np.testing.assert_array_equal(both(img).asnumpy(), img.asnumpy().astype(np.float32))
    with pytest.raises(NotImplementedError):
        mx.image.Augmenter()(img)


# ---------------------------------------------------------------- ImageIter

def test_imageiter_on_a_rec_file_equals_mxnet():
    random.seed(11)
    it = mx.image.ImageIter(2, (3, 6, 5), path_imgrec=str(HERE / "images.rec"),
                            path_imgidx=str(HERE / "images.idx"), shuffle=True,
                            last_batch_handle="roll_over")
    for epoch in range(2):
        batches = list(it)
        assert len(batches) == len([k for k in EXPECTED.files
                                    if k.startswith(f"iter/{epoch}/") and k.endswith("pad")])
        for i, batch in enumerate(batches):
            _close(batch.data[0].asnumpy(), f"iter/{epoch}/{i}/data")
            _close(batch.label[0].asnumpy(), f"iter/{epoch}/{i}/label")
            assert batch.pad == int(EXPECTED[f"iter/{epoch}/{i}/pad"])
        it.reset()


def test_imageiter_sequential_rec_and_parts():
    rec = str(HERE / "images.rec")
    labels = [b.label[0].asnumpy().tolist() for b in mx.image.ImageIter(5, (3, 4, 4),
                                                                        path_imgrec=rec)]
    assert labels == [[0.0, 1.0, 2.0, 3.0, 0.0]]
    part = mx.image.ImageIter(1, (3, 4, 4), path_imgrec=rec, path_imgidx=str(HERE / "images.idx"),
                              num_parts=2, part_index=1, last_batch_handle="discard")
    assert [b.label[0].asnumpy().tolist() for b in part] == [[2.0], [3.0]]
    with pytest.raises(ValueError, match="path_imgidx"):
        mx.image.ImageIter(1, (3, 4, 4), path_imgrec=rec, shuffle=True)


def _last_batch_iters(kind, tmp_path, names, **kwargs):
    return [kind(bs, (3, 16, 16), path_root=str(tmp_path), last_batch_handle=h, **kwargs)
            for bs, h in ((2, "pad"), (3, "discard"), (3, "pad"), (3, "roll_over"))]


def _check_last_batch(iters):
    """MXNet's _test_imageiter_last_batch on 5 samples (batch sizes 2 and 3)."""
    for _ in range(2):
        assert [b.data[0].shape for b in iters[0]] == [(2, 3, 16, 16)] * 3
        iters[0].reset()
    assert len(list(iters[1])) == 1
    padded = list(iters[2])
    assert [b.pad for b in padded] == [0, 1]
    np.testing.assert_array_equal(padded[1].data[0][2].asnumpy(), padded[0].data[0][0].asnumpy())
    roll = iters[3]
    first = [b.data[0].asnumpy() for b in roll]
    assert len(first) == 1
    roll.reset()
    batch = roll.next()
    assert batch.pad == 1  # MXNet pads a rolled-over batch by its rolled-over count
    np.testing.assert_array_equal(batch.data[0][2].asnumpy(), first[0][0])


def test_imageiter_imglist_and_list_file_last_batch(images, tmp_path):
    # ported from MXNet's test_imageiter (with images written here, nothing downloaded)
    imglist = [[i % 3, name] for i, name in enumerate(images)]
    lst = tmp_path / "list.lst"
    lst.write_text("".join(f"{i}\t{i % 3}\t{name}\n" for i, name in enumerate(images)))
    for dtype in ("int32", "float64"):
        _check_last_batch(_last_batch_iters(mx.image.ImageIter, tmp_path, images,
                                            imglist=imglist, dtype=dtype))
        _check_last_batch(_last_batch_iters(mx.image.ImageIter, tmp_path, images,
                                            path_imglist=str(lst), dtype=dtype))
    it = mx.image.ImageIter(5, (3, 8, 8), path_imglist=str(lst), path_root=str(tmp_path))
    assert it.next().label[0].asnumpy().tolist() == [0, 1, 2, 0, 1]


def test_imageiter_data_is_augmented_chw(images, tmp_path):
    it = mx.image.ImageIter(1, (3, 10, 12), imglist=[[1, images[2]]], path_root=str(tmp_path),
                            data_name="img", label_name="lab")
    assert it.provide_data == [("img", (1, 3, 10, 12))]
    assert it.provide_label == [("lab", (1,))]
    img = cv2.imread(str(tmp_path / images[2]))[:, :, ::-1]  # 24x24 RGB
    want = img[7:17, 6:18]  # the centred 12x10 window (it fits: no resize)
    np.testing.assert_array_equal(it.next().data[0].asnumpy()[0], want.transpose(2, 0, 1))


def test_imageiter_label_width_and_custom_aug_list(images, tmp_path):
    augs = [mx.image.ForceResizeAug((4, 3)), mx.image.CastAug("float64")]
    it = mx.image.ImageIter(2, (3, 3, 4), label_width=2, aug_list=augs, path_root=str(tmp_path),
                            imglist=[[1, 2, images[0]], [3, 4, images[1]]], dtype="int64")
    assert it.provide_label == [("softmax_label", (2, 2))]
    batch = it.next()
    assert batch.label[0].asnumpy().tolist() == [[1, 2], [3, 4]]
    img = cv2.imread(str(tmp_path / images[1]))[:, :, ::-1]
    # bicubic as MXNet's OpenCV computes it (checked against MXNet in test_ops_image.py)
    want = opencv_resize(np.ascontiguousarray(img), 4, 3, cv2.INTER_CUBIC)
    np.testing.assert_array_equal(batch.data[0].asnumpy()[1], want.transpose(2, 0, 1))


def test_imageiter_errors_name_the_problem(images, tmp_path):
    with pytest.raises(ValueError, match="path_imgrec"):
        mx.image.ImageIter(1, (3, 4, 4))
    with pytest.raises(ValueError, match="label not supported"):
        mx.image.ImageIter(1, (3, 4, 4), imglist=[[0, images[0]]], dtype="uint8")
    with pytest.raises(ValueError, match="3 channels"):
        mx.image.ImageIter(1, (1, 4, 4), imglist=[[0, images[0]]])
    (tmp_path / "bad.jpg").write_bytes(b"not a jpeg")
    it = mx.image.ImageIter(1, (3, 4, 4), imglist=[[0, "bad.jpg"]], path_root=str(tmp_path))
    with pytest.raises(RuntimeError, match="Broken image filename: bad.jpg"):
        it.next()
    (tmp_path / "short.lst").write_text("0\tx.jpg\n")
    with pytest.raises(mx.base.MXNetError, match="short.lst:1"):
        mx.image.ImageIter(1, (3, 4, 4), path_imglist=str(tmp_path / "short.lst"))


def test_augmenters_run_inside_imageiter(images, tmp_path):
    # ported from MXNet's test_augmenters: every augmenter at once
    random.seed(5)
    np.random.seed(5)
    it = mx.image.ImageIter(2, (3, 16, 16), imglist=[[0, n] for n in images],
                            path_root=str(tmp_path), resize=20, rand_crop=True,
                            rand_resize=True, rand_mirror=True, mean=True,
                            std=np.array([1.1, 1.03, 1.05]), brightness=0.1, contrast=0.1,
                            saturation=0.1, hue=0.1, pca_noise=0.1, rand_gray=0.2,
                            inter_method=10, shuffle=True)
    batches = list(it)
    assert len(batches) == 3 and all(np.isfinite(b.data[0].asnumpy()).all() for b in batches)


# ---------------------------------------------------------------- detection

def _objects(rng, n):
    """MXNet's _generate_objects: a [2, 5, objects...] label with n random boxes."""
    xy, wh = rng.rand(n, 2), rng.rand(n, 2) / 2
    boxes = np.clip(np.hstack([xy - wh, xy + wh]), 0, 1)
    cid = rng.randint(0, 20, size=(n, 1))
    return [2, 5] + np.hstack([cid, boxes]).ravel().tolist()


@pytest.mark.parametrize("name", ["crop", "pad", "flip"])
@pytest.mark.parametrize("seed", [1, 2])
def test_seeded_det_augmenters_equal_mxnet(name, seed):
    aug = {"crop": mx.image.DetRandomCropAug(min_object_covered=0.3, area_range=(0.3, 1.0)),
           "pad": mx.image.DetRandomPadAug(area_range=(1.0, 2.5), pad_val=(1, 2, 3)),
           "flip": mx.image.DetHorizontalFlipAug(1.0)}[name]
    random.seed(seed)
    img, label = aug(_base()[:12, :14], np.array(META["det/label"]))
    _close(img.asnumpy(), f"det/{name}/{seed}/img")
    _close(label, f"det/{name}/{seed}/label", atol=1e-7)


def test_det_augmenter_lists_dumps_and_errors():
    augs = mx.image.CreateDetAugmenter((3, 8, 8), resize=10, rand_crop=0.5, rand_pad=0.5,
                                       rand_gray=0.1, rand_mirror=True, mean=True, std=True,
                                       brightness=0.1, pca_noise=0.1, hue=0.1)
    assert [type(a).__name__ for a in augs] == [
        "DetBorrowAug", "DetRandomSelectAug", "DetHorizontalFlipAug", "DetRandomSelectAug",
        "DetBorrowAug", "DetBorrowAug", "DetBorrowAug", "DetBorrowAug", "DetBorrowAug",
        "DetBorrowAug", "DetBorrowAug"]
    borrow = augs[0]
    assert borrow.dumps() == ["detborrowaug", borrow.augmenter.dumps()]
    multi = mx.image.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.5], skip_prob=0.2)
    assert [a.min_object_covered for a in multi.aug_list] == [0.1, 0.5]
    with pytest.raises(TypeError, match="invalid Augmenter"):
        mx.image.DetBorrowAug(mx.image.DetHorizontalFlipAug(0.5))
    with pytest.raises(ValueError, match="DetAugmenter"):
        mx.image.DetRandomSelectAug([mx.image.CastAug()])
    with pytest.warns(UserWarning, match="Skip DetRandomCropAug"):
        assert not mx.image.DetRandomCropAug(area_range=(0.5, 0.1)).enabled
    with pytest.raises(ValueError, match="mean"):
        mx.image.CreateDetAugmenter((3, 4, 4), mean=mx.nd.array([1, 2, 3]))


def test_imagedetiter_labels_last_batch_and_sync(images, tmp_path):
    # ported from MXNet's test_image_detiter (with images written here)
    rng = np.random.RandomState(3)
    counts = [3, 1, 4, 2, 1]
    imglist = [_objects(rng, n) + [name] for n, name in zip(counts, images)]
    it = mx.image.ImageDetIter(2, (3, 20, 20), imglist=imglist, path_root=str(tmp_path))
    assert it.label_shape == (4, 5) and it.provide_label == [("label", (2, 4, 5))]
    batch = it.next()
    label = batch.label[0].asnumpy()
    first = np.array(imglist[0][2:-1]).reshape(-1, 5)
    valid = first[(first[:, 3] > first[:, 1]) & (first[:, 4] > first[:, 2])]
    np.testing.assert_allclose(label[0, :len(valid)], valid, rtol=1e-6)
    assert (label[0, len(valid):] == -1).all() and batch.data[0].shape == (2, 3, 20, 20)
    small = mx.image.ImageDetIter(1, (3, 20, 20), imglist=imglist[1:2], path_root=str(tmp_path))
    assert small.label_shape == (1, 5)
    assert it.sync_label_shape(small) is small and small.label_shape == (4, 5)
    with pytest.raises(ValueError, match="reduce label count"):
        small.reshape(label_shape=(2, 5))
    small.reshape(data_shape=(3, 8, 8))  # the augmenters keep their size, as in MXNet
    assert small.provide_data == [("data", (1, 3, 8, 8))] and small.data_shape == (3, 8, 8)
    lst = tmp_path / "det.lst"
    lst.write_text("".join("\t".join(str(v) for v in [k] + entry) + "\n"
                           for k, entry in enumerate(imglist)))
    _check_last_batch(_last_batch_iters(mx.image.ImageDetIter, tmp_path, images,
                                        path_imglist=str(lst)))


def test_imagedetiter_with_all_augmenters_and_draw_next(images, tmp_path):
    # ported from MXNet's test_det_augmenters
    rng = np.random.RandomState(4)
    imglist = [_objects(rng, 2) + [name] for name in images]
    random.seed(2)
    np.random.seed(2)
    it = mx.image.ImageDetIter(2, (3, 24, 24), imglist=imglist, path_root=str(tmp_path),
                               resize=30, rand_crop=1, rand_pad=1, rand_gray=0.1,
                               rand_mirror=True, mean=True, std=np.array([1.1, 1.03, 1.05]),
                               brightness=0.1, contrast=0.1, saturation=0.1, pca_noise=0.1,
                               hue=0.1, inter_method=10, min_object_covered=0.5,
                               aspect_ratio_range=(0.2, 5), area_range=(0.1, 4.0),
                               min_eject_coverage=0.5, max_attempts=50)
    for batch in it:
        label = batch.label[0].asnumpy()
        boxes = label[label[:, :, 0] >= 0]
        assert len(boxes) and (boxes[:, 1:] >= 0).all() and (boxes[:, 1:] <= 1).all()
    it.reset()
    drawn = list(it.draw_next(color=(255, 0, 0), mean=True, std=np.array([1.1, 1.03, 1.05]),
                              id2labels={k: str(k) for k in range(20)}))
    assert len(drawn) == 5 and all(d.dtype == np.uint8 and d.shape == (24, 24, 3)
                                   for d in drawn)


def test_imagedetiter_refuses_bad_labels(images, tmp_path):
    with pytest.raises(RuntimeError, match="no sample with a label|Label shape"):
        mx.image.ImageDetIter(1, (3, 8, 8), imglist=[[2, 5, 0, 0.1, 0.1, images[0]]],
                              path_root=str(tmp_path))
    it = mx.image.ImageDetIter(1, (3, 8, 8), imglist=[[2, 5, 0, .1, .1, .5, .5, images[0]]],
                               path_root=str(tmp_path))
    with pytest.raises(RuntimeError, match="inconsistent"):
        it._parse_label(np.array([2, 5, 0, 0.1, 0.1, 0.5, 0.5, 0.2]))
    with pytest.raises(TypeError, match="invalid iterator"):
        it.sync_label_shape(mx.image.ImageIter(1, (3, 8, 8), imglist=[[0, images[0]]]))


def test_imagedetiter_reads_a_rec_file(images, tmp_path):
    labels = [[2, 5, 1, 0.1, 0.2, 0.5, 0.6], [2, 5, 0, 0.3, 0.3, 0.9, 0.8, 4, 0.0, 0.0, 0.5, 0.5]]
    rec = mx.recordio.MXIndexedRecordIO(str(tmp_path / "d.idx"), str(tmp_path / "d.rec"), "w")
    for i, (label, name) in enumerate(zip(labels, images)):
        header = mx.recordio.IRHeader(0, np.array(label, np.float32), i, 0)
        rec.write_idx(i, mx.recordio.pack(header, (tmp_path / name).read_bytes()))
    rec.close()
    it = mx.image.ImageDetIter(2, (3, 8, 8), path_imgrec=str(tmp_path / "d.rec"),
                               path_imgidx=str(tmp_path / "d.idx"))
    assert it.label_shape == (2, 5)
    got = it.next().label[0].asnumpy()
    np.testing.assert_allclose(got[0], [[1, 0.1, 0.2, 0.5, 0.6], [-1] * 5], rtol=1e-6)
    np.testing.assert_allclose(got[1], np.reshape(labels[1][2:], (2, 5)), rtol=1e-6)
