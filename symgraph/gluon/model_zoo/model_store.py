"""Where the model zoo's pretrained weights live: ``<root>/<name>-<short hash>.params``,
named as MXNet 1.9.1 names them.

MXNet downloads a missing file from its model repository; symgraph never uses the
network, so :func:`get_model_file` returns a file that is already there and otherwise
raises ``UnsupportedError`` saying which file to fetch and where to put it.

>>> import os, tempfile
>>> root = tempfile.mkdtemp()
>>> get_model_file('resnet18_v1', root=root)
Traceback (most recent call last):
...
symgraph.base.UnsupportedError: downloading the pretrained weights 'resnet18_v1' is not \
supported by symgraph: symgraph never uses the network; fetch \
https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/gluon/models/resnet18_v1-a0666292.zip \
yourself and unzip it into ... (it holds resnet18_v1-a0666292.params)
>>> short_hash('resnet18_v1')
'a0666292'
"""
from __future__ import annotations

import os
import warnings

from ... import base
from ...base import unsupported
from ...context import cpu
from ..utils import check_sha1

__all__ = ["get_model_file", "purge"]

# the SHA-1 of each pretrained file MXNet 1.9.1 publishes; its first 8 digits name the file
_model_sha1 = {
    "alexnet": "44335d1f0046b328243b32a26a4fbd62d9057b45",
    "densenet121": "f27dbf2dbd5ce9a80b102d89c7483342cd33cb31",
    "densenet161": "b6c8a95717e3e761bd88d145f4d0a214aaa515dc",
    "densenet169": "2603f878403c6aa5a71a124c4a3307143d6820e9",
    "densenet201": "1cdbc116bc3a1b65832b18cf53e1cb8e7da017eb",
    "inceptionv3": "ed47ec45a937b656fcc94dabde85495bbef5ba1f",
    "mobilenet0.25": "9f83e440996887baf91a6aff1cccc1c903a64274",
    "mobilenet0.5": "8e9d539cc66aa5efa71c4b6af983b936ab8701c3",
    "mobilenet0.75": "529b2c7f4934e6cb851155b22c96c9ab0a7c4dc2",
    "mobilenet1.0": "6b8c5106c730e8750bcd82ceb75220a3351157cd",
    "mobilenetv2_1.0": "36da4ff1867abccd32b29592d79fc753bca5a215",
    "mobilenetv2_0.75": "e2be7b72a79fe4a750d1dd415afedf01c3ea818d",
    "mobilenetv2_0.5": "aabd26cd335379fcb72ae6c8fac45a70eab11785",
    "mobilenetv2_0.25": "ae8f9392789b04822cbb1d98c27283fc5f8aa0a7",
    "resnet18_v1": "a0666292f0a30ff61f857b0b66efc0228eb6a54b",
    "resnet34_v1": "48216ba99a8b1005d75c0f3a0c422301a0473233",
    "resnet50_v1": "0aee57f96768c0a2d5b23a6ec91eb08dfb0a45ce",
    "resnet101_v1": "d988c13d6159779e907140a638c56f229634cb02",
    "resnet152_v1": "671c637a14387ab9e2654eafd0d493d86b1c8579",
    "resnet18_v2": "a81db45fd7b7a2d12ab97cd88ef0a5ac48b8f657",
    "resnet34_v2": "9d6b80bbc35169de6b6edecffdd6047c56fdd322",
    "resnet50_v2": "ecdde35339c1aadbec4f547857078e734a76fb49",
    "resnet101_v2": "18e93e4f48947e002547f50eabbcc9c83e516aa6",
    "resnet152_v2": "f2695542de38cf7e71ed58f02893d82bb409415e",
    "squeezenet1.0": "264ba4970a0cc87a4f15c96e25246a1307caf523",
    "squeezenet1.1": "33ba0f93753c83d86e1eb397f38a667eaf2e9376",
    "vgg11": "dd221b160977f36a53f464cb54648d227c707a05",
    "vgg11_bn": "ee79a8098a91fbe05b7a973fed2017a6117723a8",
    "vgg13": "6bc5de58a05a5e2e7f493e2d75a580d83efde38c",
    "vgg13_bn": "7d97a06c3c7a1aecc88b6e7385c2b373a249e95e",
    "vgg16": "e660d4569ccb679ec68f1fd3cce07a387252a90a",
    "vgg16_bn": "7f01cf050d357127a73826045c245041b0df7363",
    "vgg19": "ad2f660d101905472b83590b59708b71ea22b2e5",
    "vgg19_bn": "f360b758e856f1074a85abd5fd873ed1d98297c3",
}

# the defaults of every factory's ``ctx`` and ``root``, evaluated once as in MXNet
_CPU = cpu()
_ROOT = os.path.join(base.data_dir(), "models")

apache_repo_url = "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/"
_url_format = "{repo_url}gluon/models/{file_name}.zip"


def short_hash(name: str) -> str:
    """The 8 hex digits that name ``name``'s pretrained file."""
    if name not in _model_sha1:
        raise ValueError(f"Pretrained model for {name} is not available.")
    return _model_sha1[name][:8]


def get_model_file(name: str, root: str = _ROOT) -> str:
    """The path of the pretrained weights of model ``name``, which must already be in
    ``root`` (``$MXNET_HOME/models`` by default) under MXNet's file name.

    Parameters
    ----------
    name : str
        Name of the model (``'resnet18_v1'``, ``'mobilenet0.25'``...).
    root : str
        Folder holding the ``.params`` files.

    Returns
    -------
    str
        Path to ``<root>/<name>-<short hash>.params``. A file whose SHA-1 differs from
        MXNet's published one is used with a warning (MXNet would download it again).

    Raises
    ------
    UnsupportedError
        The file is not there: symgraph does not download it.
    """
    file_name = f"{name}-{short_hash(name)}"
    root = os.path.expanduser(root)
    file_path = os.path.join(root, file_name + ".params")
    if not os.path.exists(file_path):
        url = _url_format.format(repo_url=apache_repo_url, file_name=file_name)
        raise unsupported(f"downloading the pretrained weights {name!r}",
                          f"symgraph never uses the network; fetch {url} yourself and unzip "
                          f"it into {root} (it holds {file_name}.params)")
    if not check_sha1(file_path, _model_sha1[name]):
        warnings.warn(f"{file_path} differs from MXNet's published {name} weights (SHA-1 "
                      "mismatch); symgraph uses it as it is (MXNet would download it again)",
                      stacklevel=2)
    return file_path


def purge(root: str = _ROOT) -> None:
    """Delete every ``.params`` file in ``root`` (``$MXNET_HOME/models`` by default).

    >>> import os, tempfile
    >>> root = tempfile.mkdtemp()
    >>> open(os.path.join(root, 'alexnet-44335d1f.params'), 'w').close()
    >>> purge(root)
    >>> os.listdir(root)
    []
    """
    root = os.path.expanduser(root)
    for file_name in os.listdir(root):
        if file_name.endswith(".params"):
            os.remove(os.path.join(root, file_name))


def _load_pretrained(net, name: str, ctx, root: str) -> None:
    """Load the local pretrained weights of ``name`` into ``net`` on ``ctx``."""
    net.load_parameters(get_model_file(name, root=root), ctx=ctx)
