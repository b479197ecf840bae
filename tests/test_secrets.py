"""Secret detection: what `add` refuses and `health` lists, always masked."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from conftest import python_lines
from hypothesis import given, settings
from hypothesis import strategies as st

from memctl.core.errors import MemctlError
from memctl.core.secrets import SecretFinding, mask_secrets, refuse_secrets, scan, scan_name

REPO = Path(__file__).resolve().parent.parent


def _labelled() -> ModuleType:
    spec = importlib.util.spec_from_file_location("secrets_labelled", REPO / "tests" / "data" / "secrets_labelled.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LABELLED = _labelled()

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


def test_a_private_key_header_named_in_prose_takes_no_later_line_for_its_body() -> None:
    """A header named in a sentence made the next line of the note that held 16 letters and
    digits (a note id, a commit) or a lone word its "body": the whole note was refused, and
    masked from the header to its end."""
    for header in ("-----BEGIN PRIVATE KEY-----", "-----BEGIN RSA PRIVATE KEY-----",
                   "-----BEGIN OPENSSH PRIVATE KEY-----"):
        for text in (f"The file starts with {header} and ends with the END line.\n"
                     "See note 01m8p0b4rc7ecc6q; fixed in 3f786850e387550fdab836ed7e6dc881de23001b.\n",
                     f"A key file starts with {header}\n\nNever commit one.\n\nDone\n",
                     f"grep for {header} and for -----END PRIVATE KEY----- in the repo\nDone\n"):
            assert scan(text) == [], text
            assert mask_secrets(text) == text
    body = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7Qk"
    for text in (f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----\n",
                 f"-----BEGIN RSA PRIVATE KEY-----\r\n{body}\r\n-----END RSA PRIVATE KEY-----",
                 f"-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,"
                 f"3F2A\n\n{body}\n-----END RSA PRIVATE KEY-----",
                 f"KEY=-----BEGIN RSA PRIVATE KEY----- {body.replace(chr(10), ' ')} -----END RSA PRIVATE KEY-----",
                 f'"key": "-----BEGIN RSA PRIVATE KEY-----\\n{body.replace(chr(10), "")}\\n-----END"',
                 f"-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n{body}\n"):
        [finding] = scan(text)
        assert finding.kind == "private-key", text
        assert "MIIEowIBAAKCAQEA" not in mask_secrets(text) and "VTLw7onL" not in mask_secrets(text)


def test_a_private_key_quoted_commented_or_in_a_code_string_is_found() -> None:
    """Once a block's body had to start right after its header, a key whose lines start with
    `> ` (a Markdown quote), `# ` (a comment), or that is a string literal of code (`"…\\n"`
    closed on each line), and a JSON-escaped encrypted one, were written unrefused."""
    lines = ["MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
             "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK"]
    begin, end = "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----"
    texts = [
        "> " + "\n> ".join([begin, *lines, end]) + "\n",
        "# " + "\n# ".join([begin, *lines, end]) + "\n",
        'KEY = (' + "\n       ".join(f'"{line}\\n"' for line in [begin, *lines, end]) + ")\n",
        "const key = " + " +\n  ".join(f"'{line}\\n'" for line in [begin, *lines, end]) + ";\n",
        '{"key": "' + begin + "\\nProc-Type: 4,ENCRYPTED\\nDEK-Info: AES-128-CBC,3F2A\\n\\n"
        + "\\n".join(lines) + "\\n" + end + '"}',
    ]
    for text in texts:
        assert [f.kind for f in scan(text)] == ["private-key"], text
        assert "MIIEowIBAAKCAQEA" not in mask_secrets(text), text


def test_line_numbers_point_at_the_secret() -> None:
    text = ("line one\nline two\nkey AKIAIOSFODNN7EXAMPLE\n-----BEGIN RSA PRIVATE KEY-----\n"
            "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMx\n")
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


# --- the labelled set (tests/data/secrets_labelled.py) ------------------------------------------


def test_the_labelled_set_is_big_enough() -> None:
    assert len(LABELLED.SECRETS) >= 40 and len(LABELLED.NON_SECRETS) >= 60
    assert len({kind for _text, kind, _secret in LABELLED.SECRETS}) >= 20


@pytest.mark.parametrize(("text", "kind", "secret"), LABELLED.SECRETS,
                         ids=[f"{k}-{i}" for i, (_t, k, _s) in enumerate(LABELLED.SECRETS)])
def test_every_labelled_secret_is_found_once_and_masked(text: str, kind: str, secret: str) -> None:
    findings = scan(text)
    assert [f.kind for f in findings] == [kind]
    finding = findings[0]
    assert secret not in finding.masked and "****" in finding.masked
    assert finding.start < finding.end and finding.line == 1 + text.count("\n", 0, finding.start)
    masked = mask_secrets(text)
    assert secret not in masked and "****" in masked
    assert scan(masked) == []
    with pytest.raises(MemctlError) as refused:
        refuse_secrets(text)
    assert secret not in str(refused.value)


@pytest.mark.parametrize(("text", "why"), LABELLED.NON_SECRETS,
                         ids=[f"{w}-{i}" for i, (_t, w) in enumerate(LABELLED.NON_SECRETS)])
def test_no_labelled_non_secret_is_reported(text: str, why: str) -> None:
    assert scan(text) == [], why
    assert mask_secrets(text) == text
    refuse_secrets(text)


def test_the_labelled_texts_together_keep_their_findings_and_lines() -> None:
    """All the texts in one note, secrets and non-secrets interleaved: the same findings, on
    the lines of their secrets (evasions included: offsets refer to the original)."""
    lines: list[str] = []
    expected: list[tuple[str, int]] = []
    # (A private key header named in prose is among them: no later line is taken for its body.)
    for (text, kind, secret), (other, _why) in zip(LABELLED.SECRETS, LABELLED.NON_SECRETS, strict=False):
        lines += other.split("\n")
        header = text.find("-----BEGIN")  # a private key is reported on its header's line
        at = header if header >= 0 else text.find(secret)  # anything else on its secret's
        expected.append((kind, len(lines) + 1 + text.count("\n", 0, at)))
        lines += text.split("\n")
    note = "\n".join(lines)
    findings = scan(note)
    assert [(f.kind, f.line) for f in findings] == expected
    masked = mask_secrets(note)
    assert scan(masked) == []
    for _text, _kind, secret in LABELLED.SECRETS:
        assert secret not in masked


# --- evasions ---------------------------------------------------------------------------------


@pytest.mark.parametrize("space", ["\u200b", "\u200c", "\u200d", "\ufeff", "\u200e", "\u200f",
                                   "\u2062", "\u2064", "\u034f", "\u180e", "\ufe0f",
                                   "\U000e0041", "\u2066", "\u202e"])
def test_a_zero_width_character_inside_a_token_does_not_hide_it(space: str) -> None:
    text = f"first line\nCI uses {GITHUB[:9]}{space}{GITHUB[9:]} today"
    [finding] = scan(text)
    assert (finding.kind, finding.line, finding.masked) == ("github-token", 2, "ghp_****")
    assert text[finding.start : finding.end].replace(space, "") == GITHUB
    assert mask_secrets(text) == "first line\nCI uses ghp_**** today"


def test_a_pypi_token_is_found() -> None:
    token = "pypi-AgEIcHlwaS5vcmcCJDk4ZDhjMmU1LTNhYjQtNGVmNi1iZWQwLWQ2ZTk0NjY3MzUxMgACKlsz"
    [finding] = scan(f"publish with twine using {token} as the password")
    assert (finding.kind, finding.masked) == ("pypi-token", "pypi-****")
    assert scan("the pypi-AgE prefix of a token") == []


def test_full_width_characters_are_read_as_ascii() -> None:
    wide = "".join(chr(ord(c) + 0xFEE0) for c in "AKIAIOSFODNN7EXAMPLE")
    text = f"密钥（旧）：{wide}，已作废"
    [finding] = scan(text)
    assert (finding.kind, finding.masked) == ("aws-access-key", "AKIA****")
    assert text[finding.start : finding.end] == wide
    assert mask_secrets(text) == "密钥（旧）：AKIA****，已作废"


def test_url_encoded_secrets_are_decoded_and_masked_in_place() -> None:
    text = "line\nredirect=https%3A%2F%2Fbot%3AqW7eRt9yUi%40hooks.internal%2Fx done"
    [finding] = scan(text)
    assert (finding.kind, finding.line, finding.masked) == ("url-password", 2, "https://bot:****@")
    assert text[finding.start : finding.end] == "qW7eRt9yUi"
    assert "qW7eRt9yUi" not in mask_secrets(text)


def test_characters_that_expand_keep_offsets_right() -> None:
    """NFKC turns `…` into three characters and `ﬁ` into two: later offsets still point
    into the original text."""
    text = "……ﬁle… password: Hunter2!x …"
    [finding] = scan(text)
    assert text[finding.start : finding.end] == "Hunter2!x"
    assert mask_secrets(text) == "……ﬁle… password: **** …"


# --- command lines, Docker's config, more vendors, prose -----------------------------------------


def test_a_password_on_a_curl_command_line_is_found_not_a_reference_or_a_prompt() -> None:
    text = 'curl -sS -H "Accept: application/json" -u ci:Rt7kW2qLz9Xp https://ci.internal/api'
    [finding] = scan(text)
    assert (finding.kind, finding.masked) == ("curl-password", "-u ci:****")
    assert text[finding.start : finding.end] == "Rt7kW2qLz9Xp"
    assert [f.kind for f in scan("curl --proxy-user px:Rt7kW2qLz9Xp -x http://proxy:3128 https://a")] == [
        "curl-password"]
    for quiet in ("curl -u $USER:$TOKEN https://api.internal/", "curl -u deploy https://a.internal/",
                  "curl -u admin: https://localhost:9200/", "curl -u ci:ci https://ci.internal/",
                  'curl -u "ci:${CI_TOKEN}" https://ci.internal/', "docker run -u 1000:1000 img",
                  "curl https://a.internal/; docker run -u 1000:Rt7kW2qLz9Xp img",
                  "curl -fsS https://get.internal/x.sh | sudo -u deploy:Rt7kW2qLz9Xp sh"):
        assert scan(quiet) == [], quiet


def test_a_curl_user_option_at_the_end_of_grouped_short_options_is_found() -> None:
    """`-sSfu user:pass` is `-s -S -f -u user:pass` to curl: the password was missed unless
    `-u` stood alone."""
    for text, masked in (("curl -sSfu admin:hunter2 https://x.internal/", "-sSfu admin:****"),
                         ("curl -su deploy:Rt7kW2qLz9Xp https://x.internal/", "-su deploy:****"),
                         ("curl -fsSLku 'ci:Rt7kW2qLz9Xp' https://x.internal/", "-fsSLku 'ci:****"),
                         ("curl -sU px:Rt7kW2qLz9Xp -x http://proxy:3128 https://a", "-sU px:****"),
                         ("curl --user=deploy:Rt7kW2qLz9Xp https://x.internal/", "--user=deploy:****")):
        [finding] = scan(text)
        assert (finding.kind, finding.masked) == ("curl-password", masked), text
        assert "hunter2" not in mask_secrets(text) and "Rt7kW2qLz9Xp" not in mask_secrets(text)
    for quiet in ("curl -su user:pass https://x", "curl -sSfu $USER:$TOKEN https://x",
                  "curl -su deploy https://x", "curl -sSfo out:Rt7kW2qLz9Xp https://x",
                  "docker run -tiu 1000:Rt7kW2qLz9Xp img"):
        assert scan(quiet) == [], quiet


def test_a_password_on_a_registry_login_sshpass_or_redis_cli_command_line_is_found() -> None:
    """`docker login -u ci -p SECRET`, `sshpass -p SECRET` and `redis-cli -a SECRET` were
    written unrefused (only curl's and mysql's options were read)."""
    for text, kind, masked in (
            ("docker login -u ci -p Xk9mQ2vRt8zL registry.internal", "login-password", "-p ****"),
            ("podman login quay.io -u ci --password Xk9mQ2vRt8zL", "login-password", "--password ****"),
            ("helm registry login r.io -u ci -p 'Xk9mQ2vRt8zL'", "login-password", "-p '****"),
            ("sshpass -p 'Xk9mQ2vRt8zL' ssh -p 2222 deploy@host", "command-password", "-p '****"),
            ("redis-cli -h cache -p 6379 -a Xk9mQ2vRt8zL ping", "command-password", "-a ****")):
        [finding] = scan(text)
        assert (finding.kind, finding.masked) == (kind, masked), text
        assert "Xk9mQ2vRt8zL" not in mask_secrets(text)
    for quiet in ("docker login -u ci -p $CI_TOKEN r.io", "echo $PW | docker login -u ci --password-stdin r.io",
                  "docker run -p 8080:80 img; docker login r.io", "sshpass -f pwfile ssh -p 2222 host",
                  "redis-cli -a $REDIS_PASSWORD ping", "redis-cli --askpass", "ssh -p 2222 host login"):
        assert scan(quiet) == [], quiet


def test_an_option_of_the_command_after_and_and_is_not_the_login_s() -> None:
    """`&&` did not end a command as `;` and `|` do: the `-p` of the next command
    (`docker compose -p shop2026`, the project's name) was taken for the login's password."""
    for quiet in ("docker login -u ci --password-stdin r.io && docker compose -p shop2026 up -d",
                  "helm registry login r.io -u ci --password-stdin && helm push c.tgz -p proj42x",
                  "redis-cli ping && ls -a build2026"):
        assert scan(quiet) == [], quiet
    text = "cd /srv && docker login -u ci -p Xk9mQ2vRt8zL r.io && make deploy"
    assert [f.kind for f in scan(text)] == ["login-password"]


def test_the_p_of_the_command_sshpass_runs_is_not_its_password() -> None:
    """Every `-p` after `sshpass` on its line was read as its password: `sshpass -f pw ssh
    host "mkdir -p release2026"` was refused (the remote command's option)."""
    for quiet in ('sshpass -f ~/.pw ssh deploy@web1 "mkdir -p release2026"',
                  "sshpass -e ssh host ps -p 12345678", "sshpass -d 3 ssh host mkdir -p app_v2"):
        assert scan(quiet) == [], quiet
    for text in ("sshpass -p Xk9mQ2vRt8zL ssh host", "sshpass -v -pXk9mQ2vRt8zL ssh -p 22 h",
                 "sshpass -P 'assphrase' -p Xk9mQ2vRt8zL ssh host"):
        assert [f.kind for f in scan(text)] == ["command-password"], text


def test_a_password_attached_to_mysql_s_p_is_found_not_a_prompt_or_a_port() -> None:
    text = "mariadb-dump -h db -u backup -pQw8nZ3xLk2 shop | gzip > shop.sql.gz"
    [finding] = scan(text)
    assert (finding.kind, finding.masked) == ("mysql-password", "-p****")
    assert text[finding.start : finding.end] == "Qw8nZ3xLk2"
    for quiet in ("mysql -u root -p mydb", "mysql -p", "mysql -h db -P3306 -u app -p",
                  "psql -h db -p5432 -U app", "ssh -p2222 deploy@bastion", "mysql -uroot -p3306 app",
                  "mysql -uroot -p$MYSQL_PWD app", "mysqldump -u backup -p --all-databases",
                  "mysqldump -u app -p shop | ssh -pXk9mQ2vRt8 backup@host"):
        assert scan(quiet) == [], quiet


def test_a_docker_config_auth_is_decoded_and_found() -> None:
    import base64

    auth = base64.b64encode(b"robot$ci:Yh3vN8qTz1Lc").decode()
    text = ('{\n  "auths": {\n    "https://index.docker.io/v1/": {\n'
            f'      "auth": "{auth}"\n    }}\n  }}\n}}\n')
    [finding] = scan(text)
    assert (finding.kind, finding.masked, finding.line) == ("docker-auth", '"auth": "****"', 4)
    assert text[finding.start : finding.end] == auth
    assert auth not in mask_secrets(text)
    for decoded in (b"oauth2accesstoken", b"user:password", b"admin:admin", b"ci:"):
        quiet = f'{{"auths": {{"r.io": {{"auth": "{base64.b64encode(decoded).decode()}"}}}}}}'
        assert scan(quiet) == [], decoded
    assert scan(f'{{"auth": "{auth}"}}') == []  # no `"auths"`: not Docker's config


def test_a_kubernetes_dockerconfigjson_is_decoded_and_found() -> None:
    """An image pull secret holds Docker's config.json as base64: the `"auth"` (or the
    password) inside it was written unrefused, the base64 hiding the `"auths"` the Docker
    rule looks for."""
    import base64
    import json

    def encoded(config: object, **dumps: object) -> str:
        return base64.b64encode(json.dumps(config, **dumps).encode()).decode()  # type: ignore[arg-type]

    auth = base64.b64encode(b"robot$ci:Yh3vN8qTz1Lc").decode()
    with_auth = {"auths": {"registry.internal:5000": {"auth": auth}}}
    with_password = {"auths": {"ghcr.io": {"username": "ci", "password": "Yh3vN8qTz1Lc"}}}
    for value in (encoded(with_auth, separators=(",", ":")), encoded(with_auth),
                  encoded(with_password, indent=2), encoded(with_password, indent=4),
                  encoded(with_password, indent="\t")):
        for text in (f"apiVersion: v1\nkind: Secret\ntype: kubernetes.io/dockerconfigjson\n"
                     f"data:\n  .dockerconfigjson: {value}\n",
                     f'{{"data": {{".dockerconfigjson": "{value}"}}}}',
                     f"echo {value} | base64 -d"):
            [finding] = scan(text)
            assert finding.kind == "docker-auth", text
            assert text[finding.start : finding.end] == value
            assert value not in mask_secrets(text) and scan(mask_secrets(text)) == []
    # The legacy `.dockercfg` has no `"auths"`: found by its name only.
    legacy = encoded({"registry.internal": {"auth": auth, "email": "ci@example.com"}})
    [finding] = scan(f".dockercfg: {legacy}")
    assert (finding.kind, finding.masked) == ("docker-auth", ".dockercfg: ****")
    for config in ({"auths": {"ghcr.io": {}}, "credsStore": "desktop"},
                   {"auths": {"r.io": {"auth": base64.b64encode(b"user:password").decode()}}},
                   {"auths": {"r.io": {"username": "ci", "password": "${REGISTRY_PASSWORD}"}}},
                   {"registry": "docker.io"}):
        value = encoded(config, separators=(",", ":"))
        assert scan(f"  .dockerconfigjson: {value}\n") == [], config
        assert scan(value) == [], config


def test_an_npmrc_legacy_auth_is_decoded_and_found() -> None:
    """.npmrc's `_auth=` (base64 of user:password) was written unrefused."""
    import base64

    auth = base64.b64encode(b"deploy:Yh3vN8qTz1Lc").decode()
    for text in (f"//registry.internal/:_auth={auth}", f"_auth = \"{auth}\"\nalways-auth=true"):
        [finding] = scan(text)
        assert (finding.kind, text[finding.start : finding.end]) == ("npm-auth", auth), text
        assert auth not in mask_secrets(text)
    for decoded in (b"user:password", b"deploy", b"ci:ci"):
        assert scan(f"//r.io/:_auth={base64.b64encode(decoded).decode()}") == [], decoded
    assert scan("_auth=${NPM_AUTH}") == []


@pytest.mark.parametrize(("token", "kind", "masked"), [
    ("dop_v1_" + "3f9a0c7e1b2d4f6a8c0e2b4d6f8a1c3e" * 2, "digitalocean-token", "dop_v1_****"),
    ("doo_v1_" + "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b" * 2, "digitalocean-token", "doo_v1_****"),
    ("dor_v1_" + "0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d" * 2, "digitalocean-token", "dor_v1_****"),
    ("shpat_" + "4f8c2a9e1d7b3c5a6e0f2b8d9c1a7e3f", "shopify-token", "shpat_****"),
    ("shpss_" + "b7e3a1c9d5f2e8a4c6b0d3f7e1a9c5b2", "shopify-token", "shpss_****"),
    ("lin_api_" + "Kq3ZxW8vN1pLr5TyB7mC2dF9gH4jS6aE0uIoQwEr", "linear-api-key", "lin_api_****"),
], ids=["dop", "doo", "dor", "shpat", "shpss", "lin_api"])
def test_more_vendor_tokens_are_found(token: str, kind: str, masked: str) -> None:
    [finding] = scan(f"deploy uses {token} since Monday")
    assert (finding.kind, finding.masked) == (kind, masked)
    assert scan(f"deploy uses {token[:-1]} since Monday") == []  # one character short
    prefix = masked[:-4]
    assert scan(f"{prefix} tokens look like {prefix}{'x' * (len(token) - len(prefix))}") == []


def test_a_telegram_bot_token_is_found_with_its_bot_id_shown() -> None:
    token = "AAFx3kQ9Zp_Lm2Vw8Rt-Yc4Nb7Hd1Gj5Ksq"
    text = f"curl https://api.telegram.org/bot7012345678:{token}/getUpdates"
    [finding] = scan(text)
    assert (finding.kind, finding.masked) == ("telegram-bot-token", "7012345678:AA****")
    assert text[finding.start : finding.end] == token
    assert scan(f"7012345678:{token[:-1]}") == []  # one character short
    assert scan("chat id -1001234567890, bot id 7012345678, token <bot id>:AA…") == []


def test_a_password_in_prose_is_found_only_when_it_looks_like_one() -> None:
    for text, secret in (("the wifi password is Gx7pQ2mLk9!", "Gx7pQ2mLk9!"),
                         ("Password is: 'Zt4QmX9pLw' for now.", "Zt4QmX9pLw"),
                         ("数据库密码是：Db2026prodX，不要外传", "Db2026prodX"),
                         ("密码为 Rk8vT3nQ", "Rk8vT3nQ")):
        [finding] = scan(text)
        assert finding.kind == "password-in-prose" and text[finding.start : finding.end] == secret
        assert secret not in mask_secrets(text)
    for quiet in ("the password is stored in vault", "password is required", "密码是必填项",
                  "the password is in 1Password", "the password is 1Password",
                  "set the password is `<redacted>`", "the password is 2FA-protected",
                  "the password is correcthorsebatterystaple", "the password is $DB_PASSWORD",
                  "the password is 12345678", "the password is sha256-hashed",
                  "the password is `changeme`", "your password is too short, try again"):
        assert scan(quiet) == [], quiet


def test_a_quoted_password_with_spaces_is_found_and_masked_whole() -> None:
    """A quoted value was cut at its first space: `password: 'correct horse battery staple'`
    and `密码是 "abc def"` were written unrefused, and "the password is "Tr0ub4dor & 3 x""
    masked `Tr0ub4dor` only, leaving the rest of the password in the note."""
    for text, secret, kind in (
            ("password: 'correct horse battery staple'", "correct horse battery staple",
             "password-assignment"),
            ('db:\n  password: "Tr0ub4dor & 3"\n', "Tr0ub4dor & 3", "password-assignment"),
            ('{"user": "ci", "password": "hunter two three"}', "hunter two three", "password-assignment"),
            ("the password is 'correct horse battery staple'", "correct horse battery staple",
             "password-in-prose"),
            ('the password is "Tr0ub4dor & 3 x", for now', "Tr0ub4dor & 3 x", "password-in-prose"),
            ('密码是 "abc def"', "abc def", "password-in-prose"),
            ("测试库的密码是“Xk9 mQ2 vRt”，别外传", "Xk9 mQ2 vRt", "password-in-prose")):
        [finding] = scan(text)
        assert (finding.kind, text[finding.start : finding.end]) == (kind, secret), text
        masked = mask_secrets(text)
        assert all(word not in masked for word in secret.split() if len(word) > 3), masked
        assert scan(masked) == []
    for quiet in ('password: "use the vault"', "the password is 'too short'",
                  'secret: "top secret stuff"', '"token": "Bearer <token>"',
                  "password: 'it is in 1Password'", 'password: "Change Me Later"',
                  'the password is "N/A"', 'password: "<your password here>"',
                  "password: 'correct horse\nbattery staple'", 'my password is "my secret"',
                  'the password is "2FA-protected"', 'password_hint: "first pet name"'):
        assert scan(quiet) == [], quiet


def test_a_quoted_placeholder_with_a_space_is_no_password() -> None:
    """`changeme` written with a space (`password: "CHANGE ME"`, the stand-in of countless
    config samples) was read whole as a two-word passphrase and refused; "Change Me Later"
    was quiet only for its word "later"."""
    for quiet in ('password: "CHANGE ME"', "DB_PASSWORD='change me'",
                  'the password is "Change Me"', 'api_token: "change me 123"'):
        assert scan(quiet) == [], quiet
    assert [f.kind for f in scan("password: 'change horse battery'")] == ["password-assignment"]


def test_a_netrc_password_is_found_on_one_line_or_across_lines() -> None:
    """A .netrc entry (`machine HOST login USER password SECRET`, what curl, git and ftp
    read) was written unrefused: its password has no `=` or `:` for the assignment rule."""
    for text, line in (("machine api.example.com login deploy password Xk9mQ2vRt8zL", 1),
                       ("# ~/.netrc\nmachine api.example.com\n  login deploy\n  password Xk9mQ2vRt8zL\n", 4),
                       ("machine git.internal login ci account ops password 'Xk9mQ2vRt8zL'", 1),
                       ("default login deploy password Xk9mQ2vRt8zL", 1),
                       ("machine db1 password Xk9mQ2vRt8zL", 1)):
        [finding] = scan(text)
        assert (finding.kind, finding.line) == ("netrc-password", line), text
        assert finding.masked.endswith("password ****") and "\n" not in finding.masked, finding.masked
        assert "Xk9mQ2vRt8zL" not in mask_secrets(text) and scan(mask_secrets(text)) == []
    assert scan("machine api.example.com login deploy password Xk9mQ2vRt8zL")[0].masked == (
        "machine api.example.com login deploy password ****")
    # each entry of a file, the one before with no password at all
    entries = ("machine a.io login u password\nmachine b.io login v password Qw8nZ3xLk2Rt\n"
               "machine c.io login w password Xk9mQ2vRt8zL\n")
    assert [f.line for f in scan(entries)] == [2, 3]
    for quiet in ("machine api.example.com login deploy password $NETRC_TOKEN",
                  "machine api.example.com login deploy password ${NETRC_PASSWORD}",
                  "machine ci.internal login ci password $(pass show ci/netrc)",
                  "machine h login u password <your-token>", "machine h login deploy password deploy",
                  "default login anonymous password ftp@example.com",
                  "the build machine uses password authentication",
                  "machine learning password strength estimators", "default password policy Tr0ub4dor",
                  "machine h login u password: see the vault",
                  "machine h login u\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n  password Xk9mQ2vRt8zL"):
        assert scan(quiet) == [], quiet


def test_an_oracle_connect_string_s_password_is_found() -> None:
    """Oracle's `user/password@connect` (a JDBC URL, sqlplus, expdp, rman, sqlldr's userid=,
    cx_Oracle's connect) was written unrefused: it is no URL and has no `:` before the
    password."""
    for text, masked in (
            ("jdbc:oracle:thin:scott/Tiger2024x@db:1521/ORCL", "jdbc:oracle:thin:scott/****@"),
            ("spring.datasource.url=jdbc:oracle:thin:app/Tiger2024x@//db.internal:1521/svc",
             "jdbc:oracle:thin:app/****@"),
            ("JDBC:ORACLE:OCI:app/Tiger2024x@prod", "JDBC:ORACLE:OCI:app/****@"),
            ("sqlplus scott/Tiger2024x@ORCL", "scott/****@"),
            ("sqlplus -s app/Tiger2024x@//db:1521/svc @report.sql", "app/****@"),
            ('sqlplus "sys/Tiger2024x@ORCL as sysdba"', "sys/****@"),
            ("expdp system/Tiger2024x@pdb1 directory=dp dumpfile=full.dmp", "system/****@"),
            ("sqlldr userid=app/Tiger2024x@orcl control=load.ctl", "app/****@"),
            ('con = cx_Oracle.connect("app/Tiger2024x@db:1521/orcl")', "app/****@"),
            ("SQL> connect sys/Tiger2024x@ORCL as sysdba", "sys/****@")):
        [finding] = scan(text)
        assert (finding.kind, finding.masked) == ("oracle-password", masked), text
        assert text[finding.start : finding.end] == "Tiger2024x"
        assert "Tiger2024x" not in mask_secrets(text) and scan(mask_secrets(text)) == []
    both = scan("rman target sys/Tiger2024x@prod catalog rco/Qw8nZ3xLk2@cat")
    assert [f.masked for f in both] == ["sys/****@", "rco/****@"]
    for quiet in ("jdbc:oracle:thin:scott/<password>@db:1521/ORCL",
                  "jdbc:oracle:thin:scott/${DB_PASSWORD}@db:1521/ORCL",
                  "jdbc:oracle:thin:@//db.internal:1521/ORCL", "jdbc:oracle:thin:@db:1521:ORCL",
                  "sqlplus scott/tiger@ORCL", "sqlplus system/$ORACLE_PWD@XE", "sqlplus / as sysdba",
                  "sqlplus scott@ORCL", "sqlplus -s /nolog @scripts/run2024.sql",
                  "sqlplus app/app@ORCL", "sqlldr userid=app control=loads/data2024.ctl log=logs/run2024@x.log",
                  "git push origin feature/fix2024@{u}", "see release/v2024x@host in the wiki",
                  "expdp dumps go to exports/full2024@nas"):
        assert scan(quiet) == [], quiet


AGE_KEY = "AGE-SECRET-KEY-1" + "GFPYYSJZ3KTXQ2W8NDHL9MCVR6U5E7A0P4S" + "QZG8JXLNRWD3T5HY9KE2MCU"


def test_an_age_secret_key_is_found() -> None:
    """An age identity (`AGE-SECRET-KEY-1` and 58 bech32 characters, what `age-keygen` writes
    and SOPS_AGE_KEY holds) was written unrefused: no rule knew its prefix, and `age` is a
    word that makes `SOPS_AGE_KEY=` no secret's name."""
    assert len(AGE_KEY) == 74
    keyfile = ("# created: 2026-12-01T10:00:00Z\n"
               "# public key: age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p\n"
               f"{AGE_KEY}\n")
    for text, line in ((keyfile, 3), (f"SOPS_AGE_KEY={AGE_KEY}", 1), (f"export SOPS_AGE_KEY='{AGE_KEY}'", 1),
                       (f"the sops key is {AGE_KEY[:30]}\u200b{AGE_KEY[30:]}", 1)):
        [finding] = scan(text)
        assert (finding.kind, finding.masked, finding.line) == ("age-secret-key", "AGE-SECRET-KEY-1****", line), text
        assert AGE_KEY[16:] not in mask_secrets(text) and scan(mask_secrets(text)) == []
    [named] = scan_name(f"deploy-{AGE_KEY}.md")
    assert named.kind == "age-secret-key"
    for quiet in ("age identities start with AGE-SECRET-KEY-1, recipients with age1",
                  "AGE-SECRET-KEY-1" + "Q" * 58, AGE_KEY[:-1], AGE_KEY + "Q",
                  AGE_KEY[:40] + "B" + AGE_KEY[41:], AGE_KEY.lower(),
                  "recipient: age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"):
        assert scan(quiet) == [], quiet


def test_a_twilio_auth_token_named_without_its_account_sid_is_found() -> None:
    """A Twilio auth token (32 hex) was found only after its `AC…` account sid: "twilio auth
    token 9f8e…" and "the Twilio auth token is 9f8e…" were written unrefused. A 32-hex value
    right after the words (only `is`, `:`, `=` or a quote between) is now one; a bare 32-hex
    value (an MD5, a request id) never is."""
    token = "9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c"
    for text, masked in ((f"twilio auth token {token}", "twilio auth token ****"),
                         (f"the Twilio auth token is {token} (prod)", "Twilio auth token is ****"),
                         (f"Twilio Auth Token: {token}", "Twilio Auth Token: ****"),
                         (f"TWILIO_AUTH_TOKEN {token}", "TWILIO_AUTH_TOKEN ****"),
                         (f"TWILIO_AUTH_TOKEN={token}", "TWILIO_AUTH_TOKEN=****"),
                         (f'twilioAuthToken: "{token}"', 'twilioAuthToken: "****'),
                         (f"Twilio's auth token = '{token}'", "Twilio's auth token = '****")):
        [finding] = scan(text)
        assert (finding.kind, finding.masked) == ("twilio-auth-token", masked), text
        assert text[finding.start : finding.end] == token
        assert token not in mask_secrets(text) and scan(mask_secrets(text)) == []
    for quiet in (f"md5 {token} of the release tarball", f"request id {token} in the twilio logs",
                  f"the twilio auth token lives in 1Password; request {token} failed",
                  f"twilio-python wheel md5 {token}", f"twilio auth token rotated in {token}",
                  "twilio auth token: 00000000000000000000000000000000",
                  f"twilio auth token {token}0", f"twilio auth token {token.upper()}",
                  "twilio auth token: <your-auth-token>", "Twilio auth tokens are 32 hex characters",
                  f"twilio message SM{token} delivered", f"twilio auth token{token}"):
        assert scan(quiet) == [], quiet


def test_findings_keep_the_public_fields() -> None:
    [finding] = scan("key AKIAIOSFODNN7EXAMPLE")
    assert isinstance(finding, SecretFinding)
    assert (finding.kind, finding.masked, finding.line, finding.start, finding.end) == (
        "aws-access-key", "AKIA****", 1, 4, 24)


# --- the samples shipped with memctl and a generated store: nothing to report ------------------


def _memory_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".md", ".toml", ""))


