"""mx.gluon.data.vision: transforms (against numpy/OpenCV) and the datasets, read from
tiny files in MXNet's layouts written here (idx-ubyte .gz, CIFAR binary batches, images
in folders, .rec/.idx, .lst)."""
import gzip
import struct

import cv2
import numpy as np
import pytest

import symgraph as mx
from symgraph.base import FileFormatError, MXNetError
from symgraph.gluon import nn
from symgraph.gluon.data import DataLoader, vision
from symgraph.gluon.data.vision import DatasetNotFoundError, transforms


def _image(h=12, w=10, seed=0):
    return np.random.RandomState(seed).randint(0, 256, (h, w, 3)).astype(np.uint8)


# ---------------------------------------------------------------- transforms
def test_to_tensor_and_normalize_match_numpy():
    img = _image()
    tensor = transforms.ToTensor()(mx.nd.array(img, dtype="uint8"))
    want = img.transpose(2, 0, 1).astype(np.float32) / 255
    np.testing.assert_allclose(tensor.asnumpy(), want, rtol=1e-6)
    mean, std = (0.1, 0.2, 0.3), (0.5, 2.0, 4.0)
    out = transforms.Normalize(mean, std)(tensor).asnumpy()
    np.testing.assert_allclose(out, (want - np.reshape(mean, (3, 1, 1)))
                               / np.reshape(std, (3, 1, 1)), rtol=1e-5, atol=1e-6)
    with pytest.raises(MXNetError):
        transforms.ToTensor()(mx.nd.zeros((1, 1, 2, 2, 3), dtype="uint8"))


@pytest.mark.parametrize("hybridize", [False, True])
def test_compose_fuses_hybrid_runs_and_matches_eager(hybridize):
    chain = transforms.Compose([transforms.Cast("float32"), transforms.ToTensor(),
                                transforms.Normalize(0.5, 0.25),
                                transforms.RandomApply(transforms.Cast("float64"), p=1.0)])
    assert [type(b).__name__ for b in chain] == ["HybridSequential", "RandomApply"]
    img = _image()
    net = nn.HybridSequential()
    net.add(transforms.ToTensor(), transforms.Normalize(0.5, 0.25))
    if hybridize:
        net.hybridize()
    out = chain(mx.nd.array(img))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.asnumpy(), net(mx.nd.array(img)).asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(out.asnumpy(),
                               (img.transpose(2, 0, 1) / 255.0 - 0.5) / 0.25, atol=1e-6)


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_resize_matches_opencv(dtype):
    img = _image(30, 20).astype(dtype)
    out = transforms.Resize((8, 12))(mx.nd.array(img, dtype=dtype)).asnumpy()
    np.testing.assert_allclose(out, cv2.resize(img, (8, 12), interpolation=cv2.INTER_LINEAR),
                               atol=1e-3)
    short = transforms.Resize(10, keep_ratio=True)(mx.nd.array(img, dtype=dtype))
    assert short.shape == (15, 10, 3)
    batch = transforms.Resize(6)(mx.nd.array(np.stack([img, img]), dtype=dtype))
    assert batch.shape == (2, 6, 6, 3)
    with pytest.raises(MXNetError):
        transforms.Resize(-3, keep_ratio=True)(mx.nd.array(img, dtype=dtype))


def test_crops_match_numpy_slices():
    img = _image(12, 10)
    x = mx.nd.array(img, dtype="uint8")
    np.testing.assert_array_equal(transforms.CropResize(2, 3, 4, 5)(x).asnumpy(),
                                  img[3:8, 2:6])
    resized = transforms.CropResize(2, 3, 4, 5, size=(2, 3), interpolation=1)(x).asnumpy()
    np.testing.assert_array_equal(resized, cv2.resize(np.ascontiguousarray(img[3:8, 2:6]),
                                                      (2, 3), interpolation=cv2.INTER_LINEAR))
    np.testing.assert_array_equal(transforms.CenterCrop((4, 6))(x).asnumpy(), img[3:9, 3:7])
    with pytest.raises(MXNetError):
        transforms.CropResize(8, 0, 4, 4)(x)
    np.random.seed(1)
    assert transforms.RandomResizedCrop((5, 7))(x).shape == (7, 5, 3)


