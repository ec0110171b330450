"""Every operator's docstring examples run (they also document the generated ``sym.X`` and
``nd.X`` functions, which doctest collection would only meet by chance)."""
import doctest

import pytest

from symgraph.ops import canonical_ops

DOCUMENTED = [op for op in canonical_ops() if ">>>" in op.doc]


@pytest.mark.parametrize("op", DOCUMENTED, ids=[op.name for op in DOCUMENTED])
def test_op_doc_examples_run(op):
    parser = doctest.DocTestParser()
    test = parser.get_doctest(op.doc, {}, op.name, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0, f"{op.name}: {runner.failures} failing examples (run with -s)"
