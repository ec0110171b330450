"""Bootstrap of the ``mxnet`` import alias (see symgraph.alias): on PYTHONPATH only under
``python -m symgraph run``; importing it swaps itself for symgraph."""
from symgraph.alias import install

install()
