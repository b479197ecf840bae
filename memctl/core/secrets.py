"""Text that looks like a credential (pure).

The store is synced through git remotes, so `add` refuses such text unless `--allow-secret`,
and `health` lists it. Findings never carry the secret itself: only a masked form that keeps
the recognisable prefix (`AKIA****`, `ghp_****`, `postgres://app:****@`).

What is reported
  * well-known key shapes: AWS access key ids, GitHub (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`,
    `github_pat_`), GitLab (`glpat-` …), npm (`npm_`), Hugging Face (`hf_`), Slack (`xox?-`
    and webhooks), Stripe live keys, SendGrid (`SG.x.y`), Twilio (`SK` + 32 hex; an `AC`
    account sid followed by its 32-hex auth token, or the token right after "twilio auth
    token"), Discord webhooks, Google API keys,
    OpenAI/Anthropic `sk-…`, JWTs, PEM/OpenSSH/PGP private key blocks (a header with a body
    of base64 right after it: `_PEM_BODY`, not one word of prose: `_PEM_WORD`; a header named
    in prose is none), Azure `AccountKey=` /
    `SharedAccessKey=` / SAS `sig=`, DigitalOcean (`dop_v1_`, `doo_v1_`, `dor_v1_`), Shopify
    (`shpat_`, `shpca_`, `shppa_`, `shpss_`), Linear (`lin_api_`), Telegram bot tokens, age
    identities (`AGE-SECRET-KEY-1…`);
  * passwords on a command line: `curl -u user:pass` (`-sSfu user:pass`, `--user=`) and
    `mysql -pSECRET`, `docker login -p SECRET`, `sshpass -p SECRET`, `redis-cli -a SECRET`
    (each only inside its command: `_in_command`), Oracle's `scott/****@ORCL` (a JDBC URL,
    sqlplus, rman, `userid=`…; a password in double quotes read whole), Docker's config.json
    `"auth"` (base64 of `user:password`), also inside a base64 `.dockerconfigjson`, and
    .npmrc's `_auth=` (the same); a .netrc entry's password (`machine HOST login USER password
    SECRET`, also over several lines, the keywords in any case: `_netrc`);
  * `Bearer <long token>` and `Authorization: Basic <base64>`;
  * passwords inside URLs (`postgres://user:****@host`);
  * assignments whose name says secret (`DB_PASSWORD=…`, `export API_TOKEN=…`,
    `POSTGRES_PASSWORD: …`, `"client_secret": "…"`, `密码：…`, `Password=…;` in connection
    strings) when the value is non-trivial (see `_real_value`).
  * prose: "the password is X", "密码是X" when X is a real value and no word (`_prose_password`);
    a quoted value, there or assigned, is read whole up to its closing quote, spaces and all
    (`password: 'correct horse battery staple'`, `密码是 "abc def"`: `_quoted_value`); an
    assigned one whose quote is never closed on its line, up to the line's end.

What is not (decided, and held by tests/data/secrets_labelled.py)
  * placeholders and references: `<your-password>`, `${DB_PASSWORD}`, `$TOKEN`, `{{ x }}`,
    `xxx`, `****`, `changeme`, `example`, `your_api_key_here`, `os.environ[...]`, paths;
    `changeme` and a URL password equal to its user name (`postgres:postgres@`) are
    well-known defaults, not leaks;
  * names that only mention a secret: `PASSWORD_MIN_LENGTH`, `password_file`, `max_tokens`,
    `public_key`, `secret_name`, `token_ttl`;
  * prose: "rotate the password monthly", `password: use the vault`, "密码每 90 天更换",
    "password is required", "the password is 2FA-protected", "密码是必填项";
  * command lines without a password: `curl -u $USER:$TOKEN`, `curl -u user` (a prompt),
    `mysql -u root -p mydb` (a prompt, then the database), `-P3306`, `ssh -p2222`,
    `sqlplus scott/tiger@ORCL` (the demo schema's), `sqlplus / as sysdba`;
  * bare high-entropy strings (git SHAs, SHA-256 digests, UUIDs, note ids, base64 images):
    without a prefix or a name there is no telling them from a key, and notes are full of them.

Evasions: the text is scanned after removing characters that show nothing (`_INVISIBLE_RANGES`:
zero-width spaces and joiners, direction marks, the soft hyphen, the BOM, variation selectors,
tags) and NFKC-normalising each character (full-width `ｇｈｐ＿` is `ghp_`), and a
second time with `%XX` escapes decoded when there are any. Offsets, lines and masking refer to
the original text.

Cost: linear in the text (the old scanner took 25 s on 80 KB of `pwd:`). Every repeat in a
pattern is bounded (`{20,300}`, not `+`), each pattern starts with a literal or with a negative
look-behind on its own character class (so a run of token characters is tried from one start
only, never from each of its characters), and no pattern crosses a line except the
private-key block, found by one forward search per block, a .netrc entry (at most 20
spaces and line breaks between two of its words) and Docker's `"auth":` (at most 20 before
its value). Assignments are found from their
keyword (`password`, `token`, …) outwards, overlapping findings are settled by merging sorted
runs, and masking is one pass. bench/bench_secrets.py has the figures (about 0.1 ms for a 1 KB
note, 0.1 s for 1 MB); tests/test_secrets.py runs hostile inputs, and 4x each, under a timeout.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from memctl.core.errors import MemctlError, arg
from memctl.core.lazyre import LazyPattern
from memctl.core.records import dataclass, field
from memctl.core.textfile import unescaped_quote


@dataclass(frozen=True)
class SecretFinding:
    kind: str  # aws-access-key, github-token, openai-key, slack-token, private-key, …
    masked: str  # the matched text with the secret part replaced by ****
    line: int  # 1-based line of the match in the scanned text
    start: int  # offsets of the secret part in the scanned text
    end: int
    # what `mask_secrets` puts in place of text[start:end] (the kept prefix + ****)
    replacement: str = field(default="****", repr=False, compare=False)


# --- normalisation -----------------------------------------------------------------------------

# Characters that show nothing (or nothing but a change of direction or of glyph), removed
# before the scan: the format characters a text is likely to hold (zero-width spaces and
# joiners, direction marks and isolates, invisible operators, the soft hyphen, the BOM, tags),
# the combining grapheme joiner, the Mongolian selectors and the variation selectors. Any of
# them inside a token hid it (`ghp_…\u200e…`).
_INVISIBLE_RANGES = ((0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x180B, 0x180F),
                     (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F),
                     (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xE0000, 0xE007F),
                     (0xE0100, 0xE01EF))
_INVISIBLE = frozenset(chr(code) for first, last in _INVISIBLE_RANGES
                       for code in range(first, last + 1))
_ANY_INVISIBLE = LazyPattern("[" + "".join(f"{chr(first)}-{chr(last)}"
                                           for first, last in _INVISIBLE_RANGES) + "]")


class _NfkcTable(dict):  # type: ignore[type-arg]
    """`str.translate` table: each character's NFKC form, invisible characters removed."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        out = "" if char in _INVISIBLE else unicodedata.normalize("NFKC", char)
        if "\n" in out:  # never move a line break
            out = char
        self[code] = out
        return out


class _ResizeTable(dict):  # type: ignore[type-arg]
    """`str.translate` table marking (with \x01) the characters whose NFKC form is not one
    character; every other character becomes \x00."""

    def __missing__(self, code: int) -> str:
        out = "\x00" if len(_NFKC[code]) == 1 else "\x01"
        self[code] = out
        return out


_NFKC = _NfkcTable()
_RESIZE = _ResizeTable()
_PERCENT = LazyPattern(r"%([0-9A-Fa-f]{2})")


