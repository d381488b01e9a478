"""How a check turns its readings into a steady condition: a level sustained over a window with a message kept while
its finding holds (`sustained.py`: cpu, memory, iostall), and failures in a row before a probe's condition turns True
(`debounce.py`: the healthz probes and cluster DNS)."""
