"""SHA-256 for the checksums and ids memctl derives from text (pure).

`hashlib.sha256` loads OpenSSL first (~3 ms of every `memctl show` and `add`,
bench/bench_write.py); Python's own implementation gives the same digests and is fast
enough for notes. 3.11 names its module `_sha256`, 3.12 `_sha2`; a Python built without
either uses hashlib's.
"""

from __future__ import annotations

try:
    from _sha256 import sha256
except ImportError:  # pragma: no cover - not Python 3.11
    try:
        from _sha2 import sha256  # type: ignore[no-redef]
    except ImportError:
        from hashlib import sha256  # type: ignore[no-redef]

__all__ = ["sha256"]