def test_the_sample_memory_has_no_secret() -> None:
    files = _memory_files(Path(__file__).parent.parent / "sample_memory")
    assert len(files) > 30
    found = {str(p): scan(p.read_text(encoding="utf-8")) for p in files}
    assert {path: f for path, f in found.items() if f} == {}


def test_a_generated_store_has_no_secret(tmp_path: Path) -> None:
    out = tmp_path / "store"
    subprocess.run([sys.executable, str(REPO / "bench" / "gen_corpus.py"), str(out), "500"],
                   check=True, capture_output=True, timeout=120)
    files = _memory_files(out)
    assert len(files) >= 500
    found = {str(p): scan(p.read_text(encoding="utf-8")) for p in files}
    assert {path: f for path, f in found.items() if f} == {}


# --- linear time ------------------------------------------------------------------------------

# Each an expression of `scale` (and `line`, 900 KB of base64 characters).
HOSTILE_CASES = (
    '"pwd:" * 20_000 * scale', '"a" * 1_000_000 * scale', '"password=" * 20_000 * scale',
    "line * scale", '"key" * 100_000 * scale', '"eyJ" * 100_000 * scale',
    '"x://a:" * 50_000 * scale', '"-----BEGIN RSA PRIVATE KEY-----\\n" * 10_000 * scale',
    '"%3D" * 100_000 * scale', '"密码：……" * 50_000 * scale',
    '("AC" + "0123456789abcdef" * 2 + " token ") * 10_000 * scale',
    '"AKIAIOSFODNN7EXAMPLE password=Hunter2! https://a:Pw9x@h " * 2_000 * scale',
    '"curl -u " * 50_000 * scale', '"curl " + "-u a" * 50_000 * scale',
    '"curl " + " -sSfLk" * 50_000 * scale', '"curl " + " -sSfu a:" * 50_000 * scale',
    '"mysql -p" * 50_000 * scale', "\"mysql \" + \" -p'\" * 50_000 * scale",
    '"docker login -p " * 50_000 * scale', '"sshpass -p " * 50_000 * scale',
    '"redis-cli -a " * 50_000 * scale',
    "'\"auths\" \"auth\": \"' * 30_000 * scale",
    "'\"auths\" \"auth\": \"' + \"QUFB\" * 100_000 * scale",
    "'\"auths\" ' + '\"auth\"\\r\\n :\\n ' * 50_000 * scale",
    '".dockerconfigjson: " * 50_000 * scale', '"_auth=" * 100_000 * scale',
    '"eyJhdXRocyI6" * 100_000 * scale', '".dockercfg: eyJhdXRocyI6" + "QUFB" * 100_000 * scale',
    '"123456789:AA" * 50_000 * scale', '"the password is " * 30_000 * scale',
    '"password is " + "Ab1." * 100_000 * scale',
    "'the password is \"' * 30_000 * scale", '"密码是“" + "ab " * 100_000 * scale',
    "\"password: '\" + \"ab \" * 100_000 * scale", "\"password: 'a b' \" * 30_000 * scale",
    "\"password: '\" * 50_000 * scale", "'token: \"Xk9mQ2vLp7zR\\n' * 30_000 * scale",
    '"密码是" * 100_000 * scale',
)
HOSTILE_GROUP = 6  # cases per child process: each group well inside its timeout on a busy machine


