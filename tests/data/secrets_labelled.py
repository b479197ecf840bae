"""A labelled set for `memctl.core.secrets`: texts that hold a secret, and texts that look like
one but are not. Used by tests/test_secrets.py (every secret found, no non-secret found) and by
bench/bench_secrets.py (recall and false positives, beside Yelp's detect-secrets).

None of these credentials is real. Each token is assembled from its prefix and a body made by a
seeded generator, so this file does not itself trip secret scanners (GitHub push protection,
detect-secrets baselines) and no token string appears literally in the source.

SECRETS: (text, kind memctl reports, the secret part: never shown by a finding).
NON_SECRETS: (text, why it is not a secret). Decisions held here: `changeme`, `xxx`, `<...>`,
`${VAR}`, `os.environ[...]` are placeholders or references; a URL password equal to its user
(`postgres:postgres@localhost`) is a well-known default; bare hex/base32/base64 strings (git
SHAs, digests, UUIDs, note ids, images) are never secrets without a prefix or a name.
"""

from __future__ import annotations

import base64
import random

_RNG = random.Random(20261201)
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_HEX = "0123456789abcdef"
_B64 = _ALNUM + "+/"
_URLSAFE = _ALNUM + "-_"
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _r(length: int, alphabet: str = _ALNUM) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(length))


