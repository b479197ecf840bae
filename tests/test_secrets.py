"""Secret detection: what `add` refuses and `health` lists, always masked."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.core.secrets import mask_secrets, scan

GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
OPENAI = "sk-proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2"
SLACK = "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"

CASES = [
    ("aws key AKIAIOSFODNN7EXAMPLE in the env", "aws-access-key", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws-secret-key",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    (f"token {GITHUB} for CI", "github-token", GITHUB),
    (f"OPENAI_API_KEY={OPENAI}", "openai-key", OPENAI),
    (f"bot token: {SLACK}", "slack-token", SLACK),
    ("DATABASE_URL=postgres://app:s3cr3t-Pw@db.internal:5432/blog", "url-password", "s3cr3t-Pw"),
    ("redis://:pa55word@cache:6379/0", "url-password", "pa55word"),
    ("Server=db;Database=blog;User Id=sa;Password=Hunter2!;", "connection-string-password",
     "Hunter2!"),
    ("password: Tr0ub4dor&3", "password-assignment", "Tr0ub4dor&3"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n"
     "-----END OPENSSH PRIVATE KEY-----", "private-key", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU"),
    ("数据库连接 mysql://root:MiMa2024@10.0.0.5/app 别提交", "url-password", "MiMa2024"),
]


@pytest.mark.parametrize(("text", "kind", "secret"), CASES)
def test_secrets_are_found_and_masked(text: str, kind: str, secret: str) -> None:
    findings = scan(text)
    assert [f.kind for f in findings] == [kind]
    assert secret not in findings[0].masked
    assert "****" in findings[0].masked
    masked = mask_secrets(text)
    assert secret not in masked
    assert "****" in masked


def test_the_recognisable_prefix_stays_visible() -> None:
    assert scan("AKIAIOSFODNN7EXAMPLE")[0].masked == "AKIA****"
    assert scan(GITHUB)[0].masked == "ghp_****"
    assert scan("postgres://app:s3cr3t@db/blog")[0].masked == "postgres://app:****@"


@pytest.mark.parametrize(
    "text",
    [
        "Use the AWS console to rotate keys",
        "postgres://app:${DB_PASSWORD}@db/blog",
        "postgres://app:<password>@db/blog",
        "https://example.com:8443/path and ssh://git@host:22/repo",
        "the password is stored in 1Password",
        "password: use the vault",
        "password: min-length 12",
        "sk-learn is not a key; ask-anything neither",
        "Public key: -----BEGIN PUBLIC KEY----- is fine",
        "数据库密码放在 vault 里，不要写进笔记",
    ],
)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert scan(text) == []
    assert mask_secrets(text) == text


def test_line_numbers_point_at_the_secret() -> None:
    text = "line one\nline two\nkey AKIAIOSFODNN7EXAMPLE\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\n"
    assert [(f.kind, f.line) for f in scan(text)] == [("aws-access-key", 3), ("private-key", 4)]


def test_each_secret_is_reported_once() -> None:
    # A GitHub token used as a URL password: one finding, by the more specific rule.
    findings = scan(f"https://me:{GITHUB}@github.com/org/repo.git")
    assert [f.kind for f in findings] == ["github-token"]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_masked_text_has_nothing_left_to_find(text: str) -> None:
    assert scan(mask_secrets(text)) == []


@pytest.mark.parametrize(("text", "kind", "secret"), CASES)
def test_masked_examples_have_nothing_left_to_find(text: str, kind: str, secret: str) -> None:
    assert scan(mask_secrets(text)) == []
    assert scan(mask_secrets("note: " + text + "\n" + text)) == []
