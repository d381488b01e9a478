"""Where log lines come from: the kernel log (`kmsg.py`), text log files (`filelog.py`), tailed without
threads (`tail.py`), and the systemd journal (`journald.py`, libsystemd in process), each a `LogSource`
(`source.py`). They read; the log monitor check matches."""
