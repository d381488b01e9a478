# One image for both programs: nodemedic-agent (the DaemonSet) and nodemedic-remediator (the Deployment).
#
#   docker build -t REGISTRY/nodemedic:0.1.0 .          # then: helm install ... --set image.repository=REGISTRY/nodemedic
#
# The Python dependencies are requirements.lock (the runtime closure, pinned to the versions the tests ran with;
# regenerate with `.venv/bin/python -m hack.requirements_lock`) but for its lines marked "# not in the image": the
# `kubernetes` package and what only it needs, which run a kubeconfig's credential plugin outside a pod
# (remediator/state/credentials.py). docs/deploy.md explains the users below.
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/nodemedic
COPY requirements.lock /src/requirements.lock
# --no-deps: the lock already lists every package, so nothing unpinned comes in.
RUN grep -v "# not in the image" /src/requirements.lock > /src/image.lock \
 && /opt/nodemedic/bin/pip install --no-deps -r /src/image.lock
COPY pyproject.toml README.md /src/
COPY agent /src/agent
COPY remediator /src/remediator
COPY nodemedic_common /src/nodemedic_common
# pip and setuptools install, nothing runs them: the image ships without them.
RUN /opt/nodemedic/bin/pip install --no-deps /src \
 && /opt/nodemedic/bin/nodemedic-agent --version \
 && /opt/nodemedic/bin/nodemedic-remediator --version \
 && /opt/nodemedic/bin/pip uninstall --yes --quiet pip setuptools

FROM ${PYTHON_IMAGE}
# libudev1 (pyudev's library, for disk model/serial in the blockdev check) is already in the Debian base.
# libsystemd0 (already in the Debian base; named so it stays) is the journald log monitors' fallback reader when the
# host's own libsystemd below the host root does not load (agent/logsources/sdjournal.py); iptables' dump tools
# (iptables-legacy-save, iptables-nft-save) are how the firewall check reads the host's rules.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libsystemd0 iptables \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/nodemedic /opt/nodemedic
# The remediator needs no privilege and runs as this user (the image default). The agent's pod overrides it with
# root and privileged: it reads /dev/kmsg, the CRI socket and the host's /proc, /sys (see docs/deploy.md).
RUN groupadd --system --gid 65532 nodemedic \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin nodemedic
ENV PATH=/opt/nodemedic/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 65532:65532
LABEL org.opencontainers.image.title="nodemedic" \
      org.opencontainers.image.description="nodemedic-agent and nodemedic-remediator" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="0.1.0"
# The chart runs `nodemedic-agent run ...` or `nodemedic-remediator run ...` as the container's command.
CMD ["nodemedic-remediator", "--help"]
