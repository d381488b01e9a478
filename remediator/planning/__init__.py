"""Stage 2, deciding: conditions -> owned taints (`taints.py`), then every strategy's evictions through one gate
(`cycle.py`: DefaultEvictor, limits, node fit, the cycle's books) into one Plan (`planner.py`). Writes nothing."""
