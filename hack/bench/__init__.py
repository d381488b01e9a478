"""nodemedic's benchmarks: one runnable script each (`make bench-*`), and `lib`, what they share."""
