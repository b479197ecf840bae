"""The query language in front of FTS5, and its translation into a safe MATCH string.

What a user may type:
- plain words, any of them (best match: notes with more of them first, docs/search.md)
  (`postgres pool`); English words match their stems
  (`databases` finds `database`);
- `"a phrase"`; `word*` or `"a phr"*` for a prefix;
- `a OR b` (OR binds tighter than the implicit AND: `db postgres OR mysql` needs `db`);
- `-word`, `-"a phrase"` (or `NOT word`) to exclude;
- `tag:x` and `type:x` (and `-tag:x`, `-type:x`) filter instead of searching text, and so do
  `subject:x` and `predicate:y` (a note's subject and predicate, case-insensitive);
- Chinese, Japanese and Korean runs are matched as substrings (`缓存` inside `分布式缓存层`).

Best match (docs/search.md): besides the strict `match` (every word, as typed), a query has
`units`, what a note may match part of: each content word, each overlapping pair of
characters of a Chinese run (with the run itself, so a longer matching run counts more; the
units of a piece longer than two characters weigh half each, LONG_PIECE_SHARE; those of a
piece said as where the asker works, `商城接口这边，`, a tenth, SIDE_SHARE; the words after the
question's mark, what the asker adds about it, AFTER_SHARE),
each `a OR b` group, each prefix. Function and question words (`the`, `did`, `what`, 的, 什么)
are not units. `any_match` finds every note that matches a unit (and every quoted phrase, and
no excluded word); the search then ranks by how much of the query a note covers.

Everything else is data, never syntax: every term reaches FTS5 as a double-quoted string,
so quotes, hyphens, `c++`, parentheses, `AND`/`NEAR` typed as words, emoji or pasted logs
give results (or none), never an FTS5 syntax error.
"""

from __future__ import annotations

import re

from memctl.core.arguments import utf8_text
from memctl.core.dates import folded_digits
from memctl.core.errors import UsageError, quoted
from memctl.core.stopwords import asks_in_context, bare, is_english_stop, split_chinese
from memctl.core.tokenize import (
    FULL_WIDTH_ALNUM,
    cjk_runs,
    clean,
    has_cjk,
    has_token_chars,
    to_index,
)
from memctl.core.vocab import KIND_TYPES, NOTE_TYPES
from memctl.core.wordforms import verb_forms

# A query is cut to this many terms and each term to this many characters: a pasted log
# still gives an answer quickly instead of an expression FTS5 takes seconds over.
MAX_TERMS = 32
MAX_TERM_CHARS = 200
# Of a query a result repeats (the recall block's heading, its JSON, MCP search): a 1 MB
# query came back whole, and a 7,000-character one took the recall block's whole budget.
SHOWN_QUERY_CHARS = 200
# A query is read up to this many characters (a word cut there left out): it is then cut to
# MAX_TERMS anyway, and reading all of a 50 MB query an MCP client sent held the server
# for 31 s and 1.8 GB (a command line holds at most 128 KB).
MAX_QUERY_CHARS = 65_536


def every_phrase_and_any_unit(required: list[str], optional: list[str]) -> str:
    """The MATCH of the notes with every required unit (a quoted phrase) and any unit. A
    phrase is a unit too: a note with every phrase and none of the other words is found
    (`"connection pool" kafka` found nothing where no note says kafka); the other words
    stay in the expression, for BM25 and the snippet's highlights."""
    return " AND ".join(required + (["(" + " OR ".join(optional + required) + ")"]
                                    if optional else []))


_WORD = re.compile(r"\S+")


def shown_query(query: str, limit: int = SHOWN_QUERY_CHARS) -> str:
    """The query on one line, its first `limit` characters (then `…`). Only the words up to
    the limit are read: splitting all of a 50 MB query an MCP client sent (search's and
    recall's replies repeat it) took 0.6 s and 550 MB."""
    words: list[str] = []
    size = -1
    for word in _WORD.finditer(query):
        words.append(word.group())
        size += len(words[-1]) + 1
        if size > limit:
            break
    line = " ".join(words)
    return line if len(line) <= limit else line[:limit] + "…"

