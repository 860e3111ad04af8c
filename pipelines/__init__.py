"""Wiring and runtime: configuration loading, the capture coordinator, the CLI and the demo."""
