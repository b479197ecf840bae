"""Regular expressions compiled at their first use (pure).

A module-level `re.compile` is paid by every process that imports the module, whether the
expression is used or not: the secret scanner's rules (~8 ms, run only for a text holding
one of their hints), or a class of CJK ranges (~3 ms). `memctl add` imports them all, and a
typical text uses a few (bench/bench_write.py, docs/architecture.md).
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Iterator


class LazyPattern:
    """`re.compile(pattern, flags)`, done the first time a method is called."""

    __slots__ = ("_pattern", "_flags", "_compiled")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._pattern = pattern
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        compiled = self._compiled
        if compiled is None:  # two threads may both compile: the same pattern either way
            compiled = self._compiled = re.compile(self._pattern, self._flags)
        return compiled

    @property
    def pattern(self) -> str:
        return self._pattern

    def search(self, string: str, *span: int) -> re.Match[str] | None:
        return self.compiled.search(string, *span)

    def match(self, string: str, *span: int) -> re.Match[str] | None:
        return self.compiled.match(string, *span)

    def fullmatch(self, string: str, *span: int) -> re.Match[str] | None:
        return self.compiled.fullmatch(string, *span)

    def finditer(self, string: str, *span: int) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(string, *span)

    def findall(self, string: str, *span: int) -> list[str]:
        return self.compiled.findall(string, *span)
