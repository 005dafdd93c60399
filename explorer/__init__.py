"""Sequence Model Explorer: train and open small sequence models and watch how they work."""

__version__ = "0.2.0"