def _hostile_script(cases: tuple[str, ...]) -> str:
    return ("import random, string\n"
            "from memctl.core.secrets import mask_secrets\n"
            "rng = random.Random(7)\n"
            "b64 = string.ascii_letters + string.digits + '+/'\n"
            "line = ''.join(rng.choice(b64) for _ in range(900_000))\n"
            "for scale in (1, 4):\n"
            f"    for text in ({', '.join(cases)},):\n"
            "        mask_secrets(text)\n"
            "print('done')\n")


@pytest.mark.parametrize("first", range(0, len(HOSTILE_CASES), HOSTILE_GROUP))
def test_hostile_inputs_scan_in_linear_time(first: int) -> None:
    """A quadratic pattern takes minutes on these (80 KB of `pwd:` took 25 s before, and the
    whole set over a minute); each runs at its size and at 4x, a few seconds a group. No
    wall-time assertion beyond a generous timeout: the figures are in
    bench/bench_secrets.py."""
    script = _hostile_script(HOSTILE_CASES[first:first + HOSTILE_GROUP])
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=60, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "done"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(
    "ab=_ 1\n数据库使用，；。：…ﬁＡＫＩＡ\u200b\u00ad\ufeff\u0301é\u2028%") | st.characters(), max_size=40))
def test_the_scanned_view_is_the_nfkc_of_each_character(text: str) -> None:
    """The view a scan reads (`_normalised`) is the text with each character replaced by its
    NFKC form, however it is reached: the shortcuts for text already in that form (a long
    Chinese document) and for forms of one character each give what the tables give."""
    from memctl.core import secrets

    view = secrets._normalised(text)
    assert view.text == text.translate(secrets._NFKC)
    # Offsets are mapped back exactly where some character's form is not one character.
    assert bool(view.maps) == ("\x01" in text.translate(secrets._RESIZE))


