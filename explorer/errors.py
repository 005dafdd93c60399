"""Errors a user can act on: the CLI prints them as one line and exits 2, the app shows a dialog."""


class UserError(Exception):
    """Bad input or a request that cannot be met. The message is one line and names the culprit."""
