"""Throwaway extensions, added through the public registries only (tests/test_extension_points.py)."""
