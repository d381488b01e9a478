"""Telling people: Events, notification sinks and their wire formats, and the metrics."""