class _Map:
    """Offsets of a rewritten text in the text it came from: the identity except in the
    rewritten segments, each `src[i]:src_end[i]` -> `dst[i]:dst_end[i]` (in order)."""

    def __init__(self) -> None:
        self.src: list[int] = []
        self.src_end: list[int] = []
        self.dst: list[int] = []
        self.dst_end: list[int] = []

    def add(self, src: int, src_len: int, dst: int, dst_len: int) -> None:
        self.src.append(src)
        self.src_end.append(src + src_len)
        self.dst.append(dst)
        self.dst_end.append(dst + dst_len)

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The source span of `start:end` (end > start)."""
        i = bisect_right(self.dst, start) - 1
        if i >= 0 and start < self.dst_end[i]:
            first = self.src[i]
        else:
            first = start if i < 0 else start - self.dst_end[i] + self.src_end[i]
        i = bisect_right(self.dst, end - 1) - 1
        if i >= 0 and end - 1 < self.dst_end[i]:
            last = self.src_end[i]
        else:
            last = end if i < 0 else end - self.dst_end[i] + self.src_end[i]
        return first, last


@dataclass
class _View:
    """The text as scanned, and the maps back to the original (innermost last; none: same)."""

    text: str
    maps: tuple[_Map, ...] = ()

    def span(self, start: int, end: int) -> tuple[int, int]:
        end = max(end, start + 1)
        for offsets in self.maps:
            start, end = offsets.span(start, end)
        return start, end


def _normalised(text: str) -> _View:
    if text.isascii():
        return _View(text)
    visible = _ANY_INVISIBLE.search(text) is None
    if visible and unicodedata.is_normalized("NFKC", text):
        # Every character is its own NFKC form (a character whose form differs is never in
        # normalised text), so the tables below would give the text back, a character at a
        # time: the scan of a long Chinese document spent most of its time there.
        return _View(text)
    view = text.translate(_NFKC)
    if visible and len(view) == len(text):
        return _View(view)  # only invisible characters have an empty form: one for one
    marks = text.translate(_RESIZE)
    if "\x01" not in marks:
        return _View(view)  # one character for one: the offsets are the original's
    offsets = _Map()
    shift = 0
    for mark in re.finditer("\x01", marks):
        at = mark.start()
        size = len(_NFKC[ord(text[at])])
        offsets.add(at, 1, at + shift, size)
        shift += size - 1
    return _View(view, (offsets,))


def _decoded(view: _View) -> _View | None:
    """`view` with printable `%XX` escapes decoded, or None when it has none."""
    text = view.text
    if "%" not in text:
        return None
    pieces: list[str] = []
    offsets = _Map()
    last = 0
    for match in _PERCENT.finditer(text):
        code = int(match.group(1), 16)
        if not 0x20 <= code < 0x7F:
            continue
        at = match.start()
        pieces.append(text[last:at])
        offsets.add(at, 3, at - 2 * len(offsets.src), 1)
        pieces.append(chr(code))
        last = at + 3
    if not last:
        return None
    pieces.append(text[last:])
    return _View("".join(pieces), (offsets, *view.maps))


# --- placeholders and values -------------------------------------------------------------------

_PLACEHOLDER_WORDS = frozenset(
    "password passwd pass pwd secret secrets token apikey api_key key changeme change_me "
    "change-me changeit example redacted hidden placeholder dummy none null nil true false yes no "
    "empty required optional todo tbd n/a undefined default string str test value values "
    "mysecret mypassword mytoken notasecret not-a-secret sample fake unset omitted masked "
    "foo bar foobar baz".split()
)
_MASK_CHARS = frozenset("*xX.•#_-… ")
# templates and references: `<password>`, `${X}`, `$X`, `$(cat f)`, `%(x)s`, `%X%`, `{{ x }}`,
# YAML tags, anchors and aliases (`!vault`, `&pw`, `*pw`), `@env`, `[...]`, `(...)`
_REFERENCE = LazyPattern(r"<.*|\$[{(].*|\$[A-Za-z_]\w*|%\(?\w*\)?s|%\w+%|\{.*|[!&*@][A-Za-z_]+|[\[(`].*")
# algorithm names, versions, dates and times: `sha256`, `HS256`, `v1.2.3-beta`, `2026-12-01T10:00Z`
_TECH_WORD = LazyPattern(
    r"(?i)(?:sha|md|hs|rs|es|ps|aes|argon|pbkdf|base|utf|oauth|http|ipv|tls|ssl|rsa|ed|v)"
    r"[-_]?\d{1,4}(?:[-_]?[a-z]{1,8}\d{0,3})?"
    r"|v?\d{1,5}(?:\.\d{1,5}){1,3}(?:[-+][A-Za-z0-9.]{1,20})?"
    r"|\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:\.\d{1,9})?)?(?:Z|[+-]\d\d:?\d\d)?)?"
)
# code, not a value: `settings.SECRET`, `get_secret(`, `os.environ[`, `allow_secret`, `tokenValue`
_CODE_NAME = LazyPattern(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[A-Za-z_][\w.]*[(\[].*"
                        r"|[a-z]+(?:_[a-z]+)+|[a-z]+(?:[A-Z][a-z]+)+")
_PATH = LazyPattern(r"(?:~|\.{1,2})?/.*|[A-Za-z]:\\.*|[a-z0-9_.-]+(?:/[a-z0-9_.-]*)+")


def _is_placeholder(value: str) -> bool:
    """An obvious stand-in: `<password>`, `${DB_PASSWORD}`, `xxx`, `****`, `changeme`, …"""
    value = value.strip().strip("\"'`")
    low = value.lower()
    if not value or low in _PLACEHOLDER_WORDS or set(value) <= _MASK_CHARS:
        return True
    if _REFERENCE.fullmatch(value) or "****" in value or "xxxx" in low or "..." in value:
        return True
    if value[-1] in ".,;:!?" and _REFERENCE.fullmatch(value.rstrip(".,;:!?")):
        return True  # `$GITHUB_TOKEN.`: a reference ending a sentence
    if low.startswith(("your", "my-", "my_", "insert", "enter-", "enter_", "replace")):
        return True
    return low.endswith(("_here", "-here")) or any(
        word in low for word in ("example", "placeholder", "dummy", "changeme", "redacted")
    )


def _weak_token(body: str) -> bool:
    """A prefixed token that is a stand-in (`ghp_xxxx…`, `AKIA****`) or has too few symbols."""
    low = body.lower()
    return "xxxx" in low or "****" in body or "0000000" in body or len(set(body)) < 6


def _mixed(body: str) -> bool:
    """Random-looking: digits and letters, or both letter cases."""
    upper = any(c.isupper() for c in body)
    lower = any(c.islower() for c in body)
    digit = any(c.isdigit() for c in body)
    return not _weak_token(body) and (digit and (upper or lower) or upper and lower)


def _has_digit(body: str) -> bool:
    return not _weak_token(body) and any(c.isdigit() for c in body)


_STRONG_SYMBOLS = frozenset("!@#$%^&*+?|~<>()[]{}\\")


def _real_value(value: str, strong: bool) -> bool:
    """Whether an assigned value is a credential rather than prose, a stand-in or a reference.
    `strong`: the syntax is code or config (`=`, quotes, an UPPER_CASE name), not prose."""
    if len(value) < 6 or len(value) > 200 or _is_placeholder(value):
        return False
    if not value.isascii() or "://" in value or _PATH.fullmatch(value) or _TECH_WORD.fullmatch(value):
        return False
    if _CODE_NAME.fullmatch(value.rstrip(")]},;!")) or len(set(value)) < 4:
        return False
    upper = any(c.isupper() for c in value)
    lower = any(c.islower() for c in value)
    digit = any(c.isdigit() for c in value)
    symbol = any(c in _STRONG_SYMBOLS for c in value)
    letters = upper or lower
    if letters and (digit or symbol):
        return True
    if not strong:
        return False
    if letters:
        long_enough = len(value) >= 12 or (upper and lower and len(value) >= 8)
        return long_enough and not _KEYWORD.search(value.lower())  # not `password=password=…`
    return digit and len(value) >= 8 and not symbol and value.isdigit()


def _docker_auth(value: str) -> bool:
    """`"auth"` in Docker's config.json: base64 of `user:password`, the password not a stand-in
    (one decode of at most 2,000 characters)."""
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    user, colon, password = decoded.partition(":")
    return (bool(colon) and password != user and len(set(password)) >= 4
            and not _is_placeholder(password))


# inside a decoded Docker config: an `"auth"` (base64 of user:password) or a password or token
_DOCKER_CONFIG_AUTH = LazyPattern(r'"auth"[ \t\r\n]{0,20}:[ \t\r\n]{0,20}"([A-Za-z0-9+/]{8,2000}={0,2})"')
_DOCKER_CONFIG_PASSWORD = LazyPattern(
    r'"(?:password|identitytoken|registrytoken)"[ \t\r\n]{0,20}:[ \t\r\n]{0,20}"([^"\\\n]{1,200})"')
# Docker's config.json as base64 (a Kubernetes `.dockerconfigjson`) starts with one of these:
# `{"auths":` (kubectl's), `{ "auths"`, and `{` then a line break (`\n`, or Windows' `\r\n`)
# and two or four spaces or a tab
_DOCKER_CONFIG_PREFIXES = ("eyJhdXRocyI6", "eyAiYXV0aHMi", "ewogICJhdXRocyI6", "ewogICAgImF1dGhz",
                           "ewoJImF1dGhz", "ew0KICAiYXV0aHMi", "ew0KICAgICJhdXRo", "ew0KCSJhdXRocyI6")


def _docker_config(value: str) -> bool:
    """A Kubernetes `.dockerconfigjson` (or `.dockercfg`) value: base64 of Docker's config
    file, holding an `"auth"` that `_docker_auth` takes for one, or a real `"password"` or
    token. At most its first 64 K characters are decoded (the rules match no more), so a
    longer one is read as far as that goes."""
    value = value.rstrip("=")
    value = value[: len(value) // 4 * 4]
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return False
    return (any(_docker_auth(m.group(1)) for m in _DOCKER_CONFIG_AUTH.finditer(decoded))
            or any(_real_value(m.group(1), True) for m in _DOCKER_CONFIG_PASSWORD.finditer(decoded)))


# a word of prose, not a password: `1Password`, `2FA-protected`, `write-only`
_PROSE_WORD = LazyPattern(r"\d{0,4}[A-Za-z][a-z]{2,}|[A-Za-z0-9]{1,20}(?:-[a-z]{2,20}){1,3}")


def _prose_password(value: str) -> bool:
    """"the password is X": X as strong as an assignment in prose must be, and no word."""
    return _real_value(value, strong=False) and not _PROSE_WORD.fullmatch(value)


# words that make a quoted phrase prose, not a passphrase: "use the vault", "too short"
_PHRASE_WORDS = _PLACEHOLDER_WORDS | frozenset(
    "a an the in on at of to for from by with as is are was were be been not and or but if "
    "then so see use ask get set same stored saved kept only too very it its this that these "
    "those our your my his her their we you they he she there here any all every each some "
    "also still now later please check look found where what which who how when why vault "
    "keychain manager file env environment doc docs wiki page rotate rotated monthly weekly "
    "daily wrong incorrect invalid expired weak strong short long missing unknown blank "
    "known shared sent given below above "
    # where a password lives or how one signs in: `password: 'via OIDC'`, "prod db creds"
    "via creds credential credentials store sso oidc saml ldap okta login signin drive console "
    "settings admin team lead lastpass bitwarden keepass onepassword ssm kms parameter "
    # a rule for passwords or an instruction: `password: 'min 12 chars'`, "press enter"
    "min max minimum maximum least most chars characters character letters digits symbols "
    "press enter hit return type ping slack pinned message printed inside lid sticker "
    "label".split())


def _quoted_value(value: str, prose: bool) -> bool:
    """A quoted value, read whole (`password: 'correct horse battery staple'`, `密码是 "abc
    def"`): one without a space as its rule reads a value; one with spaces is a passphrase
    when it holds letters and digits or symbols, or is two or more words in lower case (as a
    passphrase is typed: "Team Drive", "GitHub Actions" name things), none of them a word of
    prose or of where a password lives (`_PHRASE_WORDS`: "use the vault", "via OIDC")."""
    value = value.replace('\\"', '"').replace("\\'", "'")  # a quote escaped in it: itself
    if not any(c.isspace() for c in value):
        return _prose_password(value) if prose else _real_value(value, strong=True)
    if len(value) > 200 or not value.isascii() or _is_placeholder(value):
        return False
    words = value.split()
    if len(words) < 2 or len(set("".join(words))) < 4 or len(value) < 6:
        return False
    if _is_placeholder("".join(words)):
        return False  # `CHANGE ME`, `change me later`: `changeme` with a space
    if any(word.lower().strip(".,;:!?") in _PHRASE_WORDS or len(word) > 2 and _is_placeholder(word)
           for word in words):
        return False  # `use the vault`, `Bearer <token>`, `$USER $PASS`
    letters = any(c.isalpha() for c in value)
    return letters and any(c.isdigit() or c in _STRONG_SYMBOLS for c in value) or all(
        word.isalpha() and word.islower() for word in words)


# --- rules -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Rule:
    kind: str
    rx: LazyPattern  # compiled the first time a text holds one of `hints`
    hints: tuple[str, ...]  # the rule runs only if one of these is in the text
    group: int = 1  # the secret part
    keep: int = 0  # characters of it left visible; -1: through the first `_` or `-`
    check: Callable[[str], bool] | None = None  # a further test on the secret part
    lower: bool = False  # hints are looked for in the lower-cased text
    context: bool = True  # masked shows the whole match (else the masked secret only)
    user: int = 0  # the group of a user name: a secret equal to it is a default, not a leak
    # a command line's option: the command it is part of (its line, at most 300 characters
    # back, with the lines a `\` continues, after the last `|`, `;` or `&&`) holds this (`_in_command`)
    before: LazyPattern | None = None


_B = r"(?<![A-Za-z0-9_-])"  # no token character before
# what comes before X: "password is" (`passwd`, `passphrase`; not `1password is`), "密码是"
_PROSE_LEAD_EN = r"[Pp](?<![A-Za-z0-9_].)(?i:ass(?:word|wd|phrase)[ \t]{1,3}is)"
_PROSE_HINTS_EN = ("password", "passwd", "passphrase")
_PROSE_LEAD_ZH = r"(?:密码|口令)[ \t]{0,3}[是为]"
_PROSE_HINTS_ZH = ("密码是", "密码为", "口令是", "口令为")
# after "password is" / "密码是": an optional `:` and quote, then the value, printable ASCII
# but `"'`,;`, ending on no `.:)]}` (the end of the sentence, not of the password)
_PROSE_VALUE = (r"[ \t]{0,3}:?[ \t]{0,3}[\"'`]?([^\x00-\x20\"'`,;\x7f-\U0010ffff]{5,199}"
                r"[^\x00-\x20\"'`,;\x7f-\U0010ffff.:)\]}])")

# the same, X quoted and read whole up to its closing quote on the line (spaces and all)
_PROSE_QUOTED = (r"[ \t]{0,3}:?[ \t]{0,3}[\"'`\u201c\u300c]([^\"'`\u201c\u201d\u300c\u300d\n]{1,200})"
                 r"[\"'`\u201d\u300d]")

_RULES: tuple[_Rule, ...] = (
    _Rule("aws-access-key",
          LazyPattern(r"(?<![A-Z0-9])((?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|APKA)"
                     r"[A-Z0-9]{16})(?![A-Za-z0-9])"),
          ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA", "APKA"),
          keep=4, check=lambda s: not _weak_token(s[4:])),
    _Rule("github-token",
          LazyPattern(_B + r"(gh[pousr]_[A-Za-z0-9]{36,255})(?![A-Za-z0-9_])"),
          ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), keep=4, check=lambda s: _mixed(s[4:])),
    _Rule("github-token",
          LazyPattern(_B + r"(github_pat_[A-Za-z0-9_]{22,255})(?![A-Za-z0-9_])"),
          ("github_pat_",), keep=11, check=lambda s: _mixed(s[11:])),
    _Rule("gitlab-token",
          LazyPattern(_B + r"(gl(?:pat|dt|rt|ptt|ft|imt|cbt|soat|oas)-[A-Za-z0-9_-]{20,80}"
                     r"(?:\.[A-Za-z0-9_-]{2,40}){0,3})(?![A-Za-z0-9_-])"),
          ("glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glimt-", "glcbt-", "glsoat-", "gloas-"),
          keep=-1, check=lambda s: _mixed(s.split("-", 1)[1])),
    _Rule("pypi-token",
          LazyPattern(_B + r"(pypi-AgE[A-Za-z0-9_-]{50,400})(?![A-Za-z0-9_-])"), ("pypi-AgE",),
          keep=5, check=lambda s: _mixed(s[8:])),
    _Rule("npm-token",
          LazyPattern(_B + r"(npm_[A-Za-z0-9]{36})(?![A-Za-z0-9_])"), ("npm_",),
          keep=4, check=lambda s: _mixed(s[4:])),
    _Rule("huggingface-token",
          LazyPattern(_B + r"((?:hf_|api_org_)[A-Za-z0-9]{30,40})(?![A-Za-z0-9_])"),
          ("hf_", "api_org_"), keep=-1, check=lambda s: _mixed(s.rsplit("_", 1)[1])),
    _Rule("digitalocean-token",
          LazyPattern(_B + r"(do[por]_v1_[a-f0-9]{64})(?![A-Za-z0-9_])"),
          ("dop_v1_", "doo_v1_", "dor_v1_"), keep=7, check=lambda s: not _weak_token(s[7:])),
    _Rule("shopify-token",
          LazyPattern(_B + r"(shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})(?![A-Za-z0-9_])"),
          ("shpat_", "shpca_", "shppa_", "shpss_"), keep=6, check=lambda s: not _weak_token(s[6:])),
    _Rule("linear-api-key",
          LazyPattern(_B + r"(lin_api_[A-Za-z0-9]{40})(?![A-Za-z0-9_])"), ("lin_api_",),
          keep=8, check=lambda s: _mixed(s[8:])),
    # an age identity (age-keygen's key file, SOPS_AGE_KEY): `AGE-SECRET-KEY-1` and 58 bech32
    # characters, upper case (a `-` may come before it: `deploy-AGE-SECRET-KEY-1…` as a name)
    _Rule("age-secret-key",
          LazyPattern(r"(?<![A-Za-z0-9])(AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58})"
                     r"(?![A-Za-z0-9])"),
          ("AGE-SECRET-KEY-1",), keep=16, check=lambda s: not _weak_token(s[16:])),
    # `<bot id>:AA…`, also inside `https://api.telegram.org/bot<id>:AA…/`; the id stays shown
    _Rule("telegram-bot-token",
          LazyPattern(r"(?<![0-9])[0-9]{8,10}:(AA[A-Za-z0-9_-]{33})(?![A-Za-z0-9_-])"), (":AA",),
          keep=2, check=lambda s: _mixed(s[2:])),
    _Rule("slack-token",
          LazyPattern(r"(?<![A-Za-z0-9-])((?:xox[abposre]|xapp)-[A-Za-z0-9-]{10,250})(?![A-Za-z0-9-])"),
          ("xox", "xapp-"), keep=5, check=lambda s: _has_digit(s[5:])),
    _Rule("slack-webhook",
          LazyPattern(r"https://hooks\.slack\.com/(?:services|workflows)/"
                     r"(T[A-Z0-9]{6,20}/[AB][A-Z0-9]{6,20}/[A-Za-z0-9]{16,64})"),
          ("hooks.slack.com",)),
    _Rule("discord-webhook",
          LazyPattern(r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/"
                     r"([A-Za-z0-9_-]{60,100})"),
          ("/api/webhooks/",), check=lambda s: not _weak_token(s)),
    _Rule("google-api-key",
          LazyPattern(_B + r"(AIza[0-9A-Za-z_-]{35})(?![A-Za-z0-9_-])"), ("AIza",),
          keep=4, check=lambda s: not _weak_token(s[4:])),
    _Rule("stripe-key",
          LazyPattern(_B + r"((?:sk|rk)_live_[A-Za-z0-9]{16,255})(?![A-Za-z0-9_])"),
          ("_live_",), keep=8, check=lambda s: _mixed(s[8:])),
    _Rule("sendgrid-key",
          LazyPattern(r"(?<![A-Za-z0-9_.-])(SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})(?![A-Za-z0-9_-])"),
          ("SG.",), keep=3, check=lambda s: _mixed(s[3:])),
    _Rule("twilio-api-key",
          LazyPattern(r"(?<![A-Za-z0-9])(SK[0-9a-f]{32})(?![A-Za-z0-9])"), ("SK",),
          keep=2, check=lambda s: not _weak_token(s[2:])),
    _Rule("twilio-auth-token",
          LazyPattern(r"(?<![A-Za-z0-9])AC[0-9a-f]{32}(?![A-Za-z0-9])"
                     r"(?::|[^\n]{0,30}?(?i:token|auth|secret)[^\n]{0,20}?)"
                     r"(?<![A-Za-z0-9])([0-9a-f]{32})(?![A-Za-z0-9])"),
          ("AC",), check=lambda s: not _weak_token(s), context=False),
    # …or named by the words right before it, with no sid: "twilio auth token 9f8e…", "the
    # Twilio auth token is …", `TWILIO_AUTH_TOKEN …`, `twilioAuthToken: "…"` (only `is`, `:`,
    # `=`, `=>` or a quote between). A 32-hex value anywhere else (an MD5, a request id) is none.
    _Rule("twilio-auth-token",
          LazyPattern(r"(?i:twilio(?:'s)?[ \t_-]{0,3}(?:account[ \t_-]{0,3})?auth(?:entication)?[ \t_-]{0,3}token)"
                     r"[\"']?(?:[ \t]{1,3}(?i:is))?[ \t]{0,3}(?:=>|[:=])?[ \t]{0,3}[\"']?"
                     r"(?<![A-Za-z0-9])([0-9a-f]{32})(?![A-Za-z0-9])"),
          ("twilio",), lower=True, check=_mixed),
    _Rule("openai-key",
          LazyPattern(_B + r"(sk-(?:proj-|svcacct-|admin-|ant-(?:api|admin)\d\d-|ant-)?"
                     r"[A-Za-z0-9_-]{20,300})(?![A-Za-z0-9_-])"),
          ("sk-",), keep=3, check=lambda s: _mixed(s[3:])),
    _Rule("jwt",
          LazyPattern(_B + r"(eyJ[A-Za-z0-9_-]{8,3000}\.eyJ[A-Za-z0-9_-]{8,6000}\.[A-Za-z0-9_-]{10,3000})"
                     r"(?![A-Za-z0-9_-])"),
          ("eyJ",), keep=3),
    _Rule("azure-storage-key",
          LazyPattern(r"(?i)(?<![A-Za-z0-9])(?:AccountKey|SharedAccessKey)[ \t]{0,3}=[ \t]{0,3}"
                     r"([A-Za-z0-9+/]{20,200}={0,2})(?![A-Za-z0-9+/=])"),
          ("accountkey", "sharedaccesskey"), lower=True, check=lambda s: _mixed(s)),
    _Rule("azure-sas-signature",
          LazyPattern(r"(?<=[?&;])sig=([A-Za-z0-9%+/]{20,200}={0,2})(?![A-Za-z0-9%+/=])"),
          ("sig=",), check=lambda s: _mixed(s)),
    _Rule("aws-secret-key",
          LazyPattern(r"(?i)aws_?secret_?(?:access_?)?key[\"']?[ \t]{0,5}[:=][ \t]{0,5}[\"']?"
                     r"([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"),
          ("aws",), lower=True, check=lambda s: not _weak_token(s)),
    _Rule("bearer-token",
          LazyPattern(r"(?<![A-Za-z0-9])[Bb]earer[ \t]{1,5}([A-Za-z0-9._~+/-]{20,1000}={0,2})"
                     r"(?![A-Za-z0-9._~+/=-])"),
          ("earer",), keep=0, check=lambda s: _mixed(s) and any(c.isdigit() for c in s)),
    _Rule("basic-auth",
          LazyPattern(r"(?i)authorization[\"']?[ \t]{0,3}[:=][ \t]{0,3}[\"']?basic[ \t]{1,5}"
                     r"([A-Za-z0-9+/]{8,500}={0,2})(?![A-Za-z0-9+/=])"),
          ("authorization",), lower=True, check=lambda s: not _weak_token(s)),
    # command lines: `curl -u user:pass`, `--user`, `-U`/`--proxy-user` in a curl command (not
    # `docker run -u 1000:1000`: `before`); no password (a prompt), `$TOKEN` or `<pw>` is none.
    # `-u` may end a group of curl's short options that take no value (`-sSfu`, `-su`).
    _Rule("curl-password",
          LazyPattern(r"(?<=[ \t])(?:-[0-9#aBfgGIijJkLlMNnOpqRSsVvZ]{0,20}[uU][ \t]{0,5}"
                     r"|--(?:proxy-)?user(?:[ \t]{1,5}|=))[\"']?(?!-)"
                     r"([^\s:\"'@]{0,100}):([^\s\"']{1,200})"),
          ("curl",), group=2, user=1, check=lambda s: _real_value(s, True),
          before=LazyPattern(r"(?<![A-Za-z0-9_-])curl(?:\.exe)?[ \t]")),
    # `mysql -pSECRET` in a mysql command (attached: `-p mydb` is a prompt, then the database;
    # `-P3306` a port; `mysqldump … | ssh -p2222` another command's)
    _Rule("mysql-password",
          LazyPattern(r"(?<=[ \t])-p[\"']?([^\s\"']{1,200})"),
          ("mysql", "mariadb"), check=lambda s: _real_value(s, True),
          before=LazyPattern(r"(?<![A-Za-z0-9_-])(?:mysql(?:dump|admin|import|check|sh|slap|binlog)?"
                             r"|mariadb(?:-?dump|-?admin|-?import|-?check)?)(?:\.exe)?[ \t]")),
    # a registry login's password option (`docker login -u ci -p SECRET`, `--password SECRET`;
    # podman, nerdctl, buildah, skopeo, oras, `helm registry login`); `--password-stdin` is none.
    # Only among the login's own arguments: its registry, then options with at most two values
    # each ("run docker login ghcr.io first, then docker compose -p shop2026 up" is prose)
    _Rule("login-password",
          LazyPattern(r"(?<=[ \t])(?:-p|--password)(?:[ \t]{1,5}|=)[\"']?(?!-)([^\s\"']{1,200})"),
          ("login",), check=lambda s: _real_value(s, True),
          before=LazyPattern(r"(?<![A-Za-z0-9_-])(?:docker|podman|nerdctl|buildah|skopeo|oras|helm)"
                             r"(?:\.exe)?[ \t](?:[^\n]{0,80}[ \t])?login(?:[ \t]{1,5}[^\s-]\S{0,200})?"
                             r"(?:[ \t]{1,5}-\S{0,200}(?:[ \t]{1,5}[^\s-]\S{0,200}){0,2}){0,10}[ \t]{1,5}\Z")),
    # `sshpass -p SECRET ssh …` and `redis-cli -a SECRET` (`--pass`)
    _Rule("command-password",
          LazyPattern(r"(?<=[ \t])-p[ \t]{0,5}[\"']?(?!-)([^\s\"']{1,200})"),
          ("sshpass",), check=lambda s: _real_value(s, True),
          # only among sshpass's own options: the `-p` of the command it runs is not its own
          # (`sshpass -f pw ssh host "mkdir -p release2026"`)
          before=LazyPattern(r"(?<![A-Za-z0-9_-])sshpass(?:[ \t]{1,5}-(?:[fdP][ \t]{0,5}\S{1,200}"
                             r"|[evhV]))*[ \t]{1,5}\Z")),
    _Rule("command-password",
          LazyPattern(r"(?<=[ \t])(?:-a|--pass)[ \t]{1,5}[\"']?(?!-)([^\s\"']{1,200})"),
          ("redis-cli",), check=lambda s: _real_value(s, True),
          before=LazyPattern(r"(?<![A-Za-z0-9_-])redis-cli(?:\.exe)?[ \t]")),
    # Oracle's `user/password@connect` in a JDBC URL (`jdbc:oracle:thin:scott/…@db:1521/ORCL`);
    # on a command line: `_oracle_logons`. `scott/tiger` (the demo schema's), `app/app`, `/`
    # and `scott@ORCL` (a prompt) are none.
    _Rule("oracle-password",
          LazyPattern(r"(?i:jdbc:oracle:[a-z0-9]{2,8}:)([^\s/:@\"']{1,128})/([^\s@/\"']{1,200})@"),
          ("jdbc:oracle:",), group=2, user=1, lower=True, check=lambda s: _real_value(s, True)),
    # Docker's config.json (`"auths": {host: {"auth": base64 of user:password}}`); the value
    # may be on the next line (`"auth":` then a line break: a formatter wrapping a long line)
    _Rule("docker-auth",
          LazyPattern(r'"auth"[ \t\r\n]{0,20}:[ \t\r\n]{0,20}"([A-Za-z0-9+/]{8,2000}={0,2})"'),
          ('"auths"',), check=_docker_auth),
    # .npmrc's legacy `_auth=` (`//registry/:_auth=`): base64 of user:password, as Docker's
    _Rule("npm-auth",
          LazyPattern(r"(?<![A-Za-z0-9_])_auth[ \t]{0,3}=[ \t]{0,3}[\"']?([A-Za-z0-9+/]{8,2000}={0,2})"
                     r"(?![A-Za-z0-9+/=])"),
          ("_auth",), check=_docker_auth),
    # Kubernetes' image pull secret: Docker's config.json as base64, by its name in a manifest
    # (`.dockerconfigjson: eyJ…`, `".dockercfg": "…"`) or by the fixed start of `{"auths":`
    _Rule("docker-auth",
          LazyPattern(r"(?<![A-Za-z0-9_-])\.docker(?:configjson|cfg)[\"']?[ \t]{0,5}[:=][ \t]{0,5}[\"']?"
                     r"([A-Za-z0-9+/]{16,65536}={0,2})"),
          (".dockerconfigjson", ".dockercfg"), check=_docker_config),
    _Rule("docker-auth",
          LazyPattern(r"(?<![A-Za-z0-9+/])((?:" + "|".join(_DOCKER_CONFIG_PREFIXES) + r")"
                     r"[A-Za-z0-9+/]{4,65536}={0,2})"),
          _DOCKER_CONFIG_PREFIXES, check=_docker_config),
    _Rule("url-password",
          LazyPattern(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://([^\s/:@]{0,100}):"
                     r"([^\s/@]{1,200})@(?=[A-Za-z0-9\[_-])"),
          ("://",), group=2, user=1),
    # prose: "the password is X", "password is: X", "密码是X", "密码为X" (X up to its last
    # character that is no punctuation), X a real value and no word (`_prose_password`). Two
    # rules: one expression for both, or one starting with its look-behind, is tried at every
    # position (30 ms a MB against 5).
    _Rule("password-in-prose", LazyPattern(_PROSE_LEAD_EN + _PROSE_QUOTED), _PROSE_HINTS_EN,
          lower=True, check=lambda s: _quoted_value(s, True)),
    _Rule("password-in-prose", LazyPattern(_PROSE_LEAD_ZH + _PROSE_QUOTED), _PROSE_HINTS_ZH,
          check=lambda s: _quoted_value(s, True)),
    _Rule("password-in-prose", LazyPattern(_PROSE_LEAD_EN + _PROSE_VALUE), _PROSE_HINTS_EN,
          lower=True, check=_prose_password),
    _Rule("password-in-prose", LazyPattern(_PROSE_LEAD_ZH + _PROSE_VALUE), _PROSE_HINTS_ZH,
          check=_prose_password),
)

# Private key blocks: the header, then the body up to the footer (or the end of the text).
_PEM_BEGIN = LazyPattern(r"-----BEGIN (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = LazyPattern(r"-----END [A-Z0-9 ]{0,60}-----")
# A block's body starts right after its header: on the next line (a line break, or `\n` in a
# JSON or code string, which may close on the header's line: `"-----BEGIN …-----\n" +`),
# after any RFC 1421 / OpenPGP header lines (`Proc-Type:`, `DEK-Info:`, `Version:`,
# `Comment:`) and a blank line, or on the header's own line (a key flattened to one line); it
# starts with 16 base64 characters. Each of those lines may start as a quoted, commented or
# continued line does (`> `, `# `, `// `, ` * `, `"`, `+ '`): a key pasted in a Markdown quote,
# a comment or a string literal of code is one. A header named in prose ("starts with
# -----BEGIN PRIVATE KEY----- and ends …") has none, and no later line of the note is taken
# for its body.
_PEM_LINE_START = r"[ \t]{0,20}(?:(?://|[>#;*\"'`+|-])[ \t]{0,5}){0,4}"
_PEM_BREAK = r"(?:\r?\n|(?:\\{1,2}r)?\\{1,2}n(?:[ \t\"'`+,;)]{0,10}\r?\n)?)"
_PEM_BODY = LazyPattern(
    r"[ \t]{0,20}(?:" + _PEM_BREAK
    + r"(?:" + _PEM_LINE_START + r"(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset):"
    r"(?:[^\n\\]|\\[^nr\\]){0,300}" + _PEM_BREAK + r"){0,8}"
    r"(?:" + _PEM_LINE_START + _PEM_BREAK + r"){0,3}" + _PEM_LINE_START + r")?[A-Za-z0-9+/]{16}")
# a sample's stand-in for the body: one character repeated (`XXXXXXXX…`, `AAAAAAAA…`)
_PEM_FILLER = LazyPattern(r"(.)\1{15}")
# A body that is a word of prose ("Cryptographically secure keys …" on the line after a
# header named in a sentence): its run of base64 characters is letters in one case, with at
# most a capital first. A key's body mixes cases or holds digits, `+` or `/` in its first 16
# (`MIIEowIBAAKCAQEA`, `b3BlbnNzaC1rZXkt`, `MC4CAQAwBQYDK2Vw`); all of one case by chance is
# about one in a million. (A body of at least 40 characters would also tell, but a short
# body in a sample or test is still a key: `b3BlbnNzaC1rZXktdjEAAAAABG5vbmU`.)
_PEM_RUN = LazyPattern(r"[A-Za-z0-9+/]{16,100}")
_PEM_WORD = LazyPattern(r"[A-Z]?[a-z]{15,99}|[A-Z]{16,100}")

# .netrc (curl, git, ftp, Python's netrc): `machine HOST login USER password SECRET`, on one
# line or over several (at most 20 spaces and line breaks between two of its words), and
# `default login USER password SECRET`; no keyword is taken for a value (an entry without a
# password, then the next entry). Found from its `machine`/`default`: `_netrc`. The keywords
# in any case (`MACHINE host LOGIN me PASSWORD …`: curl reads them so).
_NETRC_WORD = r"(?!(?i:machine|default|login|account|password|macdef)(?!\S))[^\s]"
_NETRC = LazyPattern(
    r"(?<![A-Za-z0-9_.-])(?:(?i:machine)[ \t\r\n]{1,20}" + _NETRC_WORD + r"{1,253}|(?i:default))"
    r"((?:[ \t\r\n]{1,20}(?i:login|account)[ \t\r\n]{1,20}" + _NETRC_WORD + r"{1,200}){0,2})"
    r"[ \t\r\n]{1,20}((?i:password))[ \t\r\n]{1,20}[\"']?(" + _NETRC_WORD + r"[^\s\"']{0,199})[\"']?(?!\S)")

# Oracle's `user/password@connect` as the logon of sqlplus, sqlldr, expdp, impdp, exp, imp,
# dgmgrl, SQLcl (its first argument after options), rman (after `target`, `catalog`,
# `auxiliary`), `userid=` or `connect` (SQL*Plus's, cx_Oracle's `connect("…")`). Found from
# its `/…@` (a literal start: a pattern starting at the user name was tried at every word of a
# note, 20 ms a MB), then the user name right before it (at most 30 characters, after a space,
# a quote, `(` or `=`) and the command right before that (`_oracle_command`, ending there).
# A password in double quotes (`scott/"Tr0ub4dor 3"@orcl`, how Oracle quotes one holding a
# space or a symbol) is read whole up to its closing quote on the line (group 1), and judged
# as a quoted value is (`_quoted_value`); an unquoted one is group 2.
_ORACLE_LOGON = LazyPattern(r'/(?:"([^"\n]{1,200})"|([^\s@/"\']{1,200}))@(?=[A-Za-z0-9_/(])')
_ORACLE_USER = LazyPattern(r"(?<![^ \t\"'(=])[A-Za-z][A-Za-z0-9_$#]{0,29}\Z")
# What an Oracle logon must look like (docs/security.md): the command right before it is
#   * one of Oracle's own clients, named anywhere (`_ORACLE_CLIENT`): sqlplus, sqlldr, expdp,
#     impdp, dgmgrl, rman's `target`/`catalog`/`auxiliary`, `userid=`, cx_Oracle's `connect(`;
#   * `exp`, `imp` or `sql` (SQLcl), words of prose too ("exp cifar10/ResNet50@epoch90", an
#     experiment), only where a command starts (the command line's start, a prompt, a
#     backtick: `_ORACLE_SHORT`); and outside a SQL*Plus context (below) the password must be
#     more than a word and a number (`Word2024`, a name and a year, is how prose and release
#     tags read: "sql word/Word2024@x");
#   * `connect` or `conn` where a command starts (`_ORACLE_CONNECT`), only in a SQL*Plus
#     context: a `SQL>` prompt, or sqlplus, SQL*Plus or SQLcl named in the 300 characters
#     before (`sqlplus /nolog` then `connect …`). "connect a/B2024x@x" opening a line of
#     prose is no logon.
#   A password in double quotes is Oracle's own syntax, not prose: it needs no context.
_COMMAND_START = r"(?:^|(?<=[|;&`(]))[ \t]{0,5}(?:(?:SQL|RMAN)?>[ \t]{0,5}|[$#][ \t]{0,5})?"
_ORACLE_OPTIONS = r"(?:\.exe)?(?:[ \t]{1,5}-[A-Za-z]{1,12}){0,6}[ \t]{1,5}"
_ORACLE_CLIENT = LazyPattern(
    r"(?i)(?:(?<![A-Za-z0-9_-])(?:sqlplus|sqlldr|expdp|impdp|dgmgrl)" + _ORACLE_OPTIONS
    + r"|(?<![A-Za-z0-9_-])rman[ \t][^\n]{0,200}?(?:target|catalog|auxiliary)[ \t=]{1,5}"
    r"|(?<![A-Za-z0-9_-])userid[ \t]{0,3}=[ \t]{0,3}"
    r"|(?<![A-Za-z0-9_-])connect\([ \t]{0,5})[\"']?\Z")
_ORACLE_SHORT = LazyPattern(r"(?i)" + _COMMAND_START + r"(?:exp|imp|sql)" + _ORACLE_OPTIONS + r"[\"']?\Z")
_ORACLE_CONNECT = LazyPattern(r"(?i)" + _COMMAND_START + r"conn(?:ect)?[ \t]{1,5}[\"']?\Z")
_SQLPLUS_CONTEXT = ("sql>", "sqlplus", "sql*plus", "sqlcl")  # in the lower-cased text before
_WORD_AND_NUMBER = LazyPattern(r"[A-Za-z][a-z]{0,30}[0-9]{1,4}")
_ORACLE_WORDS = ("sql", "exp", "imp", "rman", "dgmgrl", "userid", "conn")  # in each command's name
_ORACLE_HINTS = ("sqlplus", "sqlldr", "expdp", "impdp", "exp ", "imp ", "rman", "dgmgrl", "sql ",
                 "userid", "conn")

# Assignments: a name holding one of these words, `=`/`:`/`:=`/`=>`, a value.
_KEYWORD = re.compile(r"pass|pwd|secret|token|key|密码|口令|密钥")  # in lower-cased text
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_NAME_RUN = LazyPattern(r"[A-Za-z0-9_.-]*")
_ASSIGN = LazyPattern(
    r"([\"']?)[ \t]{0,5}(:=|=>|=|:)[ \t]{0,5}([\"']?)"
    r"([\x21\x23-\x26\x28-\x2b\x2d-\x3a\x3c-\x7e]{1,200})"  # printable ASCII but space " ' , ;
)
_SEGMENT = LazyPattern(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|密码|口令|密钥")
# `SSHPASS` (what `sshpass -e` reads) is one word: no segment of it is `pass`
_PASSWORD_WORDS = frozenset({"password", "passwd", "pwd", "pass", "passphrase", "pw", "sshpass",
                             "密码", "口令"})
_SECRET_WORDS = frozenset({"secret", "token", "apikey", "密钥", "privatekey", "secretkey",
                           "accesskey", "masterkey", "signingkey", "encryptionkey", "clientsecret"})
_KEY_QUALIFIERS = frozenset(
    "api access secret private client app signing encryption encrypt master account subscription "
    "license auth service admin shared storage consumer webhook deploy session sas hmac "
    "jwt".split()
)
_NAME_DENY = frozenset(
    "id ids file filename files path paths dir name names length len min max count limit limits "
    "policy field hint hints prompt expiry expires expiration expire expired ttl timeout rotation "
    "rotate rotated type mode header endpoint url uri format size budget usage public pub hash "
    "hashed regex pattern label param column env var version ref kind source enabled required "
    "strength age provider manager method algorithm algo prefix suffix location arn template "
    "placeholder example sample description doc docs help link lifetime duration scope scopes "
    "audience issuer flag check validation validator visible show input policy store "
    "tokens tokenizer count keys".split()
)


def _name_kind(name: str) -> str | None:
    """`password-assignment`, `secret-assignment` or None for what the name says it holds."""
    segments = [s.lower() for s in _SEGMENT.findall(name)]
    if not segments or any(s in _NAME_DENY for s in segments):
        return None
    if any(s in _PASSWORD_WORDS or s.endswith(("password", "passwd", "passphrase")) for s in segments):
        return "password-assignment"
    for k, segment in enumerate(segments):
        if segment in _SECRET_WORDS or segment.endswith(("secret", "token", "apikey")):
            return "secret-assignment"
        if segment == "key" and k > 0 and segments[k - 1] in _KEY_QUALIFIERS:
            return "secret-assignment"
    return None


@dataclass(frozen=True)
class _Candidate:
    priority: int
    start: int  # secret part, view offsets
    end: int
    whole_start: int
    kind: str
    masked: str
    replacement: str


def _keep(secret: str, keep: int) -> int:
    if keep >= 0:
        return keep
    cut = min((i for i in (secret.find("_"), secret.find("-")) if i >= 0), default=-1)
    return cut + 1


def _mask(secret: str, keep: int) -> str:
    return secret[: _keep(secret, keep)] + "****"


def _private_keys(text: str, priority: int) -> list[_Candidate]:
    found: list[_Candidate] = []
    position = 0
    while True:
        header = _PEM_BEGIN.search(text, position)
        if header is None:
            return found
        body = _PEM_BODY.match(text, header.end())
        run = _PEM_RUN.match(text, body.end() - 16) if body is not None else None
        if run is None or _PEM_FILLER.fullmatch(run.group(0), 0, 16) or _PEM_WORD.fullmatch(run.group(0)):
            # a header named in prose (no body, or a word of prose for one), or `XXXX…` in a
            # sample: no key
            position = header.end()
            continue
        footer = _PEM_END.search(text, header.end())
        body_end = footer.start() if footer else len(text)
        found.append(_Candidate(priority, header.end(), body_end, header.start(), "private-key",
                                header.group(0) + " ****", "\n****\n"))
        if footer is None:
            return found
        position = footer.end()


def _netrc(text: str, priority: int) -> list[_Candidate]:
    """.netrc entries (`_NETRC`), each reported on its password's line and masked on one line
    (`machine HOST login USER password ****`). Without a login (`machine db1 password X`,
    which prose can read like) the password must be as strong as in prose; a `default` entry
    needs a login, and anonymous FTP's (`login anonymous password me@host`) is no secret."""
    found: list[_Candidate] = []
    for match in _NETRC.finditer(text):
        words = match.group(1).split()
        login = dict(zip([word.lower() for word in words[0::2]], words[1::2], strict=False)).get("login")
        secret = match.group(3)
        default = match.group(0)[:7].lower() == "default"
        if login is None and default or login is not None and login.lower() in ("anonymous", "ftp"):
            continue
        if secret == login or not _real_value(secret, strong=login is not None):
            continue
        start, end = match.span(3)
        shown = " ".join(text[match.start() : match.start(2)].split())
        found.append(_Candidate(priority, start, end, match.start(2), "netrc-password",
                                f"{shown} {match.group(2)} ****", "****"))
    return found


