"""The writing side: the condition book folds observations into conditions, and the reporter alone writes them
(and Events) through the small REST client; credentials, the condition metrics, the `/metrics` + `/healthz` server.
Checks never import this; `agent/pipeline.py` joins the two sides."""
