"""Stage 2, deciding, as building blocks of `control/planner.py`: conditions -> owned taints (`taints.py`), and the
one gate every strategy's evictions pass (`gate.py`, its `checks.py` in order: DefaultEvictor, limits and cool-down,
PDBs; `books.py`: node fit, the cycle's books).
Pure: nothing here writes."""
