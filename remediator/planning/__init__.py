"""Stage 2, deciding, as building blocks of `planner.py`: conditions -> owned taints (`taints.py`), and the one gate
every strategy's evictions pass (`cycle.py`: DefaultEvictor, limits and cool-down, node fit, the cycle's books).
Pure: nothing here writes."""
