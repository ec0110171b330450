"""The LSTM language-model trainer: perplexity falls on the bundled corpus in a CI-sized run,
every epoch leaves a checkpoint, and a run resumed from a checkpoint equals the run that was
never interrupted."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from symgraph.examples import lstm_bucketing


def _args(out, *extra):
    return lstm_bucketing.parse_args(
        ["--out", str(out), "--max-sentences", "240", "--hidden", "24", "--embed", "16",
         "--buckets", "8,16,32,60", "--batch-size", "16", "--lr", "0.2", "--no-progress",
         *extra])


@pytest.mark.parametrize("cell", ["fused", "unfused"])
def test_perplexity_falls_and_checkpoints_each_epoch(tmp_path, caplog, cell):
    with caplog.at_level(logging.INFO):
        result = lstm_bucketing.train(_args(tmp_path, "--epochs", "3", "--cell", cell))
    ppl = [float(r.getMessage().rsplit("=", 1)[1]) for r in caplog.records
           if "Train-perplexity" in r.getMessage()]
    assert len(ppl) == 3 and ppl[-1] < ppl[0] * 0.8, ppl
    assert result["epochs"] == [0, 1, 2]
    for epoch in (1, 2, 3):
        assert (tmp_path / f"lstm_lm-{epoch:04d}.params").exists()
        assert (tmp_path / f"lstm_lm-{epoch:04d}.states").exists()
    assert lstm_bucketing.latest_checkpoint(result["prefix"]) == 3


def test_resumed_run_equals_uninterrupted(tmp_path):
    straight = lstm_bucketing.train(_args(tmp_path / "a", "--epochs", "2"))
    lstm_bucketing.train(_args(tmp_path / "b", "--epochs", "1"))
    resumed = lstm_bucketing.train(_args(tmp_path / "b", "--epochs", "2", "--resume"))
    assert resumed["epochs"] == [1]
    assert straight["params"].keys() == resumed["params"].keys()
    for name, value in straight["params"].items():
        np.testing.assert_allclose(resumed["params"][name], value, rtol=1e-5, atol=1e-6,
                                   err_msg=name)


def test_help_gives_every_flag_its_default(capsys):
    """Issue #23: --help describes every flag and says its default."""
    parser = lstm_bucketing.build_parser()
    formatter = parser._get_formatter()
    flags = [a for a in parser._actions if a.option_strings != ["-h", "--help"]]
    assert len(flags) == 21
    for action in flags:
        text = formatter._get_help_string(action)
        assert action.help and "default" in text, (action.option_strings, text)
    with pytest.raises(SystemExit):
        lstm_bucketing.parse_args(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--hidden HIDDEN LSTM hidden size (default: 128)" in out
    assert "(default: symgraph-lstm-lm, in the working directory)" in out


def test_the_run_folder_is_announced_first_and_defaults_to_the_working_directory(
        tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    args = lstm_bucketing.parse_args(["--max-sentences", "120", "--hidden", "8", "--embed",
                                      "8", "--buckets", "8,16,32,60", "--batch-size", "8",
                                      "--epochs", "1", "--no-progress"])
    assert args.out == "symgraph-lstm-lm"
    with caplog.at_level(logging.INFO):
        lstm_bucketing.train(args)
    assert caplog.records[0].getMessage() == \
        f"checkpoints and vocabulary go to {tmp_path / 'symgraph-lstm-lm'}"
    assert (tmp_path / "symgraph-lstm-lm" / "lstm_lm.vocab.json").exists()


def test_resume_with_another_corpus_or_model_is_refused(tmp_path):
    from symgraph.examples.lm_files import RunFileError
    first = tmp_path / "a.txt"
    first.write_text("\n".join(f"the cat sat on mat number {i % 7} today" for i in range(80)))
    other = tmp_path / "b.txt"
    other.write_text("\n".join(f"a dog ran in park number {i % 5} now" for i in range(80)))
    common = ["--out", str(tmp_path / "run"), "--hidden", "8", "--embed", "8", "--buckets",
              "12", "--batch-size", "8", "--no-progress"]
    lstm_bucketing.train(lstm_bucketing.parse_args(["--corpus", str(first), "--epochs", "1",
                                                    *common]))
    with pytest.raises(RunFileError, match=r"vocabulary of 8 words from .*a\.txt.*this "
                                           r"corpus \(.*b\.txt\) gives 8 words: 6 of its "
                                           r"words are not in the checkpoint's, e\.g\. 'a', "
                                           r"'dog'"):
        lstm_bucketing.train(lstm_bucketing.parse_args(["--corpus", str(other), "--epochs",
                                                        "2", "--resume", *common]))
    with pytest.raises(RunFileError, match=r"--hidden 8 \(now 16\)"):
        lstm_bucketing.train(lstm_bucketing.parse_args(
            ["--corpus", str(first), "--epochs", "2", "--resume", *common, "--hidden", "16"]))


def test_a_corpus_smaller_than_a_batch_names_the_sizes(tmp_path):
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("one two three\nfour five six\nseven eight nine\n")
    args = lstm_bucketing.parse_args(["--corpus", str(corpus), "--out", str(tmp_path / "o"),
                                      "--no-progress", "--val-fraction", "0"])
    with pytest.raises(lstm_bucketing.CorpusTooSmall,
                       match=r"3 training sentences \(0 held out for validation\), per "
                             r"bucket \(length: sentences\) 10: 3, and a batch takes "
                             r"--batch-size 32"):
        lstm_bucketing.train(args)
    with pytest.raises(SystemExit, match="error: the corpus is too small"):
        lstm_bucketing.main(["--corpus", str(corpus), "--out", str(tmp_path / "o"),
                             "--no-progress"])


def test_the_progress_bar_has_a_total_and_closes_before_the_epoch_summary():
    import io
    from types import SimpleNamespace

    import symgraph as mx
    stream = io.StringIO()
    bar = mx.callback.TqdmProgress(total=3, file=stream)
    for n in range(3):
        bar(SimpleNamespace(epoch=0, nbatch=n, eval_metric=None, locals=None))
    assert bar._bar is None  # closed at the last batch: fit's epoch lines start afresh
    assert "3/3" in stream.getvalue()


def test_resumed_run_prints_the_perplexities_of_an_uninterrupted_one(tmp_path, caplog):
    def perplexities(run):
        return [r.getMessage() for r in run if "perplexity" in r.getMessage()]
    with caplog.at_level(logging.INFO):
        lstm_bucketing.train(_args(tmp_path / "a", "--epochs", "3"))
    straight = perplexities(caplog.records)
    caplog.clear()
    with caplog.at_level(logging.INFO):
        lstm_bucketing.train(_args(tmp_path / "b", "--epochs", "2"))
        lstm_bucketing.train(_args(tmp_path / "b", "--epochs", "3", "--resume"))
    resumed = perplexities(caplog.records)
    assert len(straight) == 6 and resumed == straight


def test_score_and_generate_use_the_trained_model(tmp_path, capsys):
    from symgraph.examples.lm_files import RunFileError
    from symgraph.examples.lm_use import LanguageModel
    lstm_bucketing.train(_args(tmp_path, "--epochs", "3"))
    model = LanguageModel(str(tmp_path))
    assert model.epoch == 3
    sentence = "the value of the expression is"
    scored = model.score(sentence)
    assert scored["words"] == sentence.split() and len(scored["probs"]) == 5
    assert 1.0 < scored["perplexity"] < len(model.vocab) / 4  # far better than uniform
    shuffled = model.score("is the expression value the of")
    assert shuffled["perplexity"] > scored["perplexity"]
    words = model.generate("the class", 6, temperature=0.8, seed=3)
    assert words[:2] == ["the", "class"] and len(words) == 8
    assert all(w in model.vocab for w in words)
    assert model.generate("the class", 6, temperature=0.8, seed=3) == words
    with pytest.raises(RunFileError, match="not in the vocabulary .*'zzzq'"):
        model.score("the zzzq")
    lstm_bucketing.main(["--out", str(tmp_path), "--score", sentence])
    out = capsys.readouterr().out
    assert f"perplexity {scored['perplexity']:.2f}" in out


@pytest.mark.parametrize("text, match", [
    ("{not json", "unreadable run file"),
    ('{"format": "other", "version": 1}', "not a symgraph-lstm-lm run file"),
    ('{"format": "symgraph-lstm-lm", "version": 1, "corpus": "c", "vocab": {"a": -1}, '
     '"model": {}}', "non-negative integer ids"),
    ('{"format": "symgraph-lstm-lm", "version": 1, "corpus": "c", "vocab": {"a": 1, "b": 1},'
     ' "model": {}}', "the same id"),
    ('{"format": "symgraph-lstm-lm", "version": 1, "corpus": "c", "vocab": {"a": 1}, '
     '"model": {"cell": "fused", "hidden": 0, "embed": 4, "layers": 1, "buckets": [5]}}',
     "malformed model settings"),
])
def test_a_damaged_run_file_is_refused_before_use(tmp_path, text, match):
    from symgraph.examples.lm_files import RunFileError, load_run
    (tmp_path / "lstm_lm.vocab.json").write_text(text)
    with pytest.raises(RunFileError, match=match):
        load_run(str(tmp_path / "lstm_lm"))
    with pytest.raises(RunFileError, match="no run file"):
        load_run(str(tmp_path / "missing"))
