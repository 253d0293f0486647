"""Files written whole or not at all."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def write_atomic(path: str | os.PathLike, text: str | bytes) -> None:
    """Write via a temporary file in the same folder and rename: readers see the old file or the new, never half.
    A symlink is written through (the link stays, its target gets the text); an existing file keeps its mode."""
    path = Path(path)
    if path.is_symlink():
        path = path.resolve()
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)  # mkstemp makes 0600; the file should look as it did, or as any other the user writes
        with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_writable(path: str | os.PathLike, read_only_ok: bool = False) -> None:
    """Raise OSError now if `path` could not be written at the end of the run: its folder refuses a new file, or the
    file itself is read-only (0444, immutable; `read_only_ok`: a 0444 file may be replaced, as the user asked)."""
    path = Path(path)
    if path.is_symlink():
        path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".probe")
    os.close(fd)
    os.unlink(tmp)
    # The mode too: root's access() grants writing a 0444 file
    if path.exists() and not read_only_ok and (not os.access(path, os.W_OK) or not path.stat().st_mode & 0o222):
        raise PermissionError(f"{path} is read-only (give the option that allows overwriting it, or make it writable)")
