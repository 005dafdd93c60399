"""Module hooks that act only for the thread that attached them.

Hooks live on the shared model, and the app runs that model in several threads at once (training,
the live probe, a decode). A measurement's hook must see its own pass only.
"""

from __future__ import annotations

import functools
import threading


def this_thread_only(hook):
    """`hook`, called only in passes run by the thread that wrapped it. For any other thread the
    wrapper returns None, which leaves a module's arguments and output as they are."""
    owner = threading.get_ident()

    @functools.wraps(hook)
    def wrapper(*args, **kwargs):
        return hook(*args, **kwargs) if threading.get_ident() == owner else None

    return wrapper