# A bare word this long or longer also matches the words it begins (`migr` → migration);
# shorter ones would match too much of the index to be worth it (`co`, `run`).
MIN_PREFIX_CHARS = 4

# The units of a Chinese piece longer than two characters (its n-1 overlapping pairs and the
# piece itself) each weigh half their rarity: the piece then weighs about n/2 words, as many as
# it has, instead of n. At full weight a four-character name (数据管道, the project a question
# is about) outweighed the rare word that answers it (Celery) four to one, and the note having
# only that word fell below the relative floor (bench/README.md, "Retrieval quality").
LONG_PIECE_SHARE = 0.5
# A piece of one character, what is left between a question's function words (the 做 of
# `回滚怎么做`, the 在 of `Redis在这个项目里…`, the 出 of `出了问题找谁`), is a morpheme, not a word:
# it weighs half its rarity. At full weight, the rarer of the two outweighed the word asked
# about: `回滚怎么做` ranked a note with 做 above the rollback note, which fell under the half
# of the query recall asks for and left the recall block (tests/test_questions.py).
SINGLE_CHAR_SHARE = 0.5
# A run of Chinese that is one piece and 这边/那边 (`商城接口这边，…`: "over on the shop API's
# side, …") says where the asker works, as `In chat-bot, …` does: its units weigh a tenth of
# what they would. At full weight the project's Chinese name, which many of its notes mention,
# outweighed the rarer words asked about, and the answer fell below the relative floor
# (bench/README.md, "Retrieval quality": 0.25, 0.1 and 0 gave the same ranks but one).
SIDE_SHARE = 0.1
SIDE_WORDS = ("这边", "那边", "這邊", "那邊")
# What follows the question's mark is what the asker adds about it (`…currently? I'm updating
# the on-call handover.`, `…能发版吗？要写进事故报告`): its units weigh this share, so the
# notes that share those words (a scratchpad that is "updating" something) do not outrank
# the answer. 0.3 and 0.1 gave the same ranks (bench/README.md, "Retrieval quality").
AFTER_SHARE = 0.3
_MARKS = ("?", "？")


# Plain classes, not dataclasses: `dataclasses` imports `inspect` and builds each class with
# exec, ~1 ms a class and ~8 ms for the module, paid by every `memctl search` at start-up.


class Term:
    __slots__ = ("text", "phrase", "prefix", "negated", "asked")

    def __init__(self, text: str, phrase: bool = False, prefix: bool = False,
                 negated: bool = False) -> None:
        self.text = text
        self.phrase = phrase  # typed in quotes
        self.prefix = prefix
        self.negated = negated
        self.asked = False  # a question's mark typed on its own right after it (`down ?`)

    def _key(self) -> tuple[str, bool, bool, bool]:
        return (self.text, self.phrase, self.prefix, self.negated)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Term) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return "Term(text={!r}, phrase={!r}, prefix={!r}, negated={!r})".format(*self._key())


class Unit:
    """One thing a note may match: `match` is its FTS5 expression, `text` what the user
    typed for it (the words to weigh it by), `label` how --explain names it. `begins`, for
    a bare word of MIN_PREFIX_CHARS or more, is the FTS5 expression of the words it begins
    (`migr` → migration): the search counts those as a lesser match (docs/search.md).
    `pair`, for a pair of CJK characters, is that pair as one word of the index's pairs table
    (`match` stays the phrase of its two characters, for snippets)."""

    __slots__ = ("match", "text", "label", "required", "begins", "pair", "share")

    def __init__(self, match: str, text: str, label: str, required: bool = False,
                 begins: str | None = None, pair: str | None = None,
                 share: float = 1.0) -> None:
        self.match = match
        self.text = text
        self.label = label
        self.required = required  # a quoted phrase: every hit has it
        self.begins = begins
        self.pair = pair
        self.share = share  # what its rarity is multiplied by, for its weight in the query

    def __repr__(self) -> str:
        return f"Unit({self.label!r}{', required' if self.required else ''})"


