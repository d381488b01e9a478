"""The remediator's contract types, no Kubernetes client types and no I/O: `records.py` the slim cluster records
(`state/records.py` turns API objects into them; strategies read a `Snapshot` of them, state/snapshot.py), `plan.py`
the plan strategies return (only the actions turn a `Plan` into API calls).
Quantities are integers: CPU in millicores, memory and storage in bytes, everything else in units.
"""
