"""nodemedic's development tools: the local control plane (`kcp`), the benchmarks (`bench`) and the release scripts.

A package of the repository root, as the tests are: the scripts run as modules from there (`python -m hack.bench.chain`,
the Makefile's targets; `hack/cluster` does the same), so every import resolves from the repository and no script edits
its import path.
"""
