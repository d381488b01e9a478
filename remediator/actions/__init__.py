"""Stage 3, the only writers of the plan: the taint writer and the evictor (the Eviction API, PDBs honoured)."""