class Query:
    """A parsed query. `match` is None when there is nothing to look for in the text."""

    def __init__(self, raw: str) -> None:
        self.raw = raw
        self.match: str | None = None
        # Only used when `match` is None: rows matching it are left out (`-word` alone).
        self.exclude: str | None = None
        self.tags: tuple[str, ...] = ()
        # `tag:a OR tag:b`: each group is one tag of those it names (the `tags` are all needed).
        self.tag_any: tuple[tuple[str, ...], ...] = ()
        self.exclude_tags: tuple[str, ...] = ()
        self.types: tuple[str, ...] = ()
        self.exclude_types: tuple[str, ...] = ()
        self.subjects: tuple[str, ...] = ()
        self.predicates: tuple[str, ...] = ()
        self.exclude_subjects: tuple[str, ...] = ()
        self.exclude_predicates: tuple[str, ...] = ()
        # The words the user looked for, for the fuzzy fallback and for highlighting.
        self.words: tuple[str, ...] = ()
        self.truncated = False
        self.terms: list[Term] = []
        # Best match: what a note may match part of, and the MATCH that finds every such note.
        self.units: list[Unit] = []
        self.any_match: str | None = None
        self.negative: str | None = None  # the excluded words, OR-ed
        # No function word was left out: the words as typed (`match`) are worth looking for.
        self.plain = True

    def matching_any(self, extra: list[str] | tuple[str, ...] = ()) -> str:
        """The MATCH for every note with a unit of the query (or one of `extra`, such as the
        close words of a misspelt one), all its quoted phrases, and no excluded word."""
        return self.without_negative(every_phrase_and_any_unit(
            [unit.match for unit in self.units if unit.required],
            [unit.match for unit in self.units if not unit.required] + list(extra)))

    def without_negative(self, match: str) -> str:
        """`match` less the notes with an excluded word (`-mysql`, `NOT mysql`)."""
        return f"({match}) NOT ({self.negative})" if self.negative else match

    @property
    def has_filters(self) -> bool:
        return bool(self.tags or self.tag_any or self.exclude_tags or self.types or self.exclude_types
                    or self.subjects or self.predicates or self.exclude_subjects
                    or self.exclude_predicates)

    @property
    def searches_text(self) -> bool:
        return self.match is not None or self.exclude is not None

    def __repr__(self) -> str:
        return f"Query({self.__dict__!r})"


class _Item:
    __slots__ = ("text", "quoted", "prefix", "negated")

    def __init__(self, text: str, quoted: bool, prefix: bool, negated: bool) -> None:
        self.text = text
        self.quoted = quoted
        self.prefix = prefix
        self.negated = negated


def _lex(raw: str) -> list[_Item]:
    """Split into items: a `"quoted phrase"` or a whitespace-free word, with `-` and `*`."""
    items: list[_Item] = []
    pos, size = 0, len(raw)
    while pos < size:
        ch = raw[pos]
        if ch.isspace():
            pos += 1
            continue
        negated = False
        if ch == "-" and pos + 1 < size and not raw[pos + 1].isspace():
            negated = True
            pos += 1
            ch = raw[pos]
        if ch == '"':
            end = raw.find('"', pos + 1)
            # An unbalanced quote means "the rest is a phrase".
            text = raw[pos + 1:] if end < 0 else raw[pos + 1:end]
            pos = size if end < 0 else end + 1
            prefix = False
            while pos < size and raw[pos] == "*":
                prefix = True
                pos += 1
            items.append(_Item(text, True, prefix, negated))
            continue
        end = pos
        while end < size and not raw[end].isspace():
            end += 1
        word = raw[pos:end]
        pos = end
        prefix = len(word) > 1 and word.endswith("*")
        if prefix:
            word = word.rstrip("*")
        items.append(_Item(word, False, prefix, negated))
    return items


