"""PNG plots (matplotlib, Agg backend), written atomically."""

from __future__ import annotations

import io
from typing import Any, Dict, Optional

from .io import PathLike, write_atomic


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()


def _save(fig: Any, path: PathLike) -> None:
    write_atomic(path, _png(fig))


def plot_experiment(rep: Dict[str, Any], path: Optional[PathLike] = None) -> bytes:
    """Published vs simulated ratio to the baseline, one pair of bars per non-baseline cell,
    grouped by row. Written to ``path`` if given; the PNG bytes are returned."""
    plt = _pyplot()
    cells = [r for r in rep["rows"] if not r["baseline"]]
    labels = [f"{r['row']}\n{r['variant']}" for r in cells]
    pub = [r["published_ratio"] if r["published_ratio"] is not None else float("nan") for r in cells]
    sim = [r["simulated_ratio"] if r["simulated_ratio"] is not None else float("nan") for r in cells]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.75 * len(cells) + 2), 4.2))
    x = range(len(cells))
    w = 0.38
    ax.bar([i - w / 2 for i in x], pub, w, label="published", color="#4c72b0")
    ax.bar([i + w / 2 for i in x], sim, w, label="simulated", color="#dd8452")
    for i, r in enumerate(cells):
        if r["verdict"] == "differs":
            top = max(v for v in (pub[i], sim[i], 0.0) if v == v)
            ax.annotate("differs", (i, top), ha="center", va="bottom", fontsize=7, color="#c03030")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, fontsize=7, rotation=45 if len(cells) > 8 else 0, ha="right" if len(cells) > 8 else "center")
    ax.set_ylabel(f"ratio to {rep['baseline']}")
    scale = "" if rep["scale"] == 1 else f" (scale 1/{rep['scale']:g})"
    ax.set_title(f"{rep['experiment']}: {rep['cells_agree']}/{rep['cells']} cells agree{scale}", fontsize=10)
    ax.legend(fontsize=8)
    data = _png(fig)
    plt.close(fig)
    if path is not None:
        write_atomic(path, data)
    return data


def plot_run(result: Any, path: PathLike) -> None:
    """Memory, swap traffic and readahead hit rate over virtual time."""
    plt = _pyplot()
    ts = result.timeseries
    fig, axes = plt.subplots(3, 1, figsize=(8, 7.5), sharex=True)
    mib = 4096 / 2**20
    if len(ts):
        t = ts["t_s"]
        for col in ("nr_free_pages", "nr_active_anon", "nr_inactive_anon", "nr_active_file",
                    "nr_inactive_file", "swap_used_pages"):
            if col in ts:
                axes[0].plot(t, ts[col] * mib, label=col.replace("nr_", "").replace("_pages", ""))
        dt = t.diff().fillna(t.iloc[0] if len(t) else 1.0).replace(0, float("nan"))
        for col in ("pswpin", "pswpout"):
            if col in ts:
                axes[1].plot(t, ts[col].diff().fillna(ts[col].iloc[0]) * mib / dt, label=col)
        if "ra_hit_rate" in ts:
            axes[2].plot(t, ts["ra_hit_rate"] * 100, label="ra hit", color="#55a868")
    else:
        axes[0].text(0.5, 0.5, "no samples", ha="center", transform=axes[0].transAxes)
    axes[0].set_ylabel("MiB")
    axes[1].set_ylabel("swap MiB/s")
    axes[2].set_ylabel("readahead hit %")
    axes[2].set_xlabel("virtual time (s)")
    for ax in axes:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper right")
    axes[0].set_title(result.name or "swaplab run", fontsize=10)
    _save(fig, path)
    plt.close(fig)