def _oracle_logons(text: str, priority: int) -> list[_Candidate]:
    """Oracle logons on a command line (`_ORACLE_LOGON`), masked `scott/****@`."""
    found: list[_Candidate] = []
    for match in _ORACLE_LOGON.finditer(text):
        slash = match.start()
        user = _ORACLE_USER.search(text, max(0, slash - 30), slash)
        quoted = match.group(1) is not None
        group = 1 if quoted else 2
        secret = match.group(group)
        if user is None or secret == user.group(0):
            continue
        before = text[max(0, user.start() - 300) : user.start()].lower()
        if not any(map(before.__contains__, _ORACLE_WORDS)):
            continue  # no command's name: neither the value nor the command need be read
        real = _quoted_value(secret, False) if quoted else _real_value(secret, True)
        if not real or not _oracle_command(text, user.start(), before, secret, quoted):
            continue
        start, end = match.span(group)
        shown = '"****"' if quoted else "****"
        found.append(_Candidate(priority, start, end, user.start(), "oracle-password",
                                f"{user.group(0)}/{shown}@", "****"))
    return found


def _oracle_command(text: str, at: int, before: str, secret: str, quoted: bool) -> bool:
    """Whether the logon whose user name starts at `at` follows an Oracle command (see
    `_ORACLE_CLIENT`): a client named anywhere, or a short name or `connect` where a command
    starts, in a SQL*Plus context (`before`: the 300 characters before, lower-cased), or
    else a short name with a password that is more than a word and a number (`connect` needs
    the context); a quoted password is Oracle's own syntax and needs neither."""
    if _in_command(_ORACLE_CLIENT, text, at):
        return True
    short = _in_command(_ORACLE_SHORT, text, at)
    if not short and not _in_command(_ORACLE_CONNECT, text, at):
        return False
    if quoted or any(map(before.__contains__, _SQLPLUS_CONTEXT)):
        return True
    return short and not _WORD_AND_NUMBER.fullmatch(secret)  # `sql word/Word2024@x`: prose