def _is_op(item: _Item, name: str) -> bool:
    return not item.quoted and not item.negated and not item.prefix and item.text == name


def _filter_value(value: str) -> str:
    return value.strip().lstrip("#").strip().lower()


_FILTER_KEYS = ("tag", "type", "subject", "predicate")


def _filter_key(item: _Item | None) -> str | None:
    """The key of a filter (`tag:db` → tag), or None when `item` is not one."""
    if item is None or item.quoted or item.prefix or ":" not in item.text:
        return None
    key, _, value = item.text.partition(":")
    return key.lower() if key.lower() in _FILTER_KEYS and _filter_value(value) else None


def _or_side(item: _Item, key: str | None) -> str:
    """One side of an `OR` as its error names it: a filter by its kind, a word quoted."""
    return f"a `{key}:` filter" if key else f"the word {quoted(item.text)}"


def _head(raw: str) -> str:
    """The first MAX_QUERY_CHARS characters of `raw`, less a word the limit cuts: the cut
    is at any whitespace the lexer splits at (a tab, `\r`, U+3000 too), so a filter across
    the limit is left out rather than read as another (`tag:produc`, `type:deci`)."""
    kept = raw[:MAX_QUERY_CHARS]
    if raw[MAX_QUERY_CHARS].isspace():
        return kept  # the limit falls between two words: none is cut
    end = len(kept)
    while end and not kept[end - 1].isspace():
        end -= 1
    return kept[:end] if end else kept  # (one word of it all: cut to MAX_TERM_CHARS anyway)


