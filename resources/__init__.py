"""Data files that ship with the app (installed as the package `explorer.resources`).

demo/  the pretrained demo checkpoints, made by scripts/make_demo_checkpoints.py.
"""
