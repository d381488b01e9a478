"""`nodemedic-remediator` command line."""

from __future__ import annotations

import argparse

from remediator import __version__


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="nodemedic-remediator", description="nodemedic cluster remediator")
    ap.add_argument("--version", action="version", version=f"nodemedic-remediator {__version__}")
    ap.parse_args(argv)
    ap.print_help()
    return 0
