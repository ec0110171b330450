"""Command-line tools of MXNet 1.9.1's ``tools/`` folder (``python -m symgraph.tools.im2rec``)."""
