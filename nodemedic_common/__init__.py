"""Primitives both programs use, so each has one definition: the agent and the remediator import this package,
never each other. It imports nothing from either of them."""
