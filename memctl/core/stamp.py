"""A file's stamp: what tells, without reading a file, that it is not the one last read.

Its mtime and size alone are not enough: a file replaced by another of the same size with the
same mtime (`cp -p`, `rsync -t`, `tar x`, `touch -r`, a file renamed into place) would pass
for the one read before. Its change time (ctime) is set by the kernel to now on any such
replacement, and no user tool can set it. Everything that compares a file with what it read
before uses this one stamp: the index's walk, `files` table and folder digests
(memctl.disk.filescan), the watcher's passes, `memctl show`, the search server's check of its
own code and `memctl mcp`'s check of `memctl.toml` (docs/watch.md, "What a pass compares").
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    import os

Stamp = tuple[int, int, int]  # (mtime_ns, ctime_ns, size)


def file_stamp(info: os.stat_result) -> Stamp:
    return info.st_mtime_ns, info.st_ctime_ns, info.st_size
