"""Sparse storage: the row_sparse and csr formats (:mod:`.formats`), the generic storage rules
operators declare (:mod:`.rules`) and the dispatch between sparse kernels and the dense
fallback (:mod:`.dispatch`). ``mx.nd.sparse`` is :mod:`symgraph.ndarray.sparse`."""
