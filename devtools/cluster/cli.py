"""``scripts/cluster`` (``python -m devtools.cluster``): up, down, status, restart, kubectl."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from devtools.cluster.cluster import Cluster
from devtools.cluster.settings import DRIVERS, ClusterError


def main(argv: Sequence[str] | None = None) -> int:
    """``scripts/cluster``: up, down, status, kubectl ARGS..."""
    parser = argparse.ArgumentParser(
        prog="scripts/cluster",
        description="A one-node Kubernetes cluster on 127.0.0.1 with the reference DRA driver.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("up", help="build what is missing, start, print export KUBECONFIG=... last")
    sub.add_parser("down", help="stop everything up started and restore the machine")
    sub.add_parser("status", help="the components, their PIDs and memory")
    restart = sub.add_parser("restart", help="start a driver of the host again that ended")
    restart.add_argument("driver", choices=list(DRIVERS))
    kubectl = sub.add_parser("kubectl", help="kubectl as the cluster's admin")
    kubectl.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    cluster = Cluster()
    try:
        if args.command == "up":
            cluster.up()
            print(f"export KUBECONFIG={cluster.kubeconfig}")
        elif args.command == "down":
            cluster.down()
        elif args.command == "restart":
            cluster.restart(args.driver)
        elif args.command == "status":
            if not cluster.state.exists():
                print("down")
                return 1
            total = 0.0
            for name, pid, alive, rss in cluster.status():
                total += rss if alive else 0
                print(f"{name:24} {pid:>8} {'running' if alive else 'ended':8} {rss:7.1f} MiB")
            print(f"{'total':24} {'':>8} {'':8} {total:7.1f} MiB")
        else:
            if not cluster.bin_file.exists():
                print("scripts/cluster: not up (scripts/cluster up)", file=sys.stderr)
                return 1
            command = [str(cluster.bin_dir / "kubectl"), "--kubeconfig", str(cluster.kubeconfig)]
            os.execv(command[0], [*command, *args.args])
    except ClusterError as err:
        print(f"scripts/cluster: {err}", file=sys.stderr)
        return 1
    return 0
