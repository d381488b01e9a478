"""Repair after the drain: the ladders' state, their rails and their planning (docs/repair.md)."""
