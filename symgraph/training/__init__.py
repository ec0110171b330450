"""The training loops behind MXNet's `mx.model` and `mx.mod` paths: checkpoints
(`model_io`), kvstore plumbing (`model_kvstore`), `_train_multi_device` (`fit_loop`) and
`FeedForward` (`feedforward`). `symgraph.model` re-exports MXNet's names from here."""
