"""Measured usage (`metricsUtilization`): the node and pod usage a metrics source reports, read at most every few
seconds and only when a strategy asks for it: the resource metrics API (metrics.k8s.io) or a Prometheus query."""
