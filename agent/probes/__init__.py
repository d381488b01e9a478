"""Probes of a service that answers over the network: a component's healthz (`healthz.py`), and the count of
failures in a row before a probe's condition turns True (`debounce.py`). The kubelet, kube-proxy and cluster DNS
checks judge with them."""
