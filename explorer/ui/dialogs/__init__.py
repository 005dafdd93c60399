"""Dialogs of the main window: new model, data, about and keyboard shortcuts."""