def test_random_flips_give_the_image_or_its_mirror():
    img = _image(4, 5)
    x = mx.nd.array(img, dtype="uint8")
    for block, mirror in ((transforms.RandomFlipLeftRight(), img[:, ::-1]),
                          (transforms.RandomFlipTopBottom(), img[::-1])):
        seen = set()
        for _ in range(20):
            out = block(x).asnumpy()
            same, flipped = np.array_equal(out, img), np.array_equal(out, mirror)
            assert same or flipped
            seen.add(flipped)
        assert seen == {True, False}


def test_hybridized_random_transforms_draw_anew_each_call():
    img = _image(4, 5)
    chain = transforms.Compose([transforms.RandomFlipLeftRight(), transforms.ToTensor()])
    assert [type(b).__name__ for b in chain] == ["HybridSequential"]  # one cached graph
    plain = img.transpose(2, 0, 1) / 255.0
    outs = [chain(mx.nd.array(img, dtype="uint8")).asnumpy() for _ in range(16)]
    flipped = [np.allclose(o, plain[:, :, ::-1], atol=1e-6) for o in outs]
    assert all(f or np.allclose(o, plain, atol=1e-6) for f, o in zip(flipped, outs))
    assert any(flipped) and not all(flipped)


def test_color_transforms_keep_shape_dtype_and_identity_at_zero():
    x = mx.nd.array(_image(), dtype="uint8")
    for block in (transforms.RandomBrightness(0.0), transforms.RandomContrast(0.0),
                  transforms.RandomSaturation(0.0), transforms.RandomLighting(0.0),
                  transforms.RandomColorJitter()):
        out = block(x)
        assert out.dtype == np.uint8
        np.testing.assert_array_equal(out.asnumpy(), x.asnumpy(), err_msg=type(block).__name__)
    for block in (transforms.RandomBrightness(0.5), transforms.RandomHue(0.2),
                  transforms.RandomColorJitter(0.1, 0.1, 0.1, 0.1),
                  transforms.RandomLighting(0.1)):
        assert block(x).shape == x.shape


def test_rotations():
    # MXNet's test_rotate: a 90 degree turn moves the right-middle pixel to the top
    img = mx.nd.array([[[0., 0., 0.], [0., 0., 1.], [0., 0., 0.]]])
    np.testing.assert_allclose(transforms.Rotate(90.)(img).asnumpy(),
                               [[[0., 1., 0.], [0., 0., 0.], [0., 0., 0.]]], atol=1e-6)
    with pytest.raises(TypeError, match="float32"):
        transforms.Rotate(10.)(mx.nd.ones((3, 4, 4), dtype="uint8"))
    with pytest.raises(ValueError):
        transforms.RandomRotation([-10, 10], rotate_with_proba=1.1)
    with pytest.raises(ValueError):
        transforms.RandomRotation([10, -10])
    data = mx.nd.random_normal(shape=(3, 6, 8))
    assert transforms.RandomRotation([-100., 100.], rotate_with_proba=0.0)(data) is data
    assert transforms.RandomRotation([-10., 10.])(data).shape == (3, 6, 8)


def test_random_apply_probability():
    import random
    random.seed(0)
    block = transforms.RandomApply(transforms.Cast("float64"), p=0.3)
    x = mx.nd.ones((2, 2, 3))
    applied = sum(block(x).dtype == np.float64 for _ in range(400))
    assert 0.22 < applied / 400 < 0.38


# ---------------------------------------------------------------- datasets
def _write_idx(path, magic, array):
    header = struct.pack(f">{1 + array.ndim}I", magic, *array.shape)
    with gzip.open(path, "wb") as fout:
        fout.write(header + array.astype(np.uint8).tobytes())


@pytest.mark.parametrize("cls", [vision.MNIST, vision.FashionMNIST])
def test_mnist_reads_idx_ubyte_files(tmp_path, cls):
    rng = np.random.RandomState(2)
    images, labels = rng.randint(0, 256, (5, 28, 28)), rng.randint(0, 10, 5)
    _write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", 2051, images)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", 2049, labels)
    data = cls(str(tmp_path), train=False)
    assert len(data) == 5
    img, label = data[3]
    assert img.shape == (28, 28, 1) and img.dtype == np.uint8 and label.dtype == np.int32
    np.testing.assert_array_equal(img.asnumpy()[:, :, 0], images[3])
    assert label == labels[3]
    scaled = cls(str(tmp_path), train=False,
                 transform=lambda x, y: (x.astype("float32") / 255, y + 1))
    np.testing.assert_allclose(scaled[0][0].asnumpy()[:, :, 0], images[0] / 255, rtol=1e-6)
    assert scaled[0][1] == labels[0] + 1
    with pytest.raises(DatasetNotFoundError, match="train-images-idx3-ubyte.gz"):
        cls(str(tmp_path), train=True)


