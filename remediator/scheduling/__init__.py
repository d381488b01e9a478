"""Where a pod could go, as kube-scheduler decides it: node fit and its predicates (tolerations, selectors,
affinity, topology spread, zones) and requests-based usage. Pure functions of a Snapshot."""
