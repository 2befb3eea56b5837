"""What kind of file a path is, in the words an error message uses.

Why it exists: inputs that must be regular files (stores, model files, fixture files)
are refused with one line that says what was found instead - a FIFO, a device, a
socket - and both the store's readers (store/fileio.py) and the embedders' model
checks (embed/model2vec_static.py) name it the same way. It sits below both so neither
reaches into the other's layer.
"""

from __future__ import annotations

import stat

__all__ = ["file_type_name"]


def file_type_name(mode: int) -> str:
    """What a file of `mode` is, as a message names it: `a character device`, `a FIFO`."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"