def test_mnist_rejects_corrupt_files(tmp_path):
    labels = np.arange(3)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", 2049, labels)
    _write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", 2049, np.zeros((3, 28, 28)))
    with pytest.raises(FileFormatError, match="magic number 2049 at offset 0, expected 2051"):
        vision.MNIST(str(tmp_path), train=False)
    with gzip.open(tmp_path / "t10k-images-idx3-ubyte.gz", "wb") as fout:
        fout.write(struct.pack(">IIII", 2051, 3, 28, 28) + bytes(100))
    with pytest.raises(FileFormatError, match="the file holds 100"):
        vision.MNIST(str(tmp_path), train=False)
    (tmp_path / "t10k-images-idx3-ubyte.gz").write_bytes(b"not gzip")
    with pytest.raises(FileFormatError, match="gzip"):
        vision.MNIST(str(tmp_path), train=False)


def _cifar_rows(images, *label_columns):
    planes = images.transpose(0, 3, 1, 2).reshape(len(images), -1)  # R, G, B planes
    return np.concatenate([np.stack(label_columns, 1), planes], 1).astype(np.uint8)


def test_cifar10_reads_binary_batches(tmp_path):
    rng = np.random.RandomState(4)
    images, labels = rng.randint(0, 256, (10, 32, 32, 3)), rng.randint(0, 10, 10)
    for i in range(5):
        _cifar_rows(images[2 * i:2 * i + 2], labels[2 * i:2 * i + 2]).tofile(
            tmp_path / f"data_batch_{i + 1}.bin")
    data = vision.CIFAR10(str(tmp_path))
    assert len(data) == 10
    for i in (0, 7):
        np.testing.assert_array_equal(data[i][0].asnumpy(), images[i])
        assert data[i][1] == labels[i]
    with pytest.raises(DatasetNotFoundError, match="test_batch.bin"):
        vision.CIFAR10(str(tmp_path), train=False)
    (tmp_path / "data_batch_3.bin").write_bytes(b"\0" * 3000)
    with pytest.raises(FileFormatError, match="3073-byte CIFAR records"):
        vision.CIFAR10(str(tmp_path))


def test_cifar100_coarse_and_fine_labels(tmp_path):
    images = np.random.RandomState(5).randint(0, 256, (3, 32, 32, 3))
    folder = tmp_path / "cifar-100-binary"  # the official archive's folder works too
    folder.mkdir()
    _cifar_rows(images, [1, 2, 3], [40, 50, 60]).tofile(folder / "test.bin")
    coarse = vision.CIFAR100(str(tmp_path), train=False)
    fine = vision.CIFAR100(str(tmp_path), fine_label=True, train=False)
    assert [int(y) for _, y in coarse] == [1, 2, 3] and [int(y) for _, y in fine] == [40, 50, 60]
    np.testing.assert_array_equal(fine[2][0].asnumpy(), images[2])


def _write_pngs(root):
    """root/<class>/<n>.png images (lossless), returned as RGB arrays by class."""
    out = {}
    for k, name in enumerate(("bus", "car")):
        (root / name).mkdir()
        out[name] = [_image(5, 4, seed=10 * k + i) for i in range(2)]
        for i, rgb in enumerate(out[name]):
            cv2.imwrite(str(root / name / f"{i}.png"), rgb[:, :, ::-1])
    (root / "notes.txt").write_text("not a class")
    (root / "car" / "skip.txt").write_text("not an image")
    return out


def test_image_folder_dataset(tmp_path):
    images = _write_pngs(tmp_path)
    with pytest.warns(UserWarning, match="Ignoring"):
        data = vision.ImageFolderDataset(str(tmp_path))
    assert data.synsets == ["bus", "car"] and len(data) == 4
    np.testing.assert_array_equal(data[3][0].asnumpy(), images["car"][1])
    assert data[3][1] == 1
    with pytest.warns(UserWarning):
        grey = vision.ImageFolderDataset(str(tmp_path), flag=0)
    assert grey[0][0].shape == (5, 4, 1)
    with pytest.raises(DatasetNotFoundError):
        vision.ImageFolderDataset(str(tmp_path / "absent"))


