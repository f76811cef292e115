#!/usr/bin/env python3
"""Checks the gamma schedule against SciPy's gamma distribution (a library we
did not write): Kolmogorov-Smirnov of all gaps and of the gaps that cross a
block of 16, lag-1 correlation, and the mean gap, for the whole schedule and
for the union of 5 shards (which must be the same offsets).

Run from the repository root (needs numpy and scipy):
    python3 core/tools/gamma_scipy_ks.py
"""
import subprocess

import numpy as np
from scipy import stats

RATE = 0.01


def offsets(k, shards):
    out = subprocess.run(
        ["cargo", "run", "--release", "-q", "-p", "metronome-core", "--example",
         "gamma_offsets", "--", str(k), str(shards)],
        check=True, capture_output=True, text=True).stdout
    return np.array(out.split(), dtype=np.float64)


for k in (0.3, 1.0, 4.0):
    whole = offsets(k, 1)
    assert np.array_equal(whole, offsets(k, 5)), f"k {k}: 5 shards differ from the whole"
    gaps = np.diff(np.concatenate([[0.0], whole]))
    scale = 1e9 / RATE / k
    all_ks = stats.kstest(gaps, "gamma", args=(k, 0, scale))
    crossing = gaps[16::16]
    cross_ks = stats.kstest(crossing, "gamma", args=(k, 0, scale))
    lag1 = np.corrcoef(gaps[:-1], gaps[1:])[0, 1]
    print(f"k {k}: {len(gaps)} gaps, KS D {all_ks.statistic:.5f} p {all_ks.pvalue:.3f}; "
          f"{len(crossing)} block-crossing gaps, KS D {cross_ks.statistic:.4f} p {cross_ks.pvalue:.3f}; "
          f"lag-1 r {lag1:+.4f}; mean gap / (1/rate) {gaps.mean() * RATE / 1e9:.4f}; "
          "5 shards = whole")