def _in_command(command: LazyPattern, text: str, at: int) -> bool:
    """Whether the command that the option at `at` is part of holds `command`: looked for in
    at most 300 characters before it on its line (and the lines it continues, each ending in
    `\\`), after the last `|`, `;` or `&&` (a bounded look per match, so the scan stays
    linear). `&&` ends a command too: `docker login r.io && docker compose -p shop2026 up`
    took the project name for the login's password."""
    floor = max(0, at - 300)
    low = max(floor, text.rfind("\n", floor, at) + 1)
    # a line ending in `\` goes on on the next: `curl -sS \` then `  -u admin:…` is one command
    while low > floor and (text[low - 2 : low] == "\\\n" or text[low - 3 : low] == "\\\r\n"):
        low = max(floor, text.rfind("\n", floor, low - 2) + 1)
    segment = text[low:at]
    if "\n" in segment:  # the lines continued, joined by one space
        *lines, last = segment.split("\n")
        segment = " ".join([line.rstrip("\r").rstrip("\\").strip(" \t") for line in lines]
                           + [last.lstrip(" \t")])
    cut = max(segment.rfind("|"), segment.rfind(";"))
    both = segment.rfind("&&")
    if both >= 0:
        cut = max(cut, both + 1)
    return command.search(segment, cut + 1) is not None


