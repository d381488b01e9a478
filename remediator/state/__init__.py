"""Stage 1, what the cluster looks like: the REST client (`kube.py`), list+watch caches (`caches.py`) of slim
records (`records.py`, `quantity.py`), and the Snapshot each cycle plans on. Reads only; nothing here writes."""