def test_a_text_without_any_rule_s_hint_compiles_no_rule() -> None:
    """The rules' expressions are compiled when a text holds one of their hints (`memctl
    add` imports the scanner for every note; most hold none: ~8 ms of start-up)."""
    script = ("from memctl.core import secrets\n"
              "secrets.guard({'text': 'the gateway timeout is 30 s'})\n"
              "print(sum(rule.rx._compiled is not None for rule in secrets._RULES))\n"
              "print([f.kind for f in secrets.scan('ghp_aB3dE5gH7jK9mN1pQ3rS5tU7vW9xY1zA2bC4')])\n"
              "print(sum(rule.rx._compiled is not None for rule in secrets._RULES))\n")
    assert python_lines(script) == ["0", "['github-token']", "1"]


def test_the_sha256_without_openssl_is_hashlib_s() -> None:
    import hashlib

    from memctl.core.hashing import sha256

    for data in (b"", b"abc", "数据库".encode() * 1000):
        assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()


# --- a project's name: a folder name, so never a secret --------------------------------------

_NAME_RUN = "[^\\s/\\\\:=\"'@,;()\\[\\]{}<>?&]+"  # what could be typed as one project name


def test_every_labelled_key_that_could_be_a_project_name_is_refused_as_one() -> None:
    """`arguments.project_name` scans only a name of SHORTEST_NAME_SECRET characters or more
    holding a digit or a capital: every piece of a labelled text that is a project name and
    in which the scanner finds a secret is refused (so the shortcut skips no key shape), and
    the error shows it masked only."""
    import re
    import unicodedata

    from memctl.core.arguments import project_name
    from memctl.core.errors import ArgumentError
    from memctl.core.vocab import valid_project_name

    texts = [text for text, _kind, _secret in LABELLED.SECRETS]
    texts += [text for text, _why in LABELLED.NON_SECRETS] + [text for text, _k, _s in CASES]
    checked = 0
    # Each key also after a word and a `-`, as a folder or slug would carry it
    # (`deploy-ghp_…`: no token to the scanner's rules until the `-` is read as a space).
    runs = [run for text in texts for run in re.findall(_NAME_RUN, text)]
    runs += [f"deploy-{run}" for run in runs]
    for run in runs:
        name = unicodedata.normalize("NFC", run)
        if not valid_project_name(name) or not scan_name(name):
            continue
        checked += 1
        with pytest.raises(ArgumentError, match="looks like a secret") as refused:
            project_name(name)
        assert name not in str(refused.value), name
    assert checked >= 30  # the token shapes, alone and after `deploy-`: AWS, GitHub, GitLab, npm, Slack, Stripe, JWT, …
    for name in ("blog-backend", "my-company-blog-backend", "项目-2026", "AKIAIOSFODNN7EXAMPL"):
        assert project_name(name) == name