def parse(raw: str) -> Query:
    """Parse a user's query. Raises UsageError for an empty query or an unknown `type:`."""
    if raw is None or not raw.strip():
        raise UsageError("the search query is empty; give some words to look for")
    cut = len(raw) > MAX_QUERY_CHARS
    if cut:
        raw = _head(raw)
    text = clean(utf8_text(raw, "search query"))
    if not text.isascii():
        text = text.translate(FULL_WIDTH_ALNUM)  # (filters, operators and dates too)
    items = _lex(text)
    query = Query(raw=raw)
    query.truncated = cut
    tag_groups: list[list[str]] = []  # each one needed; a group of several: any of them
    exclude_tags: list[str] = []
    types: list[str] = []
    exclude_types: list[str] = []
    facts: dict[str, list[str]] = {"subject": [], "predicate": []}
    excluded_facts: dict[str, list[str]] = {"subject": [], "predicate": []}

    # Pass 1: filters and operators. Each term either starts a new AND group or (after OR)
    # joins the previous group.
    terms: list[Term] = []
    or_next: list[bool] = []  # parallel to terms: True when it joins the previous group
    pending_or = False
    pending_not = False
    tag_or = False  # an OR between two tags: the next tag is one of a group
    tag_at = -2  # the item of the last tag needed
    for index, item in enumerate(items):
        nxt = items[index + 1] if index + 1 < len(items) else None
        operator = (_is_op(item, "OR") or _is_op(item, "AND")) and index > 0 and nxt is not None
        before, after = (_filter_key(items[index - 1]), _filter_key(nxt)) if operator \
            else (None, None)
        if before or after:
            # An operator beside a filter is no word to look for: `tag:db AND type:decision`
            # found nothing, where `tag:db type:decision` found the note. A note has one type,
            # so `type:a OR type:b` is either (as `type:a type:b`); `tag:a OR tag:b` is either tag.
            if _is_op(item, "OR") and before != after:
                # `pool OR tag:ops` was `pool tag:ops` (a filter always narrows): say so
                # rather than answer another question than the one asked.
                raise UsageError(
                    f"`OR` joins two words, or two filters of one kind (`tag:a OR tag:b`), "
                    f"not {_or_side(items[index - 1], before)} and {_or_side(nxt, after)}: "
                    f"a filter narrows the search; leave out `OR` to ask for both")
            tag_or = _is_op(item, "OR") and tag_at == index - 1 and after == "tag" \
                and not nxt.negated
            continue
        has_prev = bool(terms) and not terms[-1].negated
        if _is_op(item, "OR") and has_prev and nxt is not None and not nxt.negated \
                and not _is_op(nxt, "OR"):
            pending_or = True
            continue
        if _is_op(item, "AND") and terms and nxt is not None:
            continue
        if _is_op(item, "NOT") and nxt is not None and not nxt.negated:
            pending_not = True
            continue
        negated = item.negated or pending_not
        pending_not = False
        if not item.quoted and ":" in item.text:
            key, _, value = item.text.partition(":")
            value = _filter_value(value)
            if key.lower() in ("tag", "type") and not value and item.text.rstrip().endswith("#"):
                # `tag:#` once searched for the word `tag`, its filter silently lost (`tag:`
                # alone, as pasted text has it, `type: int`, stays a word).
                raise UsageError(f"{quoted(item.text)} in the query names no {key.lower()}; "
                                 f"write {key.lower()}:NAME")
            if key.lower() == "tag" and value:
                if negated:
                    exclude_tags.append(value)
                elif tag_or and tag_groups:
                    tag_groups[-1].append(value)
                    tag_at = index
                else:
                    tag_groups.append([value])
                    tag_at = index
                tag_or = False
                pending_or = False
                continue
            if key.lower() in facts and value:
                # `-subject:x`: never notes with that subject (it was an excluded phrase that
                # no note holds, so it left out nothing).
                (excluded_facts if negated else facts)[key.lower()].append(value)
                pending_or = False
                continue
            if key.lower() == "type" and value:
                if value not in NOTE_TYPES + KIND_TYPES:
                    raise UsageError(
                        f"unknown type {value!r} in the query (type:{value}); "
                        f"types are {', '.join(NOTE_TYPES + KIND_TYPES)}"
                    )
                (exclude_types if negated else types).append(value)
                pending_or = False
                continue
        body = item.text[:MAX_TERM_CHARS]
        if len(item.text) > MAX_TERM_CHARS:
            query.truncated = True
        if not has_token_chars(body):
            if terms and any(mark in body for mark in _MARKS):
                terms[-1].asked = True
            pending_or = False
            continue
        joins = pending_or and not negated and bool(terms) and not terms[-1].negated
        pending_or = False
        terms.append(Term(body, phrase=item.quoted, prefix=item.prefix, negated=negated))
        or_next.append(joins)

    if len(terms) > MAX_TERMS:
        terms, or_next = terms[:MAX_TERMS], or_next[:MAX_TERMS]
        query.truncated = True

    groups: list[list[Term]] = []
    negatives: list[Term] = []
    for term, joins in zip(terms, or_next, strict=True):
        if term.negated:
            negatives.append(term)
        elif joins and groups:
            groups[-1].append(term)
        else:
            groups.append([term])

    positive = " AND ".join(_group(group) for group in groups)
    negative = " OR ".join(_phrase(term) for term in negatives)
    if positive and negative:
        query.match = f"({positive}) NOT ({negative})"
    elif positive:
        query.match = positive
    elif negative:
        query.exclude = negative
    query.tags = tuple(dict.fromkeys(group[0] for group in tag_groups if len(group) == 1))
    query.tag_any = tuple(tuple(dict.fromkeys(group)) for group in tag_groups if len(group) > 1)
    query.exclude_tags = tuple(dict.fromkeys(exclude_tags))
    query.types = tuple(dict.fromkeys(types))
    query.exclude_types = tuple(dict.fromkeys(exclude_types))
    query.subjects = tuple(dict.fromkeys(facts["subject"]))
    query.predicates = tuple(dict.fromkeys(facts["predicate"]))
    query.exclude_subjects = tuple(dict.fromkeys(excluded_facts["subject"]))
    query.exclude_predicates = tuple(dict.fromkeys(excluded_facts["predicate"]))
    query.words = tuple(t.text for t in terms if not t.negated)
    query.terms = terms
    query.units, query.plain = _units(groups)
    query.negative = negative or None
    query.any_match = query.matching_any() if query.units else None
    return query