def _rule_matches(rule: _Rule, text: str, priority: int) -> list[_Candidate]:
    found: list[_Candidate] = []
    for match in rule.rx.finditer(text):
        secret = match.group(rule.group)
        if not secret.strip() or _is_placeholder(secret) and rule.kind == "url-password":
            continue
        if rule.check is not None and not rule.check(secret):
            continue
        if rule.user and secret == match.group(rule.user):
            continue  # `postgres:postgres@`: a default, not a leak
        if rule.before is not None and not _in_command(rule.before, text, match.start()):
            continue
        start, end = match.span(rule.group)
        kept = _mask(secret, rule.keep)
        masked = text[match.start() : start] + kept + text[end : match.end()] if rule.context else kept
        whole_start = match.start()
        if "\n" in masked:  # a match over lines (`"auth":` then the value on the next):
            masked = " ".join(masked.split())  # shown on one line, reported on the secret's
            whole_start = start
        found.append(_Candidate(priority, start, end, whole_start, rule.kind, masked, kept))
    return found


def _assignments(text: str, lowered: str, priority: int) -> list[_Candidate]:
    found: list[_Candidate] = []
    resume = 0
    if len(lowered) != len(text):  # a few characters lower-case to two
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    for keyword in _KEYWORD.finditer(lowered):
        if keyword.start() < resume:
            continue
        begin = keyword.start()
        floor = max(0, begin - 40)
        while begin > floor and text[begin - 1] in _NAME_CHARS:
            begin -= 1
        name_end = _NAME_RUN.match(text, keyword.end()).end()  # type: ignore[union-attr]
        resume = name_end
        if begin > 0 and text[begin - 1] in _NAME_CHARS or name_end - begin > 80:
            continue  # part of a longer word: not a name
        assign = _ASSIGN.match(text, name_end)
        if assign is None:
            continue
        resume = max(resume, assign.end())
        name = text[begin:name_end]
        kind = _name_kind(name)
        if kind is None:
            continue
        close, separator, quote, value = assign.groups()
        after = text[assign.end() : assign.end() + 1]
        start, end = assign.span(4)
        if quote and (after != quote or value.endswith("\\")):
            # a quoted value with spaces or commas (or a quote escaped in it): read whole, up
            # to its closing quote on the line (at most 200 characters), and judged as a
            # passphrase
            closing = unescaped_quote(text, quote, start, start + 201)
            shut = quote
            if closing < 0 or "\n" in text[end:closing]:
                # no closing quote on the line (`password: "Xk9mQ2vLp7zR` and the line or the
                # text ends): the value runs to the end of its line. Where a phrase ends is
                # then unknown, so one with spaces counts only with a digit or a symbol in it
                # (`'correct horse` then `battery staple'` on the next line is no password)
                closing = text.find("\n", start, start + 202)
                if closing < 0:
                    closing = len(text) if len(text) - start <= 201 else start
                while closing > start and text[closing - 1] in " \t\r":
                    closing -= 1
                shut = ""
                rest = text[start:closing]
                if any(c.isspace() for c in rest) and not any(
                        c.isdigit() or c in _STRONG_SYMBOLS for c in rest):
                    continue
            if closing <= start or not _quoted_value(text[start:closing], False):
                continue
            resume = max(resume, closing)
            found.append(_Candidate(priority, start, closing, begin, kind,
                                    text[begin:start] + "****" + shut, "****"))
            continue
        connection = (
            kind == "password-assignment" and separator == "=" and not quote
            and (after == ";" or text[begin - 1 : begin] == ";")
        )
        before = text[max(0, begin - 12) : begin].rstrip(" \t")
        strong = (
            bool(quote or close) or separator != ":" or connection
            or (any(c.isupper() for c in name) and not any(c.islower() for c in name))
            or before.endswith("export") and before[-7:-6] not in _NAME_CHARS
        )
        if not _real_value(value, strong):
            continue
        found.append(_Candidate(priority, start, end, begin,
                                "connection-string-password" if connection else kind,
                                text[begin:start] + "****" + quote, "****"))
    return found


