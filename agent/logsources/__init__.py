"""Where log lines come from: the kernel log (`kmsg.py`) and text log files (`filelog.py`), tailed without
threads (`tail.py`). They read; the log monitor check matches."""
