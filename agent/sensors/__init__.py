"""What the checks read from the host, without judging it: pressure stall information (`psi.py`), the NVIDIA
driver's NVML (`nvml_library.py`, `nvml_readings.py`), the time daemon's configured servers
(`ntp_daemon_servers.py`), and the slower pace of a look that found nothing to read (`idle.py`). Each check is a
module of `agent/checks/`; these are shared by several checks or too large to sit in one."""
