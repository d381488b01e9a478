"""Syntax checks of Kubernetes names that several sections share: each returns the problem, or None."""

from __future__ import annotations

import re

_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
# The integer fields of Kubernetes objects and component configurations: a value past them is refused when decoded
# (kube-scheduler: "cannot unmarshal number ... of type int32"), not when the policy is read, unless checked here.
INT32 = (-(2**31), 2**31 - 1)  # maxSkew, exit codes, a PriorityClass value
INT64 = (-(2**63), 2**63 - 1)  # an eviction's gracePeriodSeconds


def qualified_name_problem(key: str) -> str | None:
    """Label and taint keys: an optional DNS-subdomain prefix and "/", then a name of up to 63 characters."""
    prefix, slash, name = key.rpartition("/")
    if slash and (len(prefix) > 253 or not DNS_SUBDOMAIN.fullmatch(prefix)):
        return f"invalid key {key!r}: the prefix before '/' must be a lowercase DNS subdomain (e.g. nodemedic.io)"
    if len(name) > 63 or not _LABEL_NAME.fullmatch(name):
        return (f"invalid key {key!r}: the name must be 1-63 characters of A-Z, a-z, 0-9, '-', '_', '.', "
                "starting and ending with a letter or digit")
    return None


def label_value_problem(value: str) -> str | None:
    if value and (len(value) > 63 or not _LABEL_NAME.fullmatch(value)):
        return (f"invalid value {value!r}: at most 63 characters of A-Z, a-z, 0-9, '-', '_', '.', "
                "starting and ending with a letter or digit")
    return None


def dns_subdomain_problem(name: str, what: str) -> str | None:
    """Names the API server checks as DNS-1123 subdomains (most object names, a pod's spec.schedulerName)."""
    if len(name) > 253 or not DNS_SUBDOMAIN.fullmatch(name):
        return (f"invalid {what} {name!r}: must be a lowercase DNS subdomain: at most 253 characters of a-z, 0-9, "
                "'-' and '.', each dot-separated part starting and ending with a letter or digit")
    return None


def namespace_problem(name: str) -> str | None:
    if len(name) > 63 or not _DNS_LABEL.fullmatch(name):
        return f"invalid namespace {name!r}: must be a lowercase DNS label"
    return None



# Taint keys other components own and act on. nodemedic writes a rule's taint and removes it on recovery, so a rule
# on one of these keys fights or fakes its owner (removing node.kubernetes.io/unschedulable uncordons a node that is
# being drained). Checked most specific first; the general *.kubernetes.io / *.k8s.io reservation comes last.
_OWNED_PREFIXES = (
    ("node.kubernetes.io/out-of-service", "kube-controller-manager force-deletes the pods on a node with it and "
                                          "force-detaches their volumes"),
    ("node.kubernetes.io/", "the node lifecycle controller and the kubelet own node.kubernetes.io/* (not-ready and "
                            "unreachable evict every pod, unschedulable is a cordon)"),
    ("node.cloudprovider.kubernetes.io/", "the cloud controller manager owns node.cloudprovider.kubernetes.io/*"),
    ("node-role.kubernetes.io/", "the cluster installer owns node-role.kubernetes.io/* (control-plane isolation)"),
    ("karpenter.sh/", "Karpenter owns karpenter.sh/* (it disrupts and deletes nodes by them)"),
    ("ToBeDeletedByClusterAutoscaler", "cluster-autoscaler owns it (it marks a node it is deleting)"),
    ("DeletionCandidateOfClusterAutoscaler", "cluster-autoscaler owns it (it marks a node it may delete soon)"),
)
_RESERVED_DOMAINS = ("kubernetes.io", "k8s.io", "karpenter.sh")


def owned_taint_problem(key: str) -> str | None:
    """Why nodemedic must not write, remove or drain for taint `key`, or None when it may."""
    prefix = key.rpartition("/")[0]
    why = next((why for owned, why in _OWNED_PREFIXES
                if key == owned or (owned.endswith("/") and key.startswith(owned))), None)
    if why is None and any(prefix == d or prefix.endswith("." + d) for d in _RESERVED_DOMAINS):
        why = f"the prefix {prefix} is reserved for Kubernetes' and the node autoscalers' own components"
    return f"taint key {key!r} is not nodemedic's: {why}" if why else None