def test_what_an_edit_adds_is_told_by_the_secret_itself_not_its_masked_form() -> None:
    """Every key of a kind has one masked form (`AKIA****`): compared by it, an edit could
    add any number of new keys beside one the file held."""
    from memctl.core.secrets import added_secrets

    held, new = "AKIAIOSFODNN7EXAMPLE", "AKIAJQWERTYUIOPASDFG"
    assert added_secrets(f"key {held}\n", f"key {held}\n") == []
    assert added_secrets(f"key {held}\n", f"moved\nkey {held}\n") == []
    [added] = added_secrets(f"key {held}\n", f"key {held}\nkey {new}\n")
    assert added.line == 2 and added.kind == "aws-access-key"
    [again] = added_secrets(f"key {held}\n", f"key {held}\nkey {held}\n")  # one more copy
    assert again.line == 2


def test_a_quoted_phrase_naming_where_a_password_lives_is_no_password() -> None:
    """Once quoted values were read whole, any two words quoted after `password:` were a
    passphrase: config values saying how one signs in or where the password is kept
    (`password: 'via OIDC'`, "prod db creds", 'Team Drive') were refused. Words in lower
    case, none naming such a place, still are."""
    for quiet in ("password: 'via OIDC'", "password: 'Okta SSO login'",
                  'password: "prod db creds"', "password: 'Team Drive'",
                  "password: 'Ops Team Lead'", "token: 'GitHub Actions OIDC'",
                  "the password is 'Jenkins credentials store'",
                  'password: "Admin Console > Settings"'):
        assert scan(quiet) == [], quiet
    for found in ("password: 'purple monkey dishwasher'", 'the password is "Tr0ub4dor & 3"'):
        assert len(scan(found)) == 1, found


