"""kcp: build and run a real local Kubernetes control plane (etcd, apiserver, KCM, scheduler, kwok)."""