def _candidates(text: str) -> list[_Candidate]:
    lowered = text.lower()
    out = _private_keys(text, 0) if "PRIVATE KEY" in text else []
    # A rule runs only if the text holds one of its hints (most texts hold none: the health
    # report scans every file and title). A substring search per hint, not one expression of
    # them all, which tries every hint at every position: 1 MB with none, ~50 ms against 180.
    for priority, rule in enumerate(_RULES, start=1):
        haystack = lowered if rule.lower else text
        if any(map(haystack.__contains__, rule.hints)):
            out.extend(_rule_matches(rule, text, priority))
    if "machine" in lowered or "default" in lowered:
        out.extend(_netrc(text, len(_RULES) + 1))
    if "@" in text and any(map(lowered.__contains__, _ORACLE_HINTS)):
        out.extend(_oracle_logons(text, len(_RULES) + 2))
    out.extend(_assignments(text, lowered, len(_RULES) + 3))
    return out


def scan(text: str) -> list[SecretFinding]:
    """Every likely secret in `text`, in order of position, each reported once."""
    views = [_normalised(text)]
    decoded = _decoded(views[0])
    if decoded is not None:
        views.append(decoded)
    groups: dict[tuple[int, int], list[tuple[int, int, int, _Candidate]]] = {}
    for number, view in enumerate(views):
        for candidate in _candidates(view.text):
            start, end = view.span(candidate.start, candidate.end)
            whole_start, _ = view.span(candidate.whole_start, candidate.whole_start + 1)
            if end > start:
                groups.setdefault((candidate.priority, number), []).append(
                    (start, end, whole_start, candidate))
    breaks = [m.start() for m in re.finditer("\n", text)] if groups else []
    taken: list[tuple[int, int]] = []  # sorted, disjoint spans already reported
    findings: list[SecretFinding] = []
    for key in sorted(groups):  # the most specific rule first; within a rule, in order
        accepted: list[tuple[int, int]] = []
        at = 0
        for start, end, whole_start, candidate in sorted(groups[key], key=lambda item: item[0]):
            while at < len(taken) and taken[at][1] <= start:
                at += 1
            if at < len(taken) and taken[at][0] < end or accepted and accepted[-1][1] > start:
                continue  # already reported by a more specific rule
            accepted.append((start, end))
            line = bisect_right(breaks, min(whole_start, start)) + 1
            findings.append(SecretFinding(candidate.kind, candidate.masked, line, start, end,
                                          candidate.replacement))
        taken = sorted(taken + accepted)  # two sorted runs: a linear merge
    findings.sort(key=lambda f: f.start)
    return findings


