"""A short tour of the sprout package: one simulation, its figures as a DataFrame, a sweep of a
parameter by hand, and a chart of a link's capacity against what Sprout delivered.

    pip install ./python pandas matplotlib      # matplotlib is optional
    python python/examples/tutorial.py [TRACES_DIR] [--out capacity.png]

It uses the paper's Verizon-LTE-short link from TRACES_DIR (default ../shared/traces beside the
repository), else a synthetic link from the paper's own model.
"""

import argparse
from pathlib import Path

import numpy as np

import sprout

ROOT = Path(__file__).resolve().parents[2]


def links(traces_dir):
    """(uplink, downlink): the paper's Verizon-LTE-short traces, or synthetic ones."""
    up, down = traces_dir / "Verizon-LTE-short.up", traces_dir / "Verizon-LTE-short.down"
    if up.is_file() and down.is_file():
        return sprout.Trace.load(up), sprout.Trace.load(down)
    print(f"({up} not found: using a synthetic link, the paper's model, 140 s)")
    return (sprout.Trace.synthetic(seed=1, seconds=140, name="Synthetic.up"),
            sprout.Trace.synthetic(seed=2, seconds=140, name="Synthetic.down"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="?", type=Path, default=ROOT.parent / "shared" / "traces")
    ap.add_argument("--out", type=Path, default=Path("capacity.png"), help="chart (PNG)")
    a = ap.parse_args()
    up, down = links(a.traces)
    print(up, down, sep="\n")

    # 1. One simulation: the figures of `sprout sim --json` (str(result) is that JSON).
    result = sprout.simulate("sprout", up, down, records=True)
    m = result.downlink
    print(f"\nSprout on {down.name}: {m['throughput_kbps']:.0f} kbit/s "
          f"({100 * m['utilization']:.1f}% of capacity), "
          f"self-inflicted delay {m['self_inflicted_ms']:.0f} ms")

    # 2. Several schemes as one DataFrame (needs pandas): a row per scheme and direction.
    try:
        import pandas as pd
    except ImportError:
        pd = None
    if pd is not None:
        frames = [sprout.simulate(s, up, down).to_pandas() for s in ("sprout", "sprout-ewma", "cubic")]
        table = pd.concat(frames, ignore_index=True)
        print("\n" + table[["scheme", "direction", "throughput_kbps", "utilization",
                            "self_inflicted_ms"]].to_string(index=False))

        # A parameter by hand: the forecast's confidence (the paper's Figure 9).
        rows = [{"confidence": c, **sprout.simulate("sprout", up, down, confidence=c).downlink}
                for c in (0.05, 0.25, 0.5, 0.75, 0.95)]
        print("\n" + pd.DataFrame(rows)[["confidence", "throughput_kbps", "self_inflicted_ms"]]
              .to_string(index=False))

    # 3. Capacity per second (numpy) against Sprout's delivered rate from the per-packet records.
    capacity = down.capacity(1000)
    rec = result.records
    mine = rec["direction"] == "down"
    seconds = (rec["arrived_us"][mine] // 1_000_000).astype(np.int64)
    delivered = np.bincount(seconds, weights=rec["bytes"][mine], minlength=len(capacity))
    delivered_mbps = delivered[: len(capacity)] * 8 / 1e6
    print(f"\n{down.name}: mean capacity {capacity.mean():.2f} Mbit/s, "
          f"Sprout delivered {delivered_mbps.mean():.2f} Mbit/s on average")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: no chart)")
        return
    t = np.arange(len(capacity))
    fig, ax = plt.subplots(figsize=(9, 3.5))
    ax.fill_between(t, capacity, step="post", alpha=0.3, label="capacity")
    ax.step(t, delivered_mbps, where="post", label="Sprout delivered")
    ax.axvline(result["skip_s"], color="gray", linestyle=":", label="measured from")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("Mbit/s")
    ax.set_title(down.name)
    ax.legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(a.out, dpi=100)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
