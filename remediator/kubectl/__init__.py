"""`kubectl nodemedic`: ask the running remediator what it does and why, through the API server with the user's
kubeconfig (reach.py finds the leading replica and reads it through the pod proxy; render.py words the answers)."""
