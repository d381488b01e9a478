"""The agent's half of the repair contract (nodemedic_common/repair_contract.py, docs/repair.md): it acts on the asks
for its own Node (restart a service, reboot) once per id, and answers with its `NodemedicRepair` condition.

`config.py` its settings, `commands.py` running one host command, `boot_id.py` the kernel's boot id, `answers.py`
the answers' words, `worker.py` the state machine. Like a check, nothing here talks to the API server: the asks come
from the Node watch and the answers go out through the condition book and the reporter (wired in agent/cli.py).
"""