def mask_secrets(text: str) -> str:
    """`text` with the secret part of every finding replaced by its masked form."""
    return _masked(text, scan(text))


def scan_name(name: str) -> list[SecretFinding]:
    """A file name's likely secrets. A slug joins words with `-`, which the token rules take
    for part of a token (`deploy-ghp_…` is no `ghp_` token to them), so the name is read as it
    is and with every `-` as a space (the same offsets); each span is reported once."""
    found = scan(name)
    if "-" in name:
        spans = [(f.start, f.end) for f in found]
        found += [f for f in scan(name.replace("-", " "))
                  if not any(start < f.end and f.start < end for start, end in spans)]
    return sorted(found, key=lambda f: f.start)


def mask_name(name: str) -> str:
    """A file name with its secrets masked (`scan_name`): for every report and error."""
    return _masked(name, scan_name(name))


def _masked(text: str, findings: list[SecretFinding]) -> str:
    pieces: list[str] = []
    last = 0
    for finding in findings:
        pieces += [text[last : finding.start], finding.replacement]
        last = finding.end
    pieces.append(text[last:])
    return "".join(pieces)


def looks_secret(text: str) -> bool:
    return bool(scan(text))


def guard(fields: Mapping[str, str | Iterable[str] | None], allow: bool = False, *,
          files: bool = False) -> None:
    """The one secret guard for every door (docs/security.md): each named field of what is
    about to be written — a note's text, title, tags, subject, predicate, project; an
    episode's fields; an edited file; an imported file — is scanned, and the first field
    holding a secret is refused, naming it (`allow_secret` is the only override)."""
    if allow:
        return
    for name, value in fields.items():
        if value is None:
            continue
        listed = not isinstance(value, str)  # tags, steps, links: one item a line
        text = "\n".join(str(item) for item in value) if listed else value
        findings = scan(text)
        if findings:
            several = listed or "\n" in text
            shown = ", ".join(f"{f.kind} {f.masked}"
                              + (f" ({'item' if listed else 'line'} {f.line})" if several else "")
                              for f in findings[:3])
            # The field as the front end names it (`--tags`, MCP's `tags`), never "the tags
            # looks like"; a list's finding by its item, not a line of the list joined.
            # (`files`: the names are the paths of files an import would write, not options.)
            where = f"the file {name}" if files else "the text" if name == "text" else arg(name)
            raise MemctlError(
                f"{where} looks like it contains a secret: {shown}; the store is synced "
                f"through git, so it was not written. Remove the secret, or pass "
                f"{arg('allow_secret')} if it is not one")


