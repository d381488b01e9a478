"""nodemedic remediator: condition-to-taint rules, safe evictions and utilization strategies."""

__version__ = "0.1.0"
