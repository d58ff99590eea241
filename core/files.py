"""Writing files so that a reader never sees half of one (and saying first why one cannot be); reading numpy archives
without trusting them."""
from __future__ import annotations

import io
import math
import os
import tempfile
from pathlib import Path


def atomic_write(path: str | Path, data: bytes | str):
    """Write `data` to a temporary file beside `path`, fsync it, then rename it over `path`.

    On any error the temporary file is removed and `path` is left as it was.
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a saved file gets the usual permissions
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_problem(path: str | Path) -> str:
    """Why `path` cannot be written, found before any work that would then be lost ('' if it looks writable)."""
    path = Path(path)
    folder = path.parent
    if path.is_dir():
        return "it is a folder"
    if not folder.exists():
        return f"the folder {folder} does not exist"
    if not folder.is_dir():
        return f"{folder} is a file, not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the folder {folder} is not writable"
    if path.exists() and not os.access(path, os.W_OK):
        return "the file is read-only"
    return ""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class NpzError(ValueError):
    """An .npz archive (np.savez) that cannot be read safely. `part`: "archive" (its zip directory is missing or
    broken), "size" (it would unpack to more than allowed: a zip bomb), "member" (a member does not read back) or
    "object" (a member holds Python objects, which are never unpickled). The message says why, without the file's
    name (the caller adds it)."""

    def __init__(self, message: str, part: str):
        super().__init__(message)
        self.part = part


class SafeNpz:
    """The arrays of an .npz file's bytes, read one by one on demand (`files`, `archive[name]`) without pickles and
    within `max_unpacked` bytes in all: every member's declared size is summed before anything unpacks (zipfile
    never unpacks past it), and each array's header is checked against its member's size before numpy allocates
    what the header claims. Only .npy members are arrays (np.savez writes no others)."""

    def __init__(self, data: bytes, max_unpacked: int):
        import zipfile
        try:
            self._zip = zipfile.ZipFile(io.BytesIO(data))
            infos = self._zip.infolist()
        except Exception:  # noqa: BLE001 - zipfile raises many types for a broken directory
            raise NpzError("the end of the file (its zip directory) is missing or broken", "archive") from None
        unpacked = sum(info.file_size for info in infos)
        if unpacked > max_unpacked:
            raise NpzError(f"it would unpack to {unpacked / 2**20:,.0f} MiB, more than the {max_unpacked / 2**20:,.0f} "
                           "MiB allowed for it (a zip bomb, or not a file this app wrote)", "size")
        self._members = {info.filename[:-4]: info for info in infos if info.filename.endswith(".npy")}
        self.files = list(self._members)

    def __getitem__(self, name: str):
        import numpy as np
        from numpy.lib import format as npy
        info = self._members[name]   # KeyError: no such array
        try:
            raw = self._zip.read(info)
        except Exception:  # noqa: BLE001 - a damaged member: BadZipFile (CRC), zlib.error, EOFError ...
            raise NpzError(f"its member {name!r} does not read back", "member") from None
        stream = io.BytesIO(raw)
        try:
            version = npy.read_magic(stream)
            read_header = {(1, 0): npy.read_array_header_1_0, (2, 0): npy.read_array_header_2_0}[version]
            shape, fortran, dtype = read_header(stream)
        except Exception:  # noqa: BLE001 - not an .npy header this reader knows
            raise NpzError(f"its member {name!r} is not a numpy array", "member") from None
        if dtype.hasobject:
            raise NpzError(f"its member {name!r} holds Python objects (pickles), which are never loaded", "object")
        count = math.prod(shape)
        if any(n < 0 for n in shape) or count * dtype.itemsize != len(raw) - stream.tell():
            raise NpzError(f"its member {name!r} is not the size its header says", "member")
        return np.frombuffer(raw, dtype, count, stream.tell()).reshape(shape, order="F" if fortran else "C").copy()

    def close(self):
        self._zip.close()
