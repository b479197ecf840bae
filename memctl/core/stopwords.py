"""Function words and question words, English and Chinese: what a question is made of besides
what it asks about. They stop being units a note must match (docs/search.md, "Questions");
typed alone, they are searched like any word.

Chinese has no spaces, so its function words are found inside a run of characters: the
multi-character ones first (longest first), then a few single characters that are function
words almost wherever they occur. Characters that also start or end common technical words
(在 in 存在/在线, 还 in 还原, 都 in 成都) are deliberately not in the single list.
"""

from __future__ import annotations

ENGLISH = frozenset("""
a about above after again against all am an and any are aren't as at be because been before
being below between both but by can can't cannot could couldn't did didn't do does doesn't
doing don't down during each either else ever few for from further had hadn't has hasn't
have haven't having he her here hers herself him himself his how i i'm if in into is isn't
it it's its itself just let's me might more most must mustn't my myself no nor not of off on
once only or other ought our ours ourselves out over own please same shall shan't she should
shouldn't so some such tell than that that's the their theirs them themselves then there
there's these they they're this those through to too under until up us very was wasn't we
we're were weren't what what's when when's where where's whether which while who who's whom
whose why why's will with won't would wouldn't you you're your yours yourself yourselves get got
i'd i've i'll now nowadays currently quick question wondering remind know need want
""".split())

# Longest first, so 什么时候 goes before 什么.
CHINESE_WORDS = tuple(sorted("""
什么时候 为什么 怎么样 怎么办 有没有 是不是 能不能 要不要 可不可以 请问 什么 怎么 如何 为何 哪个 哪些
哪里 哪儿 哪一个 多少 几个 是否 我们 你们 他们 它们 咱们 这个 那个 这些 那些 这里 那里 一下 一个 上次
之前 之后 以前 的时候 时候 应该 可以 能够 告诉我 怎样 怎么回事 为啥 啥 能否 这边 那边 目前 现在 问一下
什麼時候 為什麼 怎麼樣 怎麼辦 有沒有 請問 什麼 怎麼 為何 哪個 哪裡 哪裏 哪兒 哪一個 幾個 我們 你們
他們 它們 咱們 這個 那個 這些 那些 這裡 這裏 那裡 那裏 一個 之後 的時候 時候 應該 能夠 告訴我 怎樣
怎麼回事 為啥 這邊 那邊 現在 問一下 甚麼時候 甚麼
""".split(), key=len, reverse=True))
# The last three lines: the same words in traditional characters (什麼 and 甚麼, 我們, 為什麼…),
# as a person in Taiwan or Hong Kong types them. Without them a question in traditional
# characters kept its asking as units, and a note that happens to say 什麼 or 們 matched it.

CHINESE_CHARS = frozenset("的了吗呢吧啊嘛呀么是和与把被很谁哪我你" "嗎麼與誰")


# Words that ask only next to a question word: `how many`, `how long`, `what kind of`,
# `which type of`. Elsewhere they are content (`long polling`, `type hints`, `many-to-many`).
_AFTER_HOW = frozenset("many much long often far old big large".split())
_BEFORE_OF = frozenset("kind kinds type types sort sorts".split())


def is_english_stop(word: str) -> bool:
    return bare(word) in ENGLISH


def asks_in_context(previous: str | None, word: str, following: str | None) -> bool:
    """Whether `word`, between `previous` and `following` (the words around it, None at an
    end), is part of a question phrase: `how MANY`, `what KIND of`."""
    asked = bare(word)
    if previous is None or bare(previous) == "" or previous[-1:] in _ENDS_A_CLAUSE:
        return False
    before = bare(previous)
    if asked in _AFTER_HOW:
        return before == "how"
    return asked in _BEFORE_OF and before in ("what", "which") \
        and following is not None and bare(following) == "of"


_ENDS_A_CLAUSE = ".,;:!?"


def bare(word: str) -> str:
    """A word as the function-word lists hold it: lowercase, its apostrophes straight
    (`don’t` → `don't`), without the punctuation around it."""
    return word.lower().replace("’", "'").strip(".,;:!?'\"()[]{}‘“”")


def split_chinese(run: str) -> list[str]:
    """The content pieces of a run of Chinese characters, function words taken out:
    `博客后端的缓存是什么时候换成的` → [`博客后端`, `缓存`, `换成`]. Linear in the run's
    length times the (fixed, small) number of function words."""
    pieces: list[str] = []
    current: list[str] = []
    position, size = 0, len(run)
    while position < size:
        for word in CHINESE_WORDS:
            if run.startswith(word, position):
                if current:
                    pieces.append("".join(current))
                    current = []
                position += len(word)
                break
        else:
            char = run[position]
            if char in CHINESE_CHARS:
                if current:
                    pieces.append("".join(current))
                    current = []
            else:
                current.append(char)
            position += 1
    if current:
        pieces.append("".join(current))
    return pieces