def test_a_reference_ending_a_sentence_is_no_password() -> None:
    """A reference followed by the sentence's full stop or comma (`password $GITHUB_TOKEN.`)
    was read as a password: a .netrc line in a README, `DB_PASSWORD=$DB_PASS.`, `docker
    login -p $CI_TOKEN, then push` were refused."""
    for quiet in ("For GitHub use machine github.com login oauth2 password $GITHUB_TOKEN.",
                  "machine api.example.com login bot password $API_TOKEN, then run curl",
                  "Set DB_PASSWORD=$DB_PASS.", "curl -u admin:$ADMIN_PW.",
                  "docker login -u ci -p $CI_TOKEN, then push", "sshpass -p $SSHPASS_PW, then ssh",
                  "redis-cli -a $REDIS_PW.", "sqlplus app/$APP_PW.@ORCL"):
        assert scan(quiet) == [], quiet
    for text in ("machine h login bot password Xk9mQ2vRt8zL.", "DB_PASSWORD=Xk9mQ2vRt8zL.",
                 "docker login -u ci -p Xk9mQ2vRt8zL, then push"):
        assert len(scan(text)) == 1, text


def test_an_option_later_on_a_login_s_line_is_not_its_password_unless_among_its_arguments() -> None:
    """Any `-p` after `docker login` on its line was read as the login's password: "Run
    docker login ghcr.io first, then docker compose -p webshop2026 up -d." (prose, the
    project's name) was refused. Only a `-p` among the login's own arguments (its registry,
    options and their values) is now read."""
    for quiet in ("Run docker login ghcr.io first, then docker compose -p webshop2026 up -d.",
                  "After `docker login ghcr.io`, run `docker compose -p webshop2026 up -d`.",
                  "docker login r.io & docker compose -p webshop2026 up -d",
                  "Run docker login -u ci first, then docker compose -p webshop2026 up",
                  "helm registry login r.io then helm install -p release2026"):
        assert scan(quiet) == [], quiet
    for text in ("docker login -u ci r.io -p Xk9mQ2vRt8zL",
                 "podman login --tls-verify=false --authfile a.json -u ci r.io --password Xk9mQ2vRt8zL",
                 "sudo docker --config /tmp/c login -u ci -p Xk9mQ2vRt8zL r.io",
                 "helm registry login r.io --username ci --password=Xk9mQ2vRt8zL"):
        assert [f.kind for f in scan(text)] == ["login-password"], text