def _units(groups: list[list[Term]]) -> tuple[list[Unit], bool]:
    """The units of a query's positive groups (see the module doc), without repeats, and
    whether every word of the query is in them (no function word was left out)."""
    plain = True
    units: list[Unit] = []
    fallback: list[Unit] = []  # the words as typed, when every word is a function word
    after = False  # past the question's mark: what the asker adds (`I need it for the runbook`)
    for number, group in enumerate(groups):
        term = group[0]
        if len(group) > 1 or term.phrase or term.prefix:
            # Typed on purpose (an OR group, a phrase, a prefix): its full weight wherever it
            # is; a mark at its end still ends the question (`postgres OR mysql? …`).
            if len(group) > 1:
                label = " OR ".join(t.text for t in group)
                units.append(Unit(_group(group), " ".join(t.text for t in group), label))
            else:
                units.append(Unit(_phrase(term), term.text,
                                  term.text + ("*" if term.prefix else ""), required=term.phrase))
            after = after or any(t.asked or _marks_around(t.text)[1] for t in group)
            continue
        fallback.append(Unit(_phrase(term), term.text, term.text))
        if asks_in_context(_plain_word(groups, number - 1), term.text,
                           _plain_word(groups, number + 1)):
            # `how MANY`, `what KIND of`: a question word here (memctl.core.stopwords).
            plain = False
            after = after or term.asked or _marks_around(term.text)[1]
            continue
        found, whole, after = _word_units(term.text, after)
        after = after or term.asked
        units.extend(found)
        plain = plain and whole
    chosen = units or fallback
    plain = plain or not units
    if not plain:
        # A question: its irregular verbs also match their other forms (`when did we buy
        # the domain?` → bought; memctl.core.wordforms). Keywords are matched as typed
        # (`go`, the language, is no `went`).
        chosen = [_with_forms(unit) for unit in chosen]
    seen: set[str] = set()
    unique = []
    for unit in chosen:
        if unit.match not in seen:
            seen.add(unit.match)
            unique.append(unit)
    return unique, plain


def _with_forms(unit: Unit) -> Unit:
    """A plain word's unit matching the other forms of its irregular verb too; any other
    unit as it is."""
    if unit.required or unit.pair is not None or not unit.match.startswith('"') \
            or unit.match.endswith("*"):
        return unit
    forms = verb_forms(bare(unit.text))
    if not forms:
        return unit
    match = "(" + " OR ".join(map(fts_phrase, forms)) + ")"
    return Unit(match, unit.text, unit.label, begins=unit.begins, share=unit.share)


def _plain_word(groups: list[list[Term]], number: int) -> str | None:
    """The word of group `number` when it is one plain word (not a phrase, a prefix or an
    OR group), else None: the context of a question phrase is words as typed."""
    if not 0 <= number < len(groups) or len(groups[number]) > 1:
        return None
    term = groups[number][0]
    return None if term.phrase or term.prefix else term.text