def guard_files(files: Mapping[str, str], allow: bool = False) -> None:
    """`guard` for files about to be written by path (an import): each file's name is scanned
    as well as its text, and named masked (`deploy-ghp_…`), so a key in a zip entry's name is
    refused like one in its content (docs/security.md, tests/test_bundle.py)."""
    if allow:
        return
    for path in sorted(files):
        findings = scan_name(path)
        if findings:
            shown = ", ".join(f"{f.kind} {f.masked}" for f in findings[:3])
            raise MemctlError(
                f"the file name {mask_name(path)} looks like it contains a secret: {shown}; the "
                f"store is synced through git, so it was not written. Rename it, or pass "
                f"{arg('allow_secret')} if it is not one")
    guard({mask_name(path): text for path, text in sorted(files.items())}, allow, files=True)


def secret_keys(text: str) -> list[tuple[str, str]]:
    """The likely secrets of `text`, each by its kind and the secret itself (every key of a
    kind has one masked form, so the masked text does not tell two apart)."""
    return [(finding.kind, text[finding.start:finding.end]) for finding in scan(text)]


def added_secrets(before: str, after: str) -> list[SecretFinding]:
    """The likely secrets of `after` that `before` did not hold, each as many times as it
    held it (by kind and the secret itself: every key of a kind has one masked form): what
    an edit adds. A file that already held one (written with allow_secret, or by hand)
    stays editable; a new one, or one more copy of one, is refused (`memctl edit`,
    `memctl project edit`)."""
    held = Counter(secret_keys(before))
    added: list[SecretFinding] = []
    for finding in scan(after):
        key = (finding.kind, after[finding.start:finding.end])
        if held[key] > 0:
            held[key] -= 1
        else:
            added.append(finding)
    return added


def refuse_secrets(text: str, allow: bool = False) -> None:
    """Every write path's guard: the store travels through git remotes, so a key written once
    lives in every clone. The error shows only the masked form."""
    if allow:
        return
    findings = scan(text)
    if findings:
        shown = ", ".join(f"{f.kind} {f.masked} (line {f.line})" for f in findings[:3])
        raise MemctlError(
            f"the text looks like it contains a secret: {shown}; the store is synced through "
            f"git, so it was not written. Remove the secret, or pass {arg('allow_secret')} if "
            "it is not one"
        )


def name_findings(path: str) -> list[dict[str, object]]:
    """The likely secrets in a file's name (`scan_name`), as `carried` and `health` report
    them: line 0 (the name, not a line of the text), path and key masked. An import refuses
    such a name (`guard_files`), so what travels or is kept under one is named too."""
    return [{"path": mask_name(path), "line": 0, "kind": finding.kind,
             "masked": mask_name(path[finding.start:finding.end])}
            for finding in scan_name(path)]


def carried(files: Mapping[str, bytes]) -> list[dict[str, object]]:
    """The likely secrets in files about to leave this machine (`sync`, `export`): one entry
    per finding, `{"path", "line", "kind", "masked"}`, path masked too; a secret in the file's
    name has line 0 (`name_findings`). Only Markdown files."""
    found: list[dict[str, object]] = []
    for path, data in sorted(files.items()):
        if not path.endswith(".md"):
            continue
        found += name_findings(path)
        for finding in scan(data.decode("utf-8", "replace")):
            found.append({"path": mask_name(path), "line": finding.line,
                          "kind": finding.kind, "masked": finding.masked})
    return found


def masked_title(text: str, limit: int = 60) -> str:
    """Text for a commit message or a report line: one line, at most `limit` characters, any
    secret masked (a note written with allow_secret never shows its secret there)."""
    # Read as a name is (`mask_name`): `deploy-ghp_…` is a key there, not to the text's rules.
    text = " ".join(mask_name(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
