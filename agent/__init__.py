"""nodemedic agent: per-node problem detection reported as NodeConditions and Events."""

__version__ = "0.1.0"