def _word_units(word: str, after: bool = False) -> tuple[list[Unit], bool, bool]:
    """A plain word's units: itself, or for a word with Chinese in it, its Latin parts and
    the pairs of characters of each Chinese piece (with the piece itself); whether no
    function word was left out of it; and whether the query's question mark is behind its
    end (`after`: whether it was behind its start)."""
    if not has_cjk(word):
        before, behind = _marks_around(word)  # `?staging`, `currently?!`
        after = after or before
        marked = after or behind
        word = _without_possessive(word)
        if is_english_stop(word):  # `what’s`, `he's`: a function word with its `'s`
            return [], False, marked
        share = AFTER_SHARE if after else 1.0
        return [Unit(fts_phrase(word), word, word, begins=_begins(word), share=share)], True, marked
    units: list[Unit] = []
    whole = True
    chunks = cjk_runs(word)
    for number, (latin, run) in enumerate(chunks):
        before, behind = _marks_around(latin)
        after = after or before
        if latin and has_token_chars(latin) and not is_english_stop(latin):
            units.append(Unit(fts_phrase(latin), latin, latin,
                              share=AFTER_SHARE if after else 1.0))
        elif latin and has_token_chars(latin):
            whole = False
        after = after or behind
        pieces = split_chinese(run) if run else []
        whole = whole and (not run or pieces == [run])
        # The side: one piece (function words before it: 我们…) then 这边, and nothing but
        # punctuation after it in this word (`商城接口这边API的超时` is not a side).
        following = chunks[number + 1][0] if number + 1 < len(chunks) else ""
        side = len(pieces) == 1 and run.endswith(SIDE_WORDS) \
            and run[:-2].endswith(pieces[0]) and not following[:1].isalnum()
        for piece in pieces:
            share = 1.0 if len(piece) == 2 else LONG_PIECE_SHARE if len(piece) > 2 \
                else SINGLE_CHAR_SHARE
            if side:
                share *= SIDE_SHARE
            if after:
                share *= AFTER_SHARE
            if len(piece) == 1:
                units.append(Unit(fts_phrase(piece), piece, piece, share=share))
                continue
            for start in range(len(piece) - 1):
                pair = piece[start:start + 2]
                units.append(Unit(fts_phrase(pair), pair, pair, pair=pair, share=share))
            if len(piece) > 2:
                units.append(Unit(fts_phrase(piece), piece, piece, share=share))
    return units, whole, after


def _without_possessive(word: str) -> str:
    """`Jon's` → `Jon`, `blog-backend’s?` → `blog-backend?`: the index splits `Jon's` into
    `jon` and `s`, so the word as typed would match only notes that say `Jon's` too, never
    the ones about Jon. (A possessive said on its own, `it's`, is a function word.)"""
    end = len(word.rstrip(_TRAILING_MARKS))
    if end > 2 and word[end - 2] in "'’" and word[end - 1] in "sS":
        return word[:end - 2] + word[end:]
    return word


def _marks_around(text: str) -> tuple[bool, bool]:
    """Whether a question's mark comes before the first letter or digit of `text`, and
    whether one comes after its last (a mark between two, `a?b`, is neither: part of a
    token such as a URL's query). Text without letters or digits: both, if it has a mark."""
    first = next((at for at, char in enumerate(text) if char.isalnum()), None)
    if first is None:
        marked = any(mark in text for mark in _MARKS)
        return marked, marked
    last = len(text) - next(at for at, char in enumerate(reversed(text)) if char.isalnum())
    return (any(mark in text[:first] for mark in _MARKS),
            any(mark in text[last:] for mark in _MARKS))


def _begins(word: str) -> str | None:
    """The FTS5 expression for the words `word` begins, in the text columns (not the scope
    token), for a single token of MIN_PREFIX_CHARS or more with a letter in it; else None."""
    if len(word) < MIN_PREFIX_CHARS or not word.isalnum() or not any(ch.isalpha() for ch in word):
        return None
    return "{title tags body} : " + fts_phrase(word) + " *"


def fts_phrase(text: str) -> str:
    """`text` as one FTS5 phrase (as the index holds it: CJK characters apart)."""
    return '"' + to_index(text).replace('"', '""') + '"'


def _phrase(term: Term) -> str:
    quoted = fts_phrase(term.text)
    return quoted + " *" if term.prefix else quoted


def _group(group: list[Term]) -> str:
    if len(group) == 1:
        return _phrase(group[0])
    return "(" + " OR ".join(_phrase(term) for term in group) + ")"


_EDGE_PUNCTUATION = ".,;:!?'\"()[]{}"
_TRAILING_MARKS = _EDGE_PUNCTUATION.replace("'", "")  # an apostrophe ends `Jon's`


PROJECT_WORDS = frozenset({"project", "projects"})  # "the X project" (X项目: `_project_word_end`)
PROJECT_PIECES = frozenset({"项目里", "项目中", "项目上", "项目内", "项目组"})  # X项目里，…


