"""Runs as asked: one fixture set or a whole suite scored, compared and rendered, and two
saved reports compared, each from a frozen request (`RunRequest`, `DiffRequest`).

This layer sits between the commands, which build the requests from their flags, and
the layers that evaluate, compare and render, which it composes.
"""
