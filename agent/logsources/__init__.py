"""Where log lines come from: the kernel ring buffer, text log files and the systemd journal."""
