"""A failed read or write in the user's words, shared by every command that touches files.

Why not `str(exc)`: `IsADirectoryError: [Errno 21] Is a directory: '…'` names a Python class and
an errno, not what to fix. The common errnos are worded here once (`pipeline export` and `report`
each had a copy); any other keeps the OS's own reason, lower-cased, without class or number.
"""

from __future__ import annotations

import errno
import os

OS_PROBLEMS = {
    errno.ENOENT: "it or its folder does not exist",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EROFS: "the file system is read-only",
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EISDIR: "it is a folder",
    errno.ENOTDIR: "a part of its path is a file, not a folder",
    errno.ENAMETOOLONG: "the name is too long",
    errno.EEXIST: "a file of that name is in the way",
}


NOT_A_FOLDER = "it is a file, where a folder is needed"


def os_problem(exc: OSError, *, with_path: bool = False) -> str:
    """Why `exc` happened, in words; `with_path`: after the file the OS named (a rename's
    destination when it names two), for a message that does not name it already.

    "File exists" on one path that is there and is not a folder is a folder that could not be
    made (mkdir, `exist_ok` or not): it says so. BashGym's exclusive creates (a new run or job
    folder, a temporary file) catch their own "File exists" and pick another name; one that
    names two paths (a link's) keeps the general words."""
    words = OS_PROBLEMS.get(exc.errno or 0) or (exc.strerror or str(exc)).lower()
    name = exc.filename2 or exc.filename
    if exc.errno == errno.EEXIST and exc.filename2 is None and _not_a_folder(exc.filename):
        words = NOT_A_FOLDER
    return f"{str(name)!r}: {words}" if with_path and name else words


def _not_a_folder(name: object) -> bool:
    if not isinstance(name, (str, bytes, os.PathLike)):
        return False
    return os.path.lexists(name) and not os.path.isdir(name)
