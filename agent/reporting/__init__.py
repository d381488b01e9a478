"""The writing side: the condition book folds observations into conditions, and the reporter alone writes them
(and Events) through the shared client (nodemedic_common/kube_client.py); the agent's credentials, the pod and node
watches, the condition metrics, the `/metrics` + `/healthz` server. Checks never import this; `agent/pipeline.py`
joins the two sides."""