def _project_word_end(units: list[Unit], words: list[str], bare: list[bool], start: int) -> int:
    """Where the units naming a project end, its name ending at `start`: past the word
    `project` (`the docs-site project:`), or past the piece of Chinese starting with 项目
    (`iot-hub项目：`, `auth-service项目里`: the piece's pairs of characters, then the piece
    itself when it is longer than a pair), when that comes right after the name."""
    if start >= len(units):
        return start
    if bare[start] and words[start] in PROJECT_WORDS:
        return start + 1
    first = units[start]
    if first.pair is None or not first.pair.startswith("项目"):
        return start
    # A piece of n > 2 characters gives its n - 1 pairs in order, then itself; a piece of
    # two, its one pair. Pairs that merely chain on (`项目的目标`: 项目, 目标) are another
    # piece's: without the piece itself after them, only the first pair is the name's.
    piece, end = first.pair, start + 1
    while end < len(units):
        unit = units[end]
        if unit.pair is not None and unit.pair[0] == piece[-1]:
            piece += unit.pair[1]
            end += 1
        elif unit.pair is None and unit.text == piece and len(piece) > 2:
            # 项目里, 项目组… name the project whole; in 项目部署用 or 项目经理 only 项目 does.
            return end + 1 if piece in PROJECT_PIECES else start + 1
        else:
            break
    return start + 1


def without_units(query: Query, dropped: set[int]) -> Query:
    """A copy of `query` without the units numbered in `dropped` (its words to match any of
    made again)."""
    narrowed = Query.__new__(Query)
    narrowed.__dict__.update(query.__dict__)
    narrowed.units = [unit for number, unit in enumerate(query.units) if number not in dropped]
    narrowed.any_match = narrowed.matching_any()
    return narrowed


def without_date_notation(query: Query, notation: set[str]) -> Query:
    """The query without the units that only write a date it names (`notation`: its numbers
    and 年 月 日 号, memctl.core.dates.notation_words): the date is matched as itself
    (docs/search.md, "Dates in a query"). A query that is a date and nothing else has no
    words left; the search then ranks the notes written then."""
    dropped = {number for number, unit in enumerate(query.units)
               if unit.label == unit.text and not unit.required and unit.match.startswith('"')
               and folded_digits(unit.text.strip(_EDGE_PUNCTUATION)) in notation}
    if not dropped:
        return query
    return without_units(query, dropped)


def without_scope_words(query: Query, project: str) -> tuple[Query, list[str]]:
    """The query without the words that name the project searched (`In chat-bot, …`,
    `working on data pipeline`): every note in scope is in that project, so its name ranks
    nothing, while the few notes that happen to mention it would win on it (docs/search.md,
    "Scope words"). Returns the query unchanged when nothing names the project or when the
    name is all it asks about, else a copy without those units, and the words left out."""
    name_words = [part for part in re.split(r"[-_\s]+", project.casefold()) if part]
    if not name_words or not query.units:
        return query, []
    bare = [unit.label == unit.text and not unit.required and unit.match.startswith('"')
            for unit in query.units]
    words = [unit.text.strip(_EDGE_PUNCTUATION).casefold() for unit in query.units]
    dropped: set[int] = set()
    for start, word in enumerate(words):
        if not bare[start]:
            continue
        if re.split(r"[-_\s]+", word) == name_words:
            end = start + 1
        else:
            end = start + len(name_words)
            if len(name_words) < 2 or end > len(words) or not all(bare[start:end]) \
                    or words[start:end] != name_words:
                continue
        dropped.update(range(start, _project_word_end(query.units, words, bare, end)))
    if not dropped or len(dropped) == len(query.units):
        return query, []
    narrowed = without_units(query, dropped)
    # A piece of Chinese is listed, not also its pairs of characters.
    pieces = [query.units[number].text for number in dropped if query.units[number].pair is None]
    return narrowed, [query.units[number].text.strip(_EDGE_PUNCTUATION) for number in sorted(dropped)
                      if query.units[number].pair is None
                      or not any(query.units[number].pair in piece for piece in pieces)]
