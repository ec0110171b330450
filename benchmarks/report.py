"""Plots of benchmark results: every ratio a result JSON holds, as one bar chart.

The suites write different JSON shapes (a row per workload, per peer, per model...), but
every comparison is a number under a key that starts with ``ratio`` or ``speedup`` (a rate
ratio: above 1 symgraph is ahead) or ``time_ratio`` (symgraph's time over the peer's, drawn
as its inverse so that every bar reads the same way); its bar is labelled with the row's
identifying fields (``workload``, ``model``, ``peer``...) and the key. A line at 1.0 marks
parity with the peer.

>>> rows = ratio_bars({"rows": [{"workload": "mlp", "ratio_vs_torch": 1.5},
...                             {"workload": "lstm", "ratio_vs_torch": 0.8}]})
>>> [(label, value) for label, value in rows]
[('mlp ratio_vs_torch', 1.5), ('lstm ratio_vs_torch', 0.8)]
>>> ratio_bars({"benchmark": "overhead", "time_ratio_vs_torch_eager": 0.5})
[('overhead 1/time_ratio_vs_torch_eager', 2.0)]
"""
from __future__ import annotations

import numbers

_NAMES = ("benchmark", "kernel", "workload", "model", "peer", "name", "length", "workers",
          "optimizer", "head")


def _number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _bars(result, pick, prefix: str = "") -> list[tuple[str, float]]:
    """Walk ``result`` (nested dicts and lists): ``pick(key, value)`` gives the bars of one
    entry as ``(label suffix, value)`` pairs (None: descend into it); labels start with the
    identifying fields of the rows around."""
    bars: list[tuple[str, float]] = []
    if isinstance(result, dict):
        name = " ".join(str(result[k]) for k in _NAMES if isinstance(result.get(k), (str, int))
                        and not isinstance(result.get(k), bool))
        here = " ".join(p for p in (prefix, name) if p)
        for key, value in result.items():
            picked = pick(key, value)
            if picked is not None:
                bars += [(f"{here} {label}".strip(), v) for label, v in picked]
            elif isinstance(value, (dict, list)):
                bars += _bars(value, pick, here)
    elif isinstance(result, list):
        for item in result:
            bars += _bars(item, pick, prefix)
    return bars


def _ratio(key: str, value):
    if key.startswith("time_ratio") and _number(value) and value > 0:
        return [(f"1/{key}", 1.0 / float(value))]
    if key.startswith(("ratio", "speedup")):
        if _number(value):
            return [(key, float(value))]
        if isinstance(value, dict):
            return [(f"{key} {k}", float(v)) for k, v in value.items() if _number(v)]
    return None


def ratio_bars(result) -> list[tuple[str, float]]:
    """``(label, ratio)`` of every ratio or speedup in ``result``."""
    return _bars(result, _ratio)


def rate_bars(result) -> list[tuple[str, float]]:
    """``(label, value)`` of every throughput (a key ending in ``_per_s``) in ``result``:
    what a run without any peer can still show.

    >>> rate_bars({"symgraph_images_per_s": 812.5, "mxnet_images_per_s": None})
    [('symgraph_images_per_s', 812.5)]
    """
    return _bars(result, lambda key, value: [(key, float(value))]
                 if key.endswith("_per_s") and _number(value) else None)


def plot_ratios(result: dict, path: str, title: str) -> bool:
    """Write the bar chart of ``result``'s ratios to ``path`` (PNG), or of its throughputs
    where no peer was measured; False when there is nothing to plot or matplotlib is
    missing (``pip install -e ".[bench]"``)."""
    bars = ratio_bars(result)
    rates = not bars
    if rates:
        bars = rate_bars(result)
    if not bars:
        return False
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print('matplotlib is not installed (pip install -e ".[bench]"): no plot written')
        return False
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.32 * len(bars)))
    labels, values = zip(*bars)
    if rates:
        ax.barh(range(len(bars)), values, color="tab:blue")
        ax.set_xlabel("per second (no peer was measured in this run)")
    else:
        ax.barh(range(len(bars)), values, color=["tab:green" if v >= 1 else "tab:red"
                                                 for v in values])
        ax.axvline(1.0, color="black", linewidth=1)
        ax.set_xlabel("ratio (> 1: symgraph ahead of the peer it is compared with)")
    ax.set_yticks(range(len(bars)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_title(f"{title} — {result.get('device', '?')}, {result.get('date', '?')}, "
                 f"{str(result.get('commit', '?'))[:10]}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