def _fullwidth(text: str) -> str:
    """ASCII letters, digits and `_=` as their full-width forms (U+FF01…U+FF5E)."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


AWS_ID = "AKIA" + _r(16, _UPPER)
AWS_TEMP_ID = "ASIA" + _r(16, _UPPER)
AWS_SECRET = _r(40, _B64)
GHP = "ghp_" + _r(36)
GHO = "gho_" + _r(36)
GITHUB_PAT = "github_pat_" + _r(22) + "_" + _r(59)
GLPAT = "glpat-" + _r(20, _URLSAFE)
NPM = "npm_" + _r(36)
HF = "hf_" + _r(34, _LETTERS)
SLACK_BOT = "xoxb-" + _r(12, "0123456789") + "-" + _r(13, "0123456789") + "-" + _r(24)
SLACK_USER = "xoxp-" + _r(12, "0123456789") + "-" + _r(12, "0123456789") + "-" + _r(13, "0123456789") + "-" + _r(32, _HEX)
SLACK_HOOK = "T" + _r(10, _UPPER) + "/B" + _r(10, _UPPER) + "/" + _r(24)
STRIPE = "sk_live_" + _r(24)
STRIPE_RESTRICTED = "rk_live_" + _r(24)
SENDGRID = "SG." + _r(22, _URLSAFE) + "." + _r(43, _URLSAFE)
TWILIO_KEY = "SK" + _r(32, _HEX)
TWILIO_SID = "AC" + _r(32, _HEX)
TWILIO_TOKEN = _r(32, _HEX)
DISCORD = _r(68, _URLSAFE)
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIiwicm9sZSI6ImFkbWluIiwiaWF0IjoxNzMzMDAwMDAwfQ."
       + _r(43, _URLSAFE))
RSA_BODY = "MIIEowIBAAKCAQEA" + _r(64, _B64) + "\n" + _r(64, _B64) + "\n" + _r(40, _B64) + "=="
OPENSSH_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ" + _r(30, _B64) + "\n" + _r(50, _B64)
PKCS8_JSON_BODY = "\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + _r(60, _B64) + "\\n" + _r(40, _B64) + "\\n"
AZURE_KEY = _r(86, _B64) + "=="
AZURE_SB_KEY = _r(43, _B64) + "="
BEARER = _r(48, _URLSAFE + ".")
BASIC = "YWRtaW46" + _r(16, _B64)
OPENAI = "sk-proj-" + _r(48, _URLSAFE)
ANTHROPIC = "sk-ant-api03-" + _r(93, _URLSAFE) + "-" + _r(6, _URLSAFE) + "AA"
GOOGLE = "AIza" + _r(35, _URLSAFE)
ZW_AWS = "AKIA" + _r(16, _UPPER)
ZW_SLACK = "xoxb-" + _r(12, "0123456789") + "-" + _r(13, "0123456789") + "-" + _r(24)
ZW_OPENAI = "sk-proj-" + _r(40)
FW_GHP = "ghp_" + _r(36)
FW_PASSWORD = "Qm" + _r(10) + "!7"
# command lines, Docker's config, more vendors, prose (drawn after the above: they keep their values)
CURL_PW = "Lq" + _r(10) + "9"
CURL_USER_PW = _r(14)
MYSQL_PW = "Zr" + _r(9) + "4"
MYSQLDUMP_PW = _r(12) + "#2"
DOCKER_AUTH = base64.b64encode(("ci-bot:" + "Dk" + _r(14) + "8").encode()).decode()
DIGITALOCEAN = "dop_v1_" + _r(64, _HEX)
SHOPIFY = "shpat_" + _r(32, _HEX)
LINEAR = "lin_api_" + _r(40)
TELEGRAM = "AA" + _r(33, _URLSAFE)
PROSE_PW = "Ht" + _r(9) + "!3"
PROSE_PW_COLON = "Wv" + _r(10) + "5"
CN_PROSE_PW = "Mi" + _r(8) + "26"
# drawn after the above (they keep their values)
CURL_GROUPED_PW = "Fq" + _r(10) + "7"
DOCKERCONFIGJSON = base64.b64encode(
    ('{"auths":{"registry.internal:5000":{"auth":"'
     + base64.b64encode(("ci-bot:" + "Kp" + _r(14) + "3").encode()).decode() + '"}}}').encode()).decode()
LOGIN_PW = "Dq" + _r(12) + "5"
SSHPASS_PW = "Sp" + _r(10) + "!1"
NPM_AUTH = base64.b64encode(("deploy:" + "Nz" + _r(12) + "4").encode()).decode()
PASSPHRASE = " ".join(_r(6, "abcdefghijklmnopqrstuvwxyz") for _ in range(4))
CN_QUOTED_PW = _r(4) + " " + _r(4) + " " + _r(3) + "9"
DOCKERCONFIG_NONE = base64.b64encode(b'{"auths":{"ghcr.io":{}},"credsStore":"desktop"}').decode()
# drawn after the above (they keep their values)
NETRC_PW = "Nr" + _r(12) + "6"
NETRC_LINES_PW = _r(20, _URLSAFE) + "9"
ORACLE_JDBC_PW = "Or" + _r(10) + "4"
ORACLE_CLI_PW = _r(11) + "#8"
AGE_KEY = "AGE-SECRET-KEY-1" + _r(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")
SOPS_AGE_KEY = "AGE-SECRET-KEY-1" + _r(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")
TWILIO_TOKEN_ALONE = _r(32, _HEX)
TWILIO_TOKEN_CONFIG = _r(32, _HEX)
# drawn after the above (they keep their values)
ORACLE_QUOTED_PW = _r(6) + " " + _r(5) + "7"
DOCKERCONFIG_CRLF = base64.b64encode(
    ('{\r\n  "auths": {\r\n    "registry.internal:5000": {\r\n      "auth": "'
     + base64.b64encode(("ci-bot:" + "Wd" + _r(14) + "2").encode()).decode()
     + '"\r\n    }\r\n  }\r\n}').encode()).decode()
DOCKER_AUTH_WRAPPED = base64.b64encode(("deploy:" + "Hq" + _r(14) + "5").encode()).decode()
NETRC_UPPER_PW = "Nu" + _r(12) + "8"
UNCLOSED_PW = "Uq" + _r(10) + "3"

SECRETS: list[tuple[str, str, str]] = [
    # well-known prefixes
    (f"export AWS_ACCESS_KEY_ID={AWS_ID}", "aws-access-key", AWS_ID),
    (f'{{"AccessKeyId": "{AWS_TEMP_ID}", "Expiration": "2026-12-01T10:00:00Z"}}', "aws-access-key", AWS_TEMP_ID),
    (f"aws_secret_access_key = {AWS_SECRET}", "aws-secret-key", AWS_SECRET),
    (f"git clone https://x-access-token:{GHP}@github.com/acme/infra.git", "github-token", GHP),
    (f"`gh auth token` printed {GHO} on the build box", "github-token", GHO),
    (f"GITHUB_TOKEN={GITHUB_PAT}", "github-token", GITHUB_PAT),
    (f"the deploy job uses {GLPAT} to push the image tag", "gitlab-token", GLPAT),
    (f"//registry.npmjs.org/:_authToken={NPM}", "npm-token", NPM),
    (f"HF_TOKEN={HF} for the private model repo", "huggingface-token", HF),
    (f'huggingface_hub.login(token="{HF}")', "huggingface-token", HF),
    (f"SLACK_BOT_TOKEN={SLACK_BOT}", "slack-token", SLACK_BOT),
    (f"my user token {SLACK_USER} works for the export script", "slack-token", SLACK_USER),
    (f"alerts go to https://hooks.slack.com/services/{SLACK_HOOK}", "slack-webhook", SLACK_HOOK),
    (f"stripe.api_key = '{STRIPE}'", "stripe-key", STRIPE),
    (f"reporting job reads charges with {STRIPE_RESTRICTED}", "stripe-key", STRIPE_RESTRICTED),
    (f"SENDGRID_API_KEY={SENDGRID}", "sendgrid-key", SENDGRID),
    (f"Twilio API key {TWILIO_KEY} belongs to the notify service", "twilio-api-key", TWILIO_KEY),
    (f"twilio account {TWILIO_SID} auth token {TWILIO_TOKEN}", "twilio-auth-token", TWILIO_TOKEN),
    (f"post build results to https://discord.com/api/webhooks/1189345678901234567/{DISCORD}",
     "discord-webhook", DISCORD),
    (f"Authorization: Bearer {JWT}", "jwt", JWT),
    (f"staging session cookie: session={JWT}; Path=/; HttpOnly", "jwt", JWT),
    (f"OPENAI_API_KEY={OPENAI}", "openai-key", OPENAI),
    (f"the eval harness reads {ANTHROPIC} from .env", "openai-key", ANTHROPIC),
    (f"maps key {GOOGLE} (restricted to the app)", "google-api-key", GOOGLE),
    # private keys
    (f"-----BEGIN RSA PRIVATE KEY-----\n{RSA_BODY}\n-----END RSA PRIVATE KEY-----", "private-key", RSA_BODY),
    (f"deploy key:\n-----BEGIN OPENSSH PRIVATE KEY-----\n{OPENSSH_BODY}\n-----END OPENSSH PRIVATE KEY-----\n",
     "private-key", OPENSSH_BODY),
    (f'"private_key": "-----BEGIN PRIVATE KEY-----{PKCS8_JSON_BODY}-----END PRIVATE KEY-----\\n",',
     "private-key", PKCS8_JSON_BODY),
    # cloud connection strings and HTTP auth
    (f"DefaultEndpointsProtocol=https;AccountName=prodlogs;AccountKey={AZURE_KEY};EndpointSuffix=core.windows.net",
     "azure-storage-key", AZURE_KEY),
    (f"Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey={AZURE_SB_KEY}",
     "azure-storage-key", AZURE_SB_KEY),
    (f"curl -H 'Authorization: Bearer {BEARER}' https://api.internal/v2/jobs", "bearer-token", BEARER),
    (f"Authorization: Basic {BASIC}", "basic-auth", BASIC),
    # passwords in URLs
    ("DATABASE_URL=postgres://blog:Vq7rTz2pLm9x@db.internal:5432/blog", "url-password", "Vq7rTz2pLm9x"),
    ("MONGO_URI=mongodb+srv://svc-report:k3Fh9QzW1xLp@cluster0.ab1cd.mongodb.net/reports",
     "url-password", "k3Fh9QzW1xLp"),
    ("celery broker amqp://worker:Rb8!nQ4zTt@rabbit.internal:5672//", "url-password", "Rb8!nQ4zTt"),
    # assignments whose name says secret
    ("export API_TOKEN=9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c", "secret-assignment", "9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c"),
    ("DB_PASSWORD=Pg-stage-2024!", "password-assignment", "Pg-stage-2024!"),
    ("    POSTGRES_PASSWORD: hT8kq2ZmWx4v", "password-assignment", "hT8kq2ZmWx4v"),
    ('password = "Tr0ub4dor&3"', "password-assignment", "Tr0ub4dor&3"),
    ("client_secret: 4kRt9-Zq2Lm8Xv7Nc3Pb", "secret-assignment", "4kRt9-Zq2Lm8Xv7Nc3Pb"),
    ('{"username": "svc-backup", "password": "s3rv1ce-Backup"}', "password-assignment", "s3rv1ce-Backup"),
    ("Server=sql01;Database=billing;User Id=app;Password=Bz7#kLq2;", "connection-string-password", "Bz7#kLq2"),
    ("mysql -h db -u root --password=Xk9mQ2vRt", "password-assignment", "Xk9mQ2vRt"),
    ('apiKey := "Zt4QmX9pLw2N8vKc"', "secret-assignment", "Zt4QmX9pLw2N8vKc"),
    ("    MYSQL_ROOT_PASSWORD: correcthorsebatterystaple", "password-assignment", "correcthorsebatterystaple"),
    ("测试库密码：MiMa2024Test，别提交到仓库", "password-assignment", "MiMa2024Test"),
    # evasions: URL-encoded, full-width, zero-width characters
    ("DATABASE_URL=postgres%3A%2F%2Fapp%3AS3cr3tPw9%40db.internal%2Fblog", "url-password", "S3cr3tPw9"),
    ("callback?user=svc&password%3DHunter2Zx%21", "password-assignment", "Hunter2Zx%21"),
    (f"token {_fullwidth(FW_GHP)} from the old laptop", "github-token", _fullwidth(FW_GHP)),
    (f"{_fullwidth('DB_PASSWORD=')}{_fullwidth(FW_PASSWORD)}", "password-assignment", _fullwidth(FW_PASSWORD)),
    (f"key {ZW_AWS[:8]}\u200b{ZW_AWS[8:]} in the ci env", "aws-access-key", ZW_AWS[8:]),
    (f"{ZW_SLACK[:10]}\ufeff{ZW_SLACK[10:20]}\u200c{ZW_SLACK[20:]}", "slack-token", ZW_SLACK[20:]),
    (f"OPENAI key {ZW_OPENAI[:12]}\u200d{ZW_OPENAI[12:]}", "openai-key", ZW_OPENAI[12:]),
    # credentials on a command line
    (f"curl -u deploy:{CURL_PW} -T build.tar https://artifacts.internal/upload", "curl-password", CURL_PW),
    (f'curl -s --user "svc-ci:{CURL_USER_PW}" https://jenkins.internal/api/json', "curl-password", CURL_USER_PW),
    (f"curl -sSfu admin:{CURL_GROUPED_PW} https://ci.internal/api/json", "curl-password", CURL_GROUPED_PW),
    (f"mysql -h db.internal -u root -p{MYSQL_PW} billing", "mysql-password", MYSQL_PW),
    (f"mysqldump -uapp -p'{MYSQLDUMP_PW}' --single-transaction shop > shop.sql", "mysql-password", MYSQLDUMP_PW),
    (f"docker login -u ci-bot -p {LOGIN_PW} registry.internal:5000", "login-password", LOGIN_PW),
    (f"sshpass -p '{SSHPASS_PW}' ssh deploy@bastion", "command-password", SSHPASS_PW),
    # Docker's config.json: base64 of user:password
    (f'{{"auths": {{"registry.internal:5000": {{"auth": "{DOCKER_AUTH}"}}}}}}', "docker-auth", DOCKER_AUTH),
    (f"  .dockerconfigjson: {DOCKERCONFIGJSON}\ntype: kubernetes.io/dockerconfigjson",
     "docker-auth", DOCKERCONFIGJSON),
    (f"//npm.internal/:_auth={NPM_AUTH}", "npm-auth", NPM_AUTH),
    # more vendors
    (f"DIGITALOCEAN_ACCESS_TOKEN={DIGITALOCEAN}", "digitalocean-token", DIGITALOCEAN),
    (f"the storefront sync uses {SHOPIFY} (admin API)", "shopify-token", SHOPIFY),
    (f"linear triage bot: {LINEAR}", "linear-api-key", LINEAR),
    (f"alerts bot https://api.telegram.org/bot7012345678:{TELEGRAM}/sendMessage", "telegram-bot-token", TELEGRAM),
    # a password in prose, English and Chinese
    (f"the staging admin password is {PROSE_PW}.", "password-in-prose", PROSE_PW),
    (f"VPN password is: {PROSE_PW_COLON} (until March)", "password-in-prose", PROSE_PW_COLON),
    (f"测试服务器的密码是{CN_PROSE_PW}，别外传", "password-in-prose", CN_PROSE_PW),
    (f"  password: '{PASSPHRASE}'  # the VPN's", "password-assignment", PASSPHRASE),
    (f'测试库的密码是 "{CN_QUOTED_PW}"，别外传', "password-in-prose", CN_QUOTED_PW),
    # .netrc, on one line and across lines
    (f"machine api.heroku.com login ci@example.com password {NETRC_PW}", "netrc-password", NETRC_PW),
    (f"~/.netrc on the runner:\nmachine artifacts.internal\n  login deploy\n  password {NETRC_LINES_PW}\n",
     "netrc-password", NETRC_LINES_PW),
    # Oracle's user/password@connect
    (f"jdbc:oracle:thin:billing/{ORACLE_JDBC_PW}@db.internal:1521/ORCL", "oracle-password", ORACLE_JDBC_PW),
    (f"sqlplus -s report/{ORACLE_CLI_PW}@PRODDB @nightly.sql", "oracle-password", ORACLE_CLI_PW),
    # age identities
    ("# created: 2026-12-01T10:00:00+01:00\n"
     "# public key: age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p\n"
     f"{AGE_KEY}\n", "age-secret-key", AGE_KEY),
    (f"export SOPS_AGE_KEY={SOPS_AGE_KEY}", "age-secret-key", SOPS_AGE_KEY),
    # a Twilio auth token named, without its account sid
    (f"the Twilio auth token is {TWILIO_TOKEN_ALONE} (rotate it after the demo)", "twilio-auth-token",
     TWILIO_TOKEN_ALONE),
    (f'  twilioAuthToken: "{TWILIO_TOKEN_CONFIG}",', "twilio-auth-token", TWILIO_TOKEN_CONFIG),
    # an Oracle password in double quotes (spaces and all)
    (f'sqlplus -s report/"{ORACLE_QUOTED_PW}"@PRODDB @nightly.sql', "oracle-password", ORACLE_QUOTED_PW),
    # Docker's config.json pretty-printed with Windows line ends, as base64, with no name
    (f"the pull secret, base64:\n{DOCKERCONFIG_CRLF}\n", "docker-auth", DOCKERCONFIG_CRLF),
    # Docker's "auth" with its value wrapped to the next line
    (f'{{"auths": {{"registry.internal:5000": {{"auth":\n    "{DOCKER_AUTH_WRAPPED}"}}}}}}', "docker-auth",
     DOCKER_AUTH_WRAPPED),
    # .netrc keywords in upper case (curl reads them in any case)
    (f"MACHINE ftp.internal LOGIN backup PASSWORD {NETRC_UPPER_PW}", "netrc-password", NETRC_UPPER_PW),
    # a quoted password whose quote is never closed (the line ends)
    (f'db:\n  password: "{UNCLOSED_PW}\n  user: app\n', "password-assignment", UNCLOSED_PW),
]

NON_SECRETS: list[tuple[str, str]] = [
    # ids, hashes, encodings
    ("see note 01m8p0b4rc7ecc6q for the pool size", "memctl note id"),
    ("id: 01m8p0bpb6pa1qs4\ntype: error\nproject: global", "front matter"),
    ("superseded_by: 01m8p0b71361e2v8", "note id in front matter"),
    ("fixed in commit 3f786850e387550fdab836ed7e6dc881de23001b", "git SHA"),
    ("git revert a94a8fe5ccb19ba61c4c0873d391e987982fbbd3 && git push", "git SHA"),
    ("request id 123e4567-e89b-12d3-a456-426614174000 in the logs", "UUID"),
    ("token_id: 9b2f1c3e-5d7a-4f8e-9c1b-2a3d4e5f6a7b", "a token's id"),
    ("X-Request-Id: 7f9c2ba4-e88f-4f2a-8c1e-3b0f4b6c9d21", "request id header"),
    ("image sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "SHA-256 digest"),
    ("sha1: da39a3ee5e6b4b0d3255bfef95601890afd80709", "SHA-1 digest"),
    ("checksum: 9e107d9d372bb6826bd81d3542a419d6", "MD5 digest"),
    ("![dot](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==)",
     "base64 image"),
    ("favicon data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7", "base64 image"),
    ("ULID 01HZY3K9Q8X7W6V5T4S3R2P1N0 orders the events", "ULID"),
    ("colors #ff00aa and 0xDEADBEEF", "hex literals"),
    ('etag: W/"5e15153d-120f"', "etag"),
    # the word in prose, English and Chinese
    ("rotate the password monthly", "prose"),
    ("the password is stored in 1Password", "prose"),
    ("password: use the vault", "prose"),
    ("password: min-length 12", "prose"),
    ("the secret: always warm the cache first", "prose"),
    ("Never store the token in the cookie; use the session instead.", "prose"),
    ("密码每 90 天更换", "Chinese prose"),
    ("数据库密码放在 vault 里，不要写进笔记", "Chinese prose"),
    ("密钥轮换流程见 docs/security.md", "Chinese prose"),
    ("token 30 分钟过期，跑到一半的长任务全部返回 401，现在每次请求前检查过期时间", "Chinese prose"),
    ("上线前必须完成单元测试和代码审查，并确认监控告警正常。", "Chinese prose"),
    ("记住：连接池超过 30 秒就会超时，要加重试。", "Chinese prose"),
    # placeholders and references
    ("password: <your-password>", "placeholder"),
    ("API_KEY=xxx", "placeholder"),
    ("DB_PASSWORD=${DB_PASSWORD}", "reference"),
    ("DB_PASSWORD=changeme", "well-known default (decided: placeholder)"),
    ("password: ********", "masked"),
    ("OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "placeholder"),
    ("token: YOUR_TOKEN_HERE", "placeholder"),
    ("stripe_key: your_stripe_secret_key", "placeholder"),
    ("secret = os.environ['APP_SECRET']", "reference"),
    ('password = os.getenv("DB_PASSWORD")', "reference"),
    ("const token = process.env.GITHUB_TOKEN;", "reference"),
    ('password: "{{ .Values.db.password }}"', "template"),
    ("api_key: !vault |", "ansible vault reference"),
    ("token=$(cat /run/secrets/token)", "reference"),
    ("password_file: /run/secrets/db_password", "a path"),
    ('secret = ""', "empty"),
    ("apiKey: string  # from settings", "a type"),
    ("Authorization: Bearer <token>", "placeholder"),
    ("Authorization: Bearer $GITHUB_TOKEN", "reference"),
    ("postgres://user:password@localhost:5432/app", "docs placeholder"),
    ("postgres://postgres:postgres@localhost:5432/test", "well-known default (decided)"),
    # names that mention a secret but hold something else
    ("PASSWORD_MIN_LENGTH=12", "a policy"),
    ("max_tokens: 4096", "an LLM limit"),
    ("tokenizer: jieba", "a tokenizer"),
    ("token_ttl: 3600", "a lifetime"),
    ("secret_name: prod/db/credentials", "a secret's name"),
    ("password_hash: bcrypt", "an algorithm"),
    ("jwt_algorithm: HS256", "an algorithm"),
    ("public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGk5Zm9vYmFyYmF6cXV4 dev@laptop", "public key"),
    ("-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo\n-----END PUBLIC KEY-----",
     "public key block"),
    ("-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n-----END CERTIFICATE-----",
     "certificate"),
    ("look for a line starting with -----BEGIN RSA PRIVATE KEY----- in the repo", "a header named in prose"),
    ("The file starts with -----BEGIN PRIVATE KEY----- and ends with the END line.\nSee note 01m8p0b4rc7ecc6q",
     "a header named in prose, then a note id"),
    ("A key file starts with -----BEGIN OPENSSH PRIVATE KEY-----\n\nNever commit one.\n\nDone",
     "a header ending a line of prose"),
    ("account_sid: AC0123456789abcdef0123456789abcdef", "a Twilio account sid alone is an id"),
    ("encryption: aes-256-gcm, key derivation pbkdf2", "algorithms"),
    ("key: value pairs are separated by a colon", "prose"),
    ("primary key: (tenant_id, id)", "a database key"),
    ("sort_key=created_at", "a sort key"),
    ("monkey: banana", "a word that contains key"),
    ("secrets: [db-password, api-token]", "names of secrets"),
    ("PWD=/work/main OLDPWD=/home/dev", "shell working directories"),
    ("apiKey: process.env.API_KEY!,", "TypeScript reference"),
    ("password?: string;", "TypeScript type"),
    ("DATABASE_PASSWORD: ENC[AES256_GCM,data:Tr9kq2==,iv:Zm9v,tag:YmFy,type:str]", "sops-encrypted value"),
    ("token: ${{ secrets.GITHUB_TOKEN }}", "GitHub Actions expression"),
    ("valueFrom:\n  secretKeyRef:\n    name: db-credentials\n    key: password", "Kubernetes reference"),
    ("last_token_refresh: 2026-12-01T10:00:00Z", "a timestamp"),
    ("token_version: 2.3.1-beta", "a version"),
    ("export PATH=$HOME/.local/bin:$PATH", "shell"),
    # prefixes named in docs, URLs and versions
    ("AKIA keys belong to IAM users; ASIA keys are temporary", "prefix named"),
    ("GitHub tokens start with ghp_ and fine-grained ones with github_pat_", "prefix named"),
    ("Slack bot tokens look like xoxb-…", "prefix named"),
    ("SendGrid keys start with SG. and are 69 characters long", "prefix named"),
    ("the model is scikit-learn (sk-learn), not a key", "prefix lookalike"),
    ('hf_hub_download(repo_id="bert-base-uncased", filename="config.json")', "function name"),
    ("npm_config_registry=https://registry.npmjs.org/", "npm config"),
    ("//registry.npmjs.org/:_auth=${NPM_AUTH}", "npm config, a reference"),
    ("JWT header eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9 decodes to alg HS256", "JWT header alone"),
    ("https://docs.github.com/en/authentication/keeping-your-account-and-data-secure/managing-your-personal-access-tokens",
     "docs URL"),
    ("https://huggingface.co/docs/hub/security-tokens", "docs URL"),
    ("https://discord.com/developers/docs/resources/webhook#execute-webhook", "docs URL"),
    ("https://api.example.com/v1/tokens?limit=20&cursor=abc", "API URL"),
    ("postgres://localhost:5432/blog", "URL without credentials"),
    ("git@github.com:acme/infra.git and ssh://git@gitlab.com:22/group/project.git", "ssh remotes"),
    ("https://example.com:8443/path", "port in URL"),
    ("released v2.14.3 with python 3.11.7, node 20.11.1, pnpm 8.15.4", "versions"),
    ("npm install --save-dev @types/node@20.11.30", "versions"),
    ("Cache-Control: max-age=31536000, immutable", "header"),
    ("timeout=30s retries=5 backoff=2.0", "settings"),
    ("AWS account 123456789012, role arn:aws:iam::123456789012:role/deploy", "account id and ARN"),
    ("Kafka 消费者的 max.poll.interval.ms 设成 600000（10 分钟）", "Chinese with settings"),
    # command lines without a secret
    ("curl -u $USER:$TOKEN https://api.internal/v2/jobs", "references"),
    ('curl -u "$CI_USER:${CI_TOKEN}" -T out.zip https://artifacts.internal/', "references"),
    ("curl -u deploy https://artifacts.internal/upload (curl asks for the password)", "no password: a prompt"),
    ("curl -u admin: https://localhost:9200/_cat/indices", "empty password"),
    ("curl -u elastic:<password> https://localhost:9200", "placeholder"),
    ("curl --user-agent 'bot:1.0' https://example.com", "another option"),
    ("curl -sSfu $CI_USER:$CI_TOKEN https://ci.internal/api/json", "grouped options, references"),
    ("curl -sSfo out.json:latest https://ci.internal/api/json", "grouped options ending in -o"),
    ("docker run -u 1000:1000 -v $PWD:/src img make", "user and group ids, no curl"),
    ("mysql -u root -p mydb", "a prompt for the password, then the database"),
    ("mysql -h db -P3306 -u app -p", "port (capital P), then a prompt"),
    ("mysql -uroot -p$MYSQL_ROOT_PASSWORD app", "reference"),
    ("ssh -p2222 deploy@bastion and psql -h db -p5432 -U app", "ports of other tools"),
    ("mysqldump -u backup -p --all-databases > all.sql", "a prompt"),
    ("echo $CI_TOKEN | docker login -u ci --password-stdin ghcr.io", "a password on stdin"),
    ("sshpass -f ~/.ssh/pw ssh -p 2222 deploy@bastion", "a password file, then a port"),
    ("Run docker login ghcr.io first, then docker compose -p webshop2026 up -d.",
     "another command's -p after a login, in prose"),
    # Docker's config without a password
    ('{"auths": {"ghcr.io": {}}, "credsStore": "desktop"}', "a credential helper"),
    ('{"auths": {"gcr.io": {"auth": "b2F1dGgyYWNjZXNzdG9rZW4="}}}', "base64 without a colon"),
    ('{"auths": {"localhost:5000": {"auth": "dXNlcjpwYXNzd29yZA=="}}}', "user:password placeholder"),
    (f"data:\n  .dockerconfigjson: {DOCKERCONFIG_NONE}", "a .dockerconfigjson with a credential helper"),
    # vendor prefixes named
    ("DigitalOcean tokens start with dop_v1_, Shopify admin tokens with shpat_", "prefix named"),
    ("Linear keys look like lin_api_…; Telegram bot tokens are <bot id>:AA…", "prefix named"),
    ("chat id -1001234567890 and bot id 7012345678 in the alert config", "ids"),
    # a password in prose that is not one
    ("the password is stored in vault", "prose"),
    ("password is required", "prose"),
    ("密码是必填项", "Chinese prose"),
    ("密码为空时登录失败", "Chinese prose"),
    ("set the password is `<redacted>` in the runbook", "placeholder"),
    ("the password is incorrect, try again", "prose"),
    ("the password is 2FA-protected", "prose"),
    ("the password is sha256-hashed before storage", "prose"),
    ("the password is ${DB_PASSWORD}", "reference"),
    ("the password is 12345678 characters long? no", "digits only, in prose"),
    ('password: "use the vault entry"', "a quoted phrase of prose"),
    ("the password is 'too short', says the form", "a quoted phrase of prose"),
    # .netrc without a password
    ("machine artifacts.internal login deploy password $ARTIFACTS_TOKEN", ".netrc, a reference"),
    ("machine github.com login x-access-token password ${{ secrets.GITHUB_TOKEN }}",
     ".netrc, a GitHub Actions expression"),
    ("default login anonymous password guest@example.com", "anonymous FTP's .netrc"),
    ("For GitHub use machine github.com login oauth2 password $GITHUB_TOKEN.",
     ".netrc, a reference ending a sentence"),
    ("docker login -u ci -p $CI_TOKEN, then push the image", "a reference, then a comma"),
    ("the build machine uses password authentication, not keys", "prose"),
    ("key.pem in the sample:\n-----BEGIN PRIVATE KEY-----\nXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX\n-----END PRIVATE KEY-----",
     "a private key sample, its body a filler"),
    # Oracle connect strings without a password
    ("jdbc:oracle:thin:billing/<password>@db.internal:1521/ORCL", "Oracle JDBC URL, a placeholder"),
    ("sqlplus system/${ORACLE_PASSWORD}@XE", "a reference"),
    ("sqlplus scott/tiger@ORCL", "the demo schema's well-known default (decided)"),
    ("sqlplus / as sysdba", "OS authentication"),
    ("jdbc:oracle:thin:@//db.internal:1521/ORCL", "no credentials"),
    # age: prefixes and public keys
    ("age identities start with AGE-SECRET-KEY-1, recipients with age1", "prefix named"),
    ("sops -e --age age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p secrets.yaml",
     "an age recipient (a public key)"),
    ("SOPS_AGE_KEY=AGE-SECRET-KEY-1" + "Q" * 58, "a placeholder key"),
    # 32 hex characters that are no Twilio auth token
    ("the tarball's md5 is 9e107d9d372bb6826bd81d3542a419d6, see the release page", "a plain MD5 in prose"),
    ("the twilio auth token lives in 1Password; webhook request 5d41402abc4b2a76b9719d911017c592 failed",
     "a 32-hex request id after the words"),
    ("twilio auth token: <your-auth-token>", "placeholder"),
    # Oracle's short command names as words of prose; rules for passwords, quoted
    ("Best run: exp cifar10/ResNet50@epoch90 reached 94%", "an experiment, not Oracle's exp"),
    ('db:\n  password: "min 12 chars, one symbol"\n', "a password rule, quoted"),
    ("password: 'press enter at the prompt'", "an instruction, quoted"),
    # .netrc's words in upper case, in prose
    ("MACHINE LEARNING PASSWORD STRENGTH ESTIMATORS (slides)", "a title, no .netrc entry"),
    ('password: "see the team vault\n(ask ops)', "a phrase whose quote is never closed"),
    # a line of prose opening with `sql` or `connect` (no Oracle logon: docs/security.md)
    ("sql word/Word2024@x is the tag we ship", "`sql` opening prose, a word and a year"),
    ("Standup:\nconnect team/Alpha2024x@board before noon", "`connect` outside SQL*Plus"),
    ("A key file looks like:\n-----BEGIN PRIVATE KEY-----\nCryptographically random bytes, base64-encoded.",
     "a header, then prose opening with a long word"),
]
