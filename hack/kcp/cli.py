"""hack/cluster: build | up [--nodes N] | down | kubeconfig | status | node-service | node-reboot."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

from hack.kcp import build, controlplane, image, karpenter, nodeservice, paths, procs, realnode, versions

DEFAULT_NAME = "nodemedic"


def _cluster(args: argparse.Namespace) -> controlplane.Cluster:
    return controlplane.Cluster.named(args.name)


def cmd_build(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    reports = build.build(build.DEMO if args.demo else args.only or None, jobs=args.jobs)
    if args.json:
        print(json.dumps([dataclasses.asdict(r) for r in reports], indent=1))
        return 0
    print(f"{'component':<12} {'built':<6} {'seconds':>8} {'peak tree RSS MiB':>18} {'peak process RSS MiB':>21}")
    for r in reports:
        print(f"{r.component:<12} {r.built!s:<6} {r.seconds:>8} {r.peak_tree_rss_mib:>18} {r.peak_process_rss_mib:>21}")
    print(f"total {time.monotonic() - t0:.1f}s; binaries under {paths.cache_root() / 'bin'}")
    return 0


def cmd_up(args: argparse.Namespace) -> int:
    if missing := build.missing(build.BINARIES):
        print(f"missing binaries: {', '.join(missing)}; run `hack/cluster build` first", file=sys.stderr)
        return 2
    c = _cluster(args)
    t0 = time.monotonic()
    if args.real_nodes and build.missing(["image"]):
        print("the real node runs the nodemedic image, not built for this code: run `hack/cluster build --only image`",
              file=sys.stderr)
        return 2
    c.up(args.nodes, scheduler_config=args.scheduler_config, timeout=args.timeout, audit=args.audit,
         real_nodes=args.real_nodes)
    if args.autoscaler == "karpenter":
        try:
            karpenter.start(c, karpenter.Options(node_repair=args.node_repair))
        except BaseException:
            c.down(keep_state=True)
            raise
        c.timings["karpenter"] = round(time.monotonic() - t0, 2)
    took = time.monotonic() - t0
    print(json.dumps({"kubeconfig": str(c.kubeconfig), "server": c.server, "nodes": args.nodes,
                      **({"real_node": realnode.NAME, "image": image.reference()} if args.real_nodes else {}),
                      "seconds": round(took, 2), "steps": c.timings,
                      "logs": str(c.log_dir), **({"audit_log": str(c.audit_log)} if c.audit else {}),
                      **({"autoscaler": args.autoscaler, "node_pools": [p.name for p in karpenter.Options().node_pools]}
                         if args.autoscaler else {})}, indent=1))
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    for line in _cluster(args).down(keep_state=args.keep_state):
        print(line)
    return 0


def cmd_kubeconfig(args: argparse.Namespace) -> int:
    c = _cluster(args)
    if not c.kubeconfig.exists():
        print(f"no cluster named {args.name} (state dir {c.state_dir})", file=sys.stderr)
        return 1
    print(c.kubeconfig)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    c = _cluster(args)
    if not c.load():
        print(f"no cluster named {args.name}")
        return 1
    for p in c.processes:
        print(f"{p.name:<24} pid {p.pid:<8} {'running' if procs.is_ours_and_alive(p) else 'gone'}")
    return 0 if len(c.running()) == len(c.processes) else 1


def _state_dir(args: argparse.Namespace) -> Path:
    return Path(args.state_dir).resolve() if args.state_dir else _cluster(args).state_dir


def cmd_node_service(args: argparse.Namespace) -> int:
    return nodeservice.run_restart(_state_dir(args), args.service, args.timeout, args.worker)


def cmd_node_reboot(args: argparse.Namespace) -> int:
    button = Path(args.power_button).resolve() if args.power_button else None
    return nodeservice.run_reboot(_state_dir(args), Path(args.boot_id_file), args.off_seconds, args.delay,
                                  args.worker, power_button=button)


def cmd_versions(_: argparse.Namespace) -> int:
    for name in ("KUBERNETES", "ETCD", "KWOK", "KUBECTL", "DESCHEDULER", "HELM", "KARPENTER", "ACTIONLINT"):
        print(f"{name.lower():<12} {getattr(versions, name)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="hack/cluster", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build the pinned binaries into the cache (idempotent)")
    b.add_argument("--only", action="append", choices=list(build.COMPONENTS))
    b.add_argument("--demo", action="store_true", help=f"only what `make demo` runs: {', '.join(build.DEMO)}")
    b.add_argument("--jobs", type=int, default=2, help="components built side by side (default 2)")
    b.add_argument("--json", action="store_true")
    b.set_defaults(fn=cmd_build)
    for name, fn, helptext in (
        ("up", cmd_up, "start a cluster and N Ready kwok nodes"),
        ("down", cmd_down, "stop the processes `up` started and remove the state directory"),
        ("kubeconfig", cmd_kubeconfig, "print the kubeconfig path"),
        ("status", cmd_status, "list the cluster's processes"),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--name", default=DEFAULT_NAME)
        p.set_defaults(fn=fn)
        if name == "up":
            p.add_argument("--nodes", type=int, default=3)
            p.add_argument("--scheduler-config", type=Path)
            p.add_argument("--timeout", type=float, default=180.0)
            p.add_argument("--autoscaler", choices=["karpenter"],
                           help="also run Karpenter (kwok provider) with its CRDs, a KWOKNodeClass and a test-sized "
                                "NodePool `default` (WhenEmpty, consolidateAfter 5s); its nodes are real NodeClaims")
            p.add_argument("--real-nodes", type=int, choices=[0, 1], default=0,
                           help="1: also a real node (kubelet, kube-proxy, containerd) running the nodemedic image")
            p.add_argument("--node-repair", action="store_true", help="with --autoscaler karpenter: NodeRepair=true")
            p.add_argument("--audit", action="store_true",
                           help="API server audit log of every request (level Metadata) in <state dir>/logs/audit.log")
        if name == "down":
            p.add_argument("--keep-state", action="store_true", help="keep logs and data for inspection")
    ns = sub.add_parser("node-service", help="`systemctl restart` for the real node's services (the agent's repair "
                        "command in the e2e tests): out of the caller's cgroups, stop, start with the same argv, "
                        "wait until it serves; exit 0 once it does")
    ns.add_argument("action", choices=["restart"])
    ns.add_argument("service", choices=list(nodeservice.SERVICES))
    ns.add_argument("--timeout", type=float, default=60.0, help="seconds for it to serve again (default 60)")
    rb = sub.add_parser("node-reboot", help="`systemctl reboot` for the real node: returns at once; a detached worker "
                        "stops every service and container, clears what a reboot clears, writes a new boot id to "
                        "--boot-id-file and starts the services again (log: <state dir>/logs/node-reboot.log)")
    rb.add_argument("--boot-id-file", required=True, help="absolute path; the agent reads it for the boot id")
    rb.add_argument("--off-seconds", type=float, default=0.0, help="seconds the node stays down (default 0)")
    rb.add_argument("--delay", type=float, default=1.0, help="seconds before it goes down (default 1)")
    rb.add_argument("--power-button", help="stay off until this file exists (at most --off-seconds): a node that went "
                    "dark, powered on again when a test says so")
    for p in (ns, rb):
        p.add_argument("--name", default=DEFAULT_NAME)
        p.add_argument("--state-dir", help="the cluster's state directory (instead of --name: independent of HOME "
                       "and NODEMEDIC_CACHE/NODEMEDIC_STATE, which a caller in a container may not share)")
        p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ns.set_defaults(fn=cmd_node_service)
    rb.set_defaults(fn=cmd_node_reboot)
    sub.add_parser("versions", help="print the pinned versions").set_defaults(fn=cmd_versions)
    args = ap.parse_args(argv)
    try:
        return int(args.fn(args))
    except (RuntimeError, TimeoutError) as e:
        print(f"hack/cluster {args.cmd}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
