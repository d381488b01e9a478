"""`nodemedic-agent` command line."""

from __future__ import annotations

import argparse

from agent import __version__


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="nodemedic-agent", description="nodemedic per-node problem detector")
    ap.add_argument("--version", action="version", version=f"nodemedic-agent {__version__}")
    ap.parse_args(argv)
    ap.print_help()
    return 0
