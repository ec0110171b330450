"""Stand-in for dmlc/mxnet-memonger (not part of MXNet's tree): profiler_executor.py imports it
but only calls it with use_memonger=True, which it never passes."""


def search_plan(sym, **kwargs):
    raise NotImplementedError("memonger is not installed; the examples run never call it")
