"""Text that looks like a credential (pure).

The store is synced through git remotes, so `add` refuses such text unless `--allow-secret`,
and `health` lists it. Findings never carry the secret itself: only a masked form that keeps
the recognisable prefix (`AKIA****`, `ghp_****`, `postgres://app:****@db`).

Patterns are deliberately specific (well-known key prefixes, PEM private key headers,
credentials inside URLs, `password=` in connection strings); obvious placeholders such as
`<password>`, `${DB_PASSWORD}`, `****` or `changeme` are not reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memctl.core.errors import MemctlError, arg


@dataclass(frozen=True)
class SecretFinding:
    kind: str  # aws-access-key, github-token, openai-key, slack-token, private-key, …
    masked: str  # the matched text with the secret part replaced by ****
    line: int  # 1-based line of the match in the scanned text
    start: int  # offsets of the secret part in the scanned text
    end: int


_PLACEHOLDERS = re.compile(
    r"^(?:[*x.•#-]+|<[^>]*>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%\(?[A-Za-z_]*\)?s?|\{\{?[^}]*\}\}?"
    r"|password|passwd|pass|pwd|secret|changeme|example|redacted|hidden|\.\.\.|…)$",
    re.IGNORECASE,
)

# (kind, pattern, group holding the secret part, characters of it kept visible)
_RULES: tuple[tuple[str, re.Pattern[str], int, int], ...] = (
    ("private-key",
     re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
                r"([\s\S]*?)(?:-----END [A-Z0-9 ]*-----|\Z)"), 1, 0),
    ("aws-access-key",
     re.compile(r"(?<![A-Z0-9])((?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16})"
                r"(?![A-Z0-9])"), 1, 4),
    ("aws-secret-key",
     re.compile(r"(?i)aws_?secret_?(?:access_?)?key\s*[\"']?\s*[:=]\s*[\"']?"
                r"([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"), 1, 0),
    ("github-token",
     re.compile(r"(?<![A-Za-z0-9_])(gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"),
     1, 4),
    ("openai-key",
     re.compile(r"(?<![A-Za-z0-9_-])(sk-(?:proj-|svcacct-|admin-|ant-)?[A-Za-z0-9_-]{20,})"), 1, 3),
    ("slack-token",
     re.compile(r"(?<![A-Za-z0-9-])(xox[abposr]-[A-Za-z0-9-]{10,})"), 1, 5),
    ("slack-webhook",
     re.compile(r"https://hooks\.slack\.com/services/(T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+)"), 1, 0),
    ("google-api-key",
     re.compile(r"(?<![A-Za-z0-9_-])(AIza[0-9A-Za-z_-]{35})(?![A-Za-z0-9_-])"), 1, 4),
    ("stripe-key",
     re.compile(r"(?<![A-Za-z0-9_])((?:sk|rk)_live_[A-Za-z0-9]{16,})"), 1, 8),
    ("url-password",
     re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s/:@]*:([^\s/@]+)@(?=\S)"), 1, 0),
    ("connection-string-password",
     re.compile(r"(?i)(?<![A-Za-z0-9_])(?:password|passwd|pwd)\s*=\s*[\"']?([^\s;\"',&]+)"), 1, 0),
    ("password-assignment",
     re.compile(r"(?i)(?<![A-Za-z0-9_])(?:password|passwd|pwd)\s*:\s*[\"']?"
                r"((?=[^\s;\"',]{6})[^\s;\"',]*[0-9!@#$%^&*_+=?/\\|~][^\s;\"',]*)"), 1, 0),
)


def _mask(secret: str, keep: int) -> str:
    return secret[:keep] + "****"


def scan(text: str) -> list[SecretFinding]:
    """Every likely secret in `text`, in order of position, each reported once."""
    findings: list[SecretFinding] = []
    taken: list[tuple[int, int]] = []
    for kind, rx, group, keep in _RULES:
        for match in rx.finditer(text):
            start, end = match.span(group)
            secret = match.group(group)
            if secret.strip() and _PLACEHOLDERS.match(secret.strip()):
                continue
            if any(start < t_end and t_start < end for t_start, t_end in taken):
                continue  # already reported by a more specific rule
            taken.append((start, end))
            whole_start, whole_end = match.span()
            if kind == "private-key":
                masked = "-----" + match.group(0).split("-----")[1] + "----- ****"
            else:
                masked = (
                    text[whole_start:start] + _mask(secret, keep) + text[end:whole_end]
                )
            findings.append(
                SecretFinding(kind, masked, text.count("\n", 0, whole_start) + 1, start, end)
            )
    findings.sort(key=lambda f: f.start)
    return findings


def mask_secrets(text: str) -> str:
    """`text` with the secret part of every finding replaced by its masked form."""
    keep = {kind: k for kind, _rx, _group, k in _RULES}
    out = text
    for finding in sorted(scan(text), key=lambda f: f.start, reverse=True):
        if finding.kind == "private-key":
            secret = "\n****\n"
        else:
            secret = _mask(out[finding.start : finding.end], keep[finding.kind])
        out = out[: finding.start] + secret + out[finding.end :]
    return out


def looks_secret(text: str) -> bool:
    return bool(scan(text))


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