def test_an_option_on_a_continued_line_is_read_as_part_of_its_command() -> None:
    """A command split over lines ending in `\\` (as READMEs and CI files write a long one)
    was read one line at a time: `curl -sS \\` then `  -u admin:SECRET` had no curl on the
    password's line, and the password was written unrefused (docker login, sshpass, redis-cli
    and mysql the same). The lines a `\\` continues are now read as one command."""
    for text, kind in (("curl -sS \\\n  -u admin:Xk9mQ2vRt8zL \\\n  https://ci.internal/api", "curl-password"),
                       ("curl -X POST https://x \\\r\n\t-H 'Accept: json' \\\r\n\t-u admin:Xk9mQ2vRt8zL\r\n",
                        "curl-password"),
                       ("docker login \\\n  -u ci \\\n  -p Xk9mQ2vRt8zL r.io", "login-password"),
                       ("sshpass \\\n  -p Xk9mQ2vRt8zL ssh deploy@host", "command-password"),
                       ("redis-cli -h cache \\\n    -a Xk9mQ2vRt8zL ping", "command-password"),
                       ("mysql -h db \\\n  -u app -pXk9mQ2vRt8zL app", "mysql-password")):
        assert [f.kind for f in scan(text)] == [kind], text
        assert "Xk9mQ2vRt8zL" not in mask_secrets(text)
    # a line not continued still ends its command
    for quiet in ("docker login r.io\ndocker compose \\\n  -p webshop2026 up",
                  "curl https://x\nscp -u admin:Xk9mQ2vRt8zL host:/tmp",
                  'sshpass -f pw ssh host \\\n  "mkdir -p release2026"'):
        assert scan(quiet) == [], quiet


def test_a_private_key_sample_with_a_filler_body_is_no_key() -> None:
    """A config sample whose key body is a run of one character (`XXXX…` under the header,
    as docs write where the key goes) was refused as a private key."""
    for quiet in ("-----BEGIN PRIVATE KEY-----\nXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX\n-----END PRIVATE KEY-----",
                  '"pem": "-----BEGIN RSA PRIVATE KEY-----\\nAAAAAAAAAAAAAAAAAAAAAAAA\\n-----END RSA PRIVATE KEY-----"'):
        assert scan(quiet) == [], quiet
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n-----END OPENSSH PRIVATE KEY-----"
    assert [f.kind for f in scan(key)] == ["private-key"]


def test_oracle_s_short_command_names_count_only_where_a_command_starts() -> None:
    """`exp`, `imp`, `sql` and `connect` are words of prose too: "exp cifar10/ResNet50@epoch90"
    (an experiment) was refused as an Oracle logon. Those names now count where a command
    starts (the line's start, a prompt, a backtick, after `;`, `|` or `&&`)."""
    for quiet in ("Best run: exp cifar10/ResNet50@epoch90 reached 94%",
                  "npm i exp hello/World2024@next",
                  "pip install imp fixtures/TestData2024@latest",
                  "We ran the sql migrations/AddUsers2024@HEAD script",
                  "then connect repo/Proj2024@v1 to the board"):
        assert scan(quiet) == [], quiet
    for found in ("exp scott/Tiger2024x@ORCL file=x.dmp", "$ exp -x scott/Tiger2024x@ORCL",
                  "SQL> connect scott/Tiger2024x@ORCL", "cd /tmp; imp scott/Tiger2024x@ORCL",
                  "`sql scott/Tiger2024x@ORCL`", "sqlplus -s scott/Tiger2024x@ORCL"):
        assert [f.kind for f in scan(found)] == ["oracle-password"], found


def test_a_quote_escaped_inside_a_quoted_password_is_part_of_it() -> None:
    """`{"password": "Tr0ub4dor \\" & 3 x"}` was masked up to the escaped quote, leaving
    `& 3 x` of the password in the note's masked text (and its file name), and
    `{"password": "Xk9\\"mQ2vLp7z"}` was not found at all: the value was cut at `\\"`."""
    for text in ('{"password": "Tr0ub4dor \\" & 3 x"}', '{"password": "Xk9\\"mQ2vLp7z"}'):
        [finding] = scan(text)
        assert mask_secrets(text) == '{"password": "****"}', mask_secrets(text)
    for quiet in ("password: 'it\\'s fine'", '{"password": "C:\\\\dir\\\\", "x": 1}'):
        assert scan(quiet) == [], quiet


def test_a_quoted_rule_for_passwords_or_an_instruction_is_no_password() -> None:
    """Any digit, or any lower-case phrase, made a quoted value a passphrase: the rule
    `password: 'min 12 chars'` or the instruction "press enter" was refused."""
    for quiet in ("password: 'min 12 chars'", 'password: "12 characters minimum"',
                  'password: "8-64 chars"', "password: 'press enter'",
                  'password: "slack pinned message"', "password: 'ping devops'",
                  'password: "printed inside lid"'):
        assert scan(quiet) == [], quiet


def test_a_password_on_a_windows_command_or_in_sshpass_s_variable_is_found() -> None:
    """`curl.exe -u`, `docker.exe login -p`, `redis-cli.exe -a` and `mysql.exe -p` (as
    PowerShell notes write them) were read as no such command, and `SSHPASS=…` (what
    `sshpass -e` reads) as no password's name: each password was written unrefused."""
    for text, kind in (("curl.exe -u admin:Xk9mQ2vRt8zL https://x", "curl-password"),
                       ("docker.exe login -u ci -p Xk9mQ2vRt8zL r.io", "login-password"),
                       ("redis-cli.exe -a Xk9mQ2vRt8zL", "command-password"),
                       ("mysql.exe -u root -pXk9mQ2vRt8zL", "mysql-password"),
                       ("SSHPASS=Xk9mQ2vRt8zL sshpass -e ssh deploy@web1", "password-assignment")):
        assert [f.kind for f in scan(text)] == [kind], text
        assert "Xk9mQ2vRt8zL" not in mask_secrets(text)
    for quiet in ("SSHPASS=$DEPLOY_PW sshpass -e ssh h", "curl.exe -u $USER:$TOKEN https://x"):
        assert scan(quiet) == [], quiet


def test_an_oracle_password_in_double_quotes_is_found() -> None:
    """Oracle quotes a password holding a space or a symbol (`scott/"Tr0ub4dor3x"@orcl`): the
    quote was no character a password could start with, so the logon was written unrefused.
    The quoted password is now read whole, up to its closing quote on the line."""
    for text, secret in (('sqlplus scott/"Tr0ub4dor3x"@orcl', "Tr0ub4dor3x"),
                         ('connect scott/"pa ss99X"@db', "pa ss99X"),
                         ('SQL> conn app/"Xk9m@Q2 vL"@prod as sysdba', "Xk9m@Q2 vL"),
                         ('expdp system/"Tiger 2024x"@pdb1 directory=dp', "Tiger 2024x")):
        [finding] = scan(text)
        assert finding.kind == "oracle-password", text
        assert text[finding.start : finding.end] == secret
        assert finding.masked.endswith('/"****"@'), finding.masked
        assert secret not in mask_secrets(text) and scan(mask_secrets(text)) == []
    for quiet in ('sqlplus scott/"tiger"@ORCL', 'sqlplus app/"<password>"@x',
                  'sqlplus app/"${ORACLE_PWD}"@XE', 'sqlplus app/"use the vault"@XE'):
        assert scan(quiet) == [], quiet


def test_a_base64_docker_config_pretty_printed_with_crlf_line_ends_is_found() -> None:
    """Docker's config.json pretty-printed on Windows (`\\r\\n` line ends) and then base64'd
    (a `.dockerconfigjson` value pasted without its name) starts with no start the rule knew
    (`{\\r\\n  "auths"`), so its `"auth"` was written unrefused."""
    import base64
    import json

    auth = base64.b64encode(b"robot$ci:Yh3vN8qTz1Lc").decode()
    for indent in (2, 4, "\t"):
        for config in ({"auths": {"registry.internal:5000": {"auth": auth}}},
                       {"auths": {"ghcr.io": {"username": "ci", "password": "Yh3vN8qTz1Lc"}}}):
            pretty = json.dumps(config, indent=indent).replace("\n", "\r\n")
            value = base64.b64encode(pretty.encode()).decode()
            for text in (value, f"pull secret:\r\n{value}\r\n", f"echo {value} | base64 -d"):
                [finding] = scan(text)
                assert finding.kind == "docker-auth", (indent, text)
                assert text[finding.start : finding.end] == value
                assert value not in mask_secrets(text) and scan(mask_secrets(text)) == []
    for config in ({"auths": {"ghcr.io": {}}, "credsStore": "desktop"},
                   {"auths": {"r.io": {"auth": base64.b64encode(b"user:password").decode()}}}):
        pretty = json.dumps(config, indent=2).replace("\n", "\r\n")
        assert scan(base64.b64encode(pretty.encode()).decode()) == [], config


