"""Lessons: the lecture notes as guided, hands-on steps on models the student trains.

`format` reads a lesson file, `validate` checks it (one-line errors naming the line), `checks` is
the vocabulary of conditions, `session` runs one on a model, `runner` headless, `handout` writes
the handout page. No Qt here: the app's lesson dock is explorer/ui/lesson_dock.py.
"""
