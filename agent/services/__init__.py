"""A node service watched from the node: its own healthz, probed with a debounce (`healthz.py`: kubelet,
kube-proxy), and how often it restarted (`restarts.py`: kubelet, kube-proxy, the container runtime)."""