def test_a_docker_auth_whose_value_is_on_the_next_line_is_found() -> None:
    """A line break between `"auth":` and its value (a formatter wrapping a long line) hid
    Docker's `"auth"`: the rule allowed only spaces there, so it was written unrefused. It is
    found now, reported on the value's line and shown on one line."""
    import base64

    auth = base64.b64encode(b"robot$ci:Yh3vN8qTz1Lc").decode()
    for text, line, masked in (
            ('{"auths": {"r.io": {"auth":\n      "dXNlcjpwYXNzd29yZDEyMw=="}}}', 2, '"auth": "****"'),
            (f'{{\n  "auths": {{\n    "r.io": {{\n      "auth":\n        "{auth}"\n    }}\n  }}\n}}', 5,
             '"auth": "****"'),
            (f'{{\r\n  "auths": {{\r\n    "r.io": {{\r\n      "auth"\r\n        :\r\n "{auth}"}}}}}}', 6,
             '"auth" : "****"')):
        [finding] = scan(text)
        assert (finding.kind, finding.masked, finding.line) == ("docker-auth", masked, line), text
        assert text[finding.start : finding.end] in (auth, "dXNlcjpwYXNzd29yZDEyMw==")
        assert scan(mask_secrets(text)) == []
    for decoded in (b"user:password", b"oauth2accesstoken"):
        quiet = f'{{"auths": {{"r.io": {{"auth":\n  "{base64.b64encode(decoded).decode()}"}}}}}}'
        assert scan(quiet) == [], decoded


def test_a_netrc_entry_with_upper_case_keywords_is_found() -> None:
    """curl reads a .netrc's keywords in any case, but the rule knew only lower case:
    `MACHINE host LOGIN me PASSWORD s3cretPassw0rd` was written unrefused."""
    for text, line in (("MACHINE host LOGIN me PASSWORD s3cretPassw0rd", 1),
                       ("Machine api.example.com Login deploy Password Xk9mQ2vRt8zL", 1),
                       ("# ~/.netrc\nMACHINE git.internal\n  LOGIN ci\n  ACCOUNT ops\n  PASSWORD 'Xk9mQ2vRt8zL'\n", 5),
                       ("DEFAULT LOGIN deploy PASSWORD Xk9mQ2vRt8zL", 1)):
        [finding] = scan(text)
        assert (finding.kind, finding.line) == ("netrc-password", line), text
        assert finding.masked.endswith(("PASSWORD ****", "Password ****")), finding.masked
        assert "\n" not in finding.masked
        assert text[finding.start : finding.end] in ("s3cretPassw0rd", "Xk9mQ2vRt8zL")
        assert scan(mask_secrets(text)) == []
    assert scan("MACHINE host LOGIN me PASSWORD s3cretPassw0rd")[0].masked == (
        "MACHINE host LOGIN me PASSWORD ****")
    for quiet in ("MACHINE h LOGIN u PASSWORD $NETRC_TOKEN", "DEFAULT LOGIN ANONYMOUS PASSWORD guest@example.com",
                  "MACHINE LEARNING PASSWORD STRENGTH", "Machine learning password strength estimators",
                  "DEFAULT PASSWORD POLICY Tr0ub4dor", "MACHINE h LOGIN deploy PASSWORD deploy"):
        assert scan(quiet) == [], quiet


def test_a_password_whose_opening_quote_is_never_closed_is_found() -> None:
    """A quoted value was read only up to its closing quote on the line: with none (`password:
    "Xk9mQ2vLp7zR` and the line or the text ends) the password was written unrefused, though
    the same value unquoted was refused. It now runs to the end of its line."""
    for text, secret in (('password: "Xk9mQ2vLp7zR', "Xk9mQ2vLp7zR"),
                         ('password: "Xk9mQ2vLp7zR\nnext line', "Xk9mQ2vLp7zR"),
                         ("DB_PASSWORD='Xk9mQ2vLp7zR  \r\nHOST=db", "Xk9mQ2vLp7zR"),
                         ('{"client_secret": "Xk9mQ2vLp7zR', "Xk9mQ2vLp7zR"),
                         ('db:\n  password: "Tr0ub4dor & 3\n  user: app\n', "Tr0ub4dor & 3")):
        [finding] = scan(text)
        assert finding.kind in ("password-assignment", "secret-assignment"), text
        assert text[finding.start : finding.end] == secret, text
        assert secret not in mask_secrets(text) and scan(mask_secrets(text)) == []
    assert mask_secrets('password: "Xk9mQ2vLp7zR\nnext') == 'password: "****\nnext'
    for quiet in ('password: "use the vault', 'password: "${DB_PASSWORD}', 'token: "',
                  "password: 'min 12 chars", 'password: "', "password: '" + "ab " * 100,
                  "password: 'correct horse\nbattery staple'"):
        assert scan(quiet) == [], quiet


def test_a_line_of_prose_opening_with_sql_or_connect_is_no_oracle_logon() -> None:
    """`sql word/Word2024@x` or `connect a/Bb2024@x` opening a line of prose was refused as an
    Oracle logon: a line's start was all it took. Now `connect`/`conn` is a logon only in a
    SQL*Plus context (a `SQL>` prompt, or sqlplus, SQL*Plus or SQLcl named just before), and
    `sql`/`exp`/`imp` outside one only with a password that is more than a word and a
    number; Oracle's own clients (sqlplus, expdp, …) are read as before."""
    for quiet in ("sql word/Word2024@x", "connect a/B2024@x", "connect a/Bb2024x@x",
                  "Meeting notes:\nconnect team/Alpha2024x@standup, then sql notes/Draft2024@wiki",
                  "conn a/Word2024@x", "exp results/Run2024@gpu1", "Connect repo/Proj2024@v1 to the board"):
        assert scan(quiet) == [], quiet
    for found in ("sqlplus /nolog\nconnect scott/Tiger2024x@orcl", "SQL> connect scott/Summer2024@orcl",
                  "SQL> conn scott/Summer2024@orcl", "sqlplus scott/Summer2024@orcl",
                  "In SQL*Plus:\n\nconnect app/Xk9mQ2vRt8zL@prod", "exp scott/Tiger2024x@ORCL file=x.dmp",
                  "$ sql scott/Tiger2024x@ORCL", 'connect scott/"pa ss99X"@db'):
        [finding] = scan(found)
        assert finding.kind == "oracle-password", found


def test_a_private_key_header_then_a_line_opening_with_a_long_word_is_no_key() -> None:
    """A header followed by a line of prose opening with a word of 16 letters or more
    ("Cryptographically secure keys …") was refused as a private key: any 16 base64
    characters made a body. A body that is one word in one case (a capital first at most) is
    prose now; a key's body mixes cases or holds digits, however short."""
    for header in ("-----BEGIN PRIVATE KEY-----", "-----BEGIN RSA PRIVATE KEY-----",
                   "-----BEGIN OPENSSH PRIVATE KEY-----"):
        for text in (f"{header}\nCryptographically secure keys are made by the HSM.\n",
                     f"Our keys start with\n{header}\ninternationalization is unrelated\n",
                     f"> {header}\n> Authenticationkeys rotate monthly\n",
                     f"{header}\nCONFIDENTIALITYKEY is the label\n"):
            assert scan(text) == [], text
    for body in ("b3BlbnNzaC1rZXktdjEAAAAABG5vbmU", "MC4CAQAwBQYDK2VwBCIEIC",
                 "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMx", "Cryptographically0secure"):
        text = f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----"
        assert [f.kind for f in scan(text)] == ["private-key"], body
