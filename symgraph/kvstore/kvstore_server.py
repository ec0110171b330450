"""``KVStoreServer``: MXNet's parameter-server role, mapped onto symgraph's launch contract.

symgraph's distributed stores (:mod:`symgraph.kvstore.dist`) all-reduce among the workers;
there are no parameter servers holding weights. A process that MXNet's launcher starts
with ``DMLC_ROLE=server`` (or ``scheduler``) serves from ``import mxnet`` on, as MXNet's
does: it waits until every worker is done and exits (:func:`symgraph.distributed.serve_role`).
:meth:`KVStoreServer.run` does the same in such a process; in a worker it is unsupported.

>>> import symgraph as mx
>>> server = KVStoreServer(mx.kv.create('local'))
>>> server.run()
Traceback (most recent call last):
...
symgraph.base.UnsupportedError: KVStoreServer.run in a worker process is not supported by \
symgraph: ...
"""
from __future__ import annotations

import logging
import pickle

from ..base import unsupported

__all__ = ["KVStoreServer"]


class KVStoreServer:
    """The server of a distributed key-value store.

    Parameters
    ----------
    kvstore : KVStore
        The store the server applies commands to (``set_optimizer``).
    """

    def __init__(self, kvstore):
        self.kvstore = kvstore
        self.handle = getattr(kvstore, "handle", None)
        self.init_logginig = False  # MXNet's spelling

    def _controller(self):
        """The command handler: command 0 carries a pickled optimizer for the store."""
        def server_controller(cmd_id: int, cmd_body: bytes, _=None) -> None:
            if not self.init_logginig:
                head = f"%(asctime)-15s Server[{self.kvstore.rank}] %(message)s"
                logging.basicConfig(level=logging.DEBUG, format=head)
                self.init_logginig = True
            if cmd_id == 0:
                self.kvstore.set_optimizer(pickle.loads(cmd_body))  # MXNet's protocol
            else:
                print(f"server {self.kvstore.rank}, unknown command ({cmd_id}, {cmd_body})")
        return server_controller

    def run(self) -> None:
        """Serve until the workers are done, then exit (server or scheduler processes)."""
        from ..distributed import serve_role
        serve_role()  # exits the process in a server or scheduler role
        raise unsupported(
            "KVStoreServer.run in a worker process",
            "symgraph's distributed stores all-reduce among the workers without parameter "
            "servers; a process started with DMLC_ROLE=server serves at `import mxnet`")
