"""The writing side: the condition book folds observations into conditions, and the reporter alone writes them
(and Events) through the shared client (nodemedic_common/kube_client.py); the agent's credentials, the pod and node
watches, the condition metrics, the `/metrics` + `/healthz` server. Checks never import this; `agent/pipeline.py`
joins the two sides.

aiohttp is imported here first, without the CA stores the agent never uses (aiohttp_lean.py): every module below that
reaches the API server does so through nodemedic_common's client, which imports aiohttp itself, and whichever of
them is imported first must find it already lean."""

from agent.reporting import aiohttp_lean as _aiohttp_lean  # noqa: F401
