"""What the benchmarks share: sample statistics, process cost from /proc, ratios and side-by-side tables, the
cluster and child-process handling around a run."""
