"""Files replaced whole: a reader sees the old text or the new one, never a part of either."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

__all__ = ["replace_text"]


def replace_text(path: str | os.PathLike[str], text: str, *, durable: bool = False) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file beside it and a rename.

    The temporary file's name starts with a dot and ends in ``.tmp``, so a reader listing the
    directory by a name pattern never picks it up. A file replaced keeps its permission bits.

    Parameters
    ----------
    path:
        The file to create or replace; its directory must exist.
    text:
        The whole new content.
    durable:
        Also flush the file to disk before the rename and the directory after it, so the new
        text survives a power loss (metadata files); short-lived hand-off files skip it.

    Raises
    ------
    OSError
        When the file cannot be written; the previous file, if any, is then unchanged and no
        temporary file is left behind.
    """
    target = Path(path)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        with contextlib.suppress(FileNotFoundError):
            os.chmod(temporary, stat.S_IMODE(os.stat(target).st_mode))
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    if durable:
        _fsync_directory(target.parent)


def _fsync_directory(directory: Path) -> None:
    """Persist a rename in ``directory`` (best effort: not every platform opens directories)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