def test_image_record_dataset_with_worker_loader(tmp_path):
    rec_path = str(tmp_path / "img.rec")
    rec = mx.recordio.MXIndexedRecordIO(str(tmp_path / "img.idx"), rec_path, "w")
    images = [_image(6, 5, seed=i) for i in range(4)]
    for i, img in enumerate(images):
        rec.write_idx(i, mx.recordio.pack_img((0, float(i), i, 0), img[:, :, ::-1],
                                              img_fmt=".png"))
    rec.close()
    data = vision.ImageRecordDataset(rec_path)
    np.testing.assert_array_equal(data[2][0].asnumpy(), images[2])
    loader = DataLoader(data.transform_first(transforms.ToTensor()), batch_size=2,
                        num_workers=2)
    batches = list(loader)
    assert [b[0].shape for b in batches] == [(2, 3, 6, 5)] * 2
    assert np.concatenate([b[1].asnumpy() for b in batches]).tolist() == [0, 1, 2, 3]
    np.testing.assert_allclose(batches[1][0].asnumpy()[1],
                               images[3].transpose(2, 0, 1) / 255.0, atol=1e-6)


def test_image_list_dataset(tmp_path):
    images = _write_pngs(tmp_path)
    (tmp_path / "list.lst").write_text("0\t1\tcar/0.png\n1\t0\t2.5\tbus/1.png\n")
    data = vision.ImageListDataset(str(tmp_path), "list.lst")
    np.testing.assert_array_equal(data[0][0].asnumpy(), images["car"][0])
    assert data[0][1].asnumpy().tolist() == [1.0] and data[1][1].asnumpy().tolist() == [0, 2.5]
    listed = vision.ImageListDataset(str(tmp_path), [[3, "bus/0.png"]])
    assert listed[0][1].asnumpy().tolist() == [3.0] and len(listed) == 1
    (tmp_path / "bad.lst").write_text("0\tone\tbus/0.png\n")
    with pytest.raises(FileFormatError, match="line 1"):
        vision.ImageListDataset(str(tmp_path), "bad.lst")
    with pytest.raises(ValueError):
        vision.ImageListDataset(str(tmp_path), None)


# ---------------------------------------------------------------- MXNet 1.9.1 fixtures
_FIXTURES = np.load(str(__import__("pathlib").Path(__file__).parent / "fixtures" / "gluon_data"
                        / "transforms.npz"))
_CASES = {  # the table of tests/fixtures/gluon_data/generate.py
    "to_tensor": ("img", lambda: transforms.ToTensor()),
    "to_tensor_batch": ("batch", lambda: transforms.ToTensor()),
    "normalize": ("tensor", lambda: transforms.Normalize((0.1, 0.2, 0.3), (0.5, 0.6, 0.7))),
    "resize_wh": ("img", lambda: transforms.Resize((5, 4))),
    "resize_keep": ("img", lambda: transforms.Resize(4, keep_ratio=True)),
    "resize_nearest": ("img", lambda: transforms.Resize(6, interpolation=0)),
    "resize_batch": ("batch", lambda: transforms.Resize((4, 6))),
    "resize_float": ("img_f", lambda: transforms.Resize((5, 6))),
    "crop_resize": ("img", lambda: transforms.CropResize(1, 2, 4, 5)),
    "crop_resize_size": ("img", lambda: transforms.CropResize(1, 2, 4, 5, size=(3, 3),
                                                              interpolation=1)),
    "center_crop": ("img", lambda: transforms.CenterCrop(4)),
    "center_crop_up": ("img", lambda: transforms.CenterCrop((12, 10))),
    "compose": ("img", lambda: transforms.Compose([
        transforms.Resize(6), transforms.CenterCrop(4), transforms.ToTensor(),
        transforms.Normalize(0.5, 0.2)])),
    "cast": ("img", lambda: transforms.Cast("float16")),
}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_transforms_match_mxnet(name):
    src, make = _CASES[name]
    data = _FIXTURES[f"in_{src}"]
    want = _FIXTURES[name]
    got = make()(mx.nd.array(data, dtype=data.dtype)).asnumpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
