"""node-problem-detector compatibility: its system-log-monitor and custom-plugin-monitor JSON read unchanged
(`logmonitor_config.py` with `re2.py` and `timestamps.py`, `plugin_config.py`), and the plugin process runner."""
