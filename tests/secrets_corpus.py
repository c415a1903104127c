"""A corpus of fake secrets in their real formats, and of look-alikes that are not secrets.

Every value is built at run time from a seeded generator, so no key-shaped literal sits
in the repository for a secret scanner to flag, and the corpus is the same on every run.
`POSITIVES` is a list of (rule, secret value, text holding it); `NEGATIVES` a list of
texts in which no rule may match.
"""

import base64
import hashlib
import random
import uuid

_rng = random.Random(20261201)
UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
LOWER = UPPER.lower()
DIGITS = "0123456789"
ALNUM = UPPER + LOWER + DIGITS
B32 = UPPER + "234567"
B64 = ALNUM + "+/"


def chars(alphabet: str, n: int) -> str:
    """`n` random characters with at least one upper, lower and digit when the alphabet
    has them (a real key of this length has them with near certainty)."""
    while True:
        s = "".join(_rng.choice(alphabet) for _ in range(n))
        needs = [set(a) & set(alphabet) for a in (UPPER, LOWER, DIGITS)]
        if all(not need or set(s) & need for need in needs):
            return s


def digits(n: int) -> str:
    return "".join(_rng.choice(DIGITS) for _ in range(n))


def _openai() -> list[str]:
    marker = "T3Blbk" + "FJ"
    return [
        "sk-" + chars(ALNUM, 20) + marker + chars(ALNUM, 20),
        "sk-" + "proj-" + chars(ALNUM + "_-", 74) + marker + chars(ALNUM + "_-", 74),
        "sk-" + "svcacct-" + chars(ALNUM + "_-", 58) + marker + chars(ALNUM + "_-", 58),
        "sk-" + "admin-" + chars(ALNUM + "_-", 58) + marker + chars(ALNUM + "_-", 58),
        "sk-" + chars(ALNUM, 48),
    ]


def _anthropic() -> list[str]:
    return [
        "sk-" + "ant-api03-" + chars(ALNUM + "_-", 93) + "AA",
        "sk-" + "ant-admin01-" + chars(ALNUM + "_-", 93) + "AA",
        "sk-" + "ant-api03-" + chars(ALNUM, 40),
    ]


def _github() -> list[str]:
    return [
        *(prefix + "_" + chars(ALNUM, 36) for prefix in ("ghp", "gho", "ghu", "ghs", "ghr")),
        "github_" + "pat_" + chars(ALNUM, 22) + "_" + chars(ALNUM, 59),
    ]


def _gitlab() -> list[str]:
    return [
        "glpat" + "-" + chars(ALNUM + "_-", 20),
        "glpat" + "-" + chars(ALNUM, 20),
        "gldt" + "-" + chars(ALNUM, 20),
        "glrt" + "-" + chars(ALNUM, 20),
    ]


def _slack() -> list[str]:
    return [
        "xoxb" + "-" + digits(12) + "-" + digits(13) + "-" + chars(ALNUM, 24),
        "xoxp"
        + "-"
        + digits(12)
        + "-"
        + digits(12)
        + "-"
        + digits(13)
        + "-"
        + chars("0123456789abcdef", 32),
        "xoxa" + "-2-" + digits(12) + "-" + chars(ALNUM, 24),
        "xapp"
        + "-1-A"
        + chars(UPPER + DIGITS, 10)
        + "-"
        + digits(13)
        + "-"
        + chars("0123456789abcdef", 64),
    ]


def _slack_webhook() -> list[str]:
    return [
        "https://hooks.slack.com/services/T"
        + chars(UPPER + DIGITS, 8)
        + "/B"
        + chars(UPPER + DIGITS, 10)
        + "/"
        + chars(ALNUM, 24),
        "https://hooks.slack.com/workflows/T"
        + chars(UPPER + DIGITS, 8)
        + "/A"
        + chars(UPPER + DIGITS, 10)
        + "/"
        + digits(18)
        + "/"
        + chars(ALNUM, 24),
    ]


def _aws_id() -> list[str]:
    return ["AKIA" + chars(B32, 16), "ASIA" + chars(B32, 16), "AKIA" + chars(B32, 16)]


def _aws_secret() -> list[str]:
    return [chars(B64, 40) for _ in range(4)]


def _google() -> list[str]:
    return ["AIza" + chars(ALNUM + "_-", 35) for _ in range(3)]


def _pem(kind: str, lines: int = 6) -> str:
    body = "\n".join(chars(B64, 64) for _ in range(lines)) + "\n" + chars(B64, 20) + "=="
    label = f"{kind} PRIVATE KEY".strip()
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


def _bearer() -> list[str]:
    jwt = ".".join(
        base64.urlsafe_b64encode(part.encode()).decode().rstrip("=")
        for part in ('{"alg":"HS256"}', '{"sub":"' + digits(10) + '"}', chars(ALNUM, 32))
    )
    return [jwt, chars(ALNUM, 40), chars(ALNUM + "-._~", 32)]


def _build() -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    for key in _openai():
        out += [
            ("openai-api-key", key, f"export OPENAI_API_KEY={key}"),
            ("openai-api-key", key, f'client = OpenAI(api_key="{key}")'),
        ]
    for key in _anthropic():
        out += [
            ("anthropic-api-key", key, f"ANTHROPIC_API_KEY='{key}'"),
            ("anthropic-api-key", key, f"my key is {key}, keep it safe"),
        ]
    for key in _github():
        out += [
            ("github-token", key, f"git clone https://{key}@github.com/acme/app.git"),
            ("github-token", key, f"Authorization: token {key}"),
        ]
    for key in _gitlab():
        out.append(("gitlab-token", key, f'{{"private_token": "{key}"}}'))
    for key in _slack():
        out.append(("slack-token", key, f"SLACK_BOT_TOKEN={key}\n"))
    for url in _slack_webhook():
        out.append(("slack-webhook", url, f"curl -X POST -d '{{}}' {url}"))
    for key in _aws_id():
        out.append(("aws-access-key-id", key, f"aws_access_key_id = {key}"))
    secrets = _aws_secret()
    out += [
        ("aws-secret-access-key", secrets[0], f"aws_secret_access_key = {secrets[0]}"),
        ("aws-secret-access-key", secrets[1], f"AWS_SECRET_ACCESS_KEY={secrets[1]}"),
        ("aws-secret-access-key", secrets[2], f'"SecretAccessKey": "{secrets[2]}",'),
        ("aws-secret-access-key", secrets[3], f"export AWS_SECRET_ACCESS_KEY='{secrets[3]}'"),
    ]
    for key in _google():
        out.append(("google-api-key", key, f"https://maps.googleapis.com/maps/api?key={key}"))
    for kind in ("RSA", "OPENSSH", "EC", "", "ENCRYPTED", "DSA"):
        block = _pem(kind)
        out.append(("private-key", block, f"$ cat ~/.ssh/id\n{block}\n$ ls"))
    truncated = _pem("RSA").rsplit("\n", 2)[0]  # output cut before the END line
    out.append(("private-key", truncated, f"{truncated}\n"))
    lines = _pem("RSA").split("\n")  # read_file's numbered pages, cut inside the block
    first = "".join(f"{n:>6}\t{line}\n" for n, line in enumerate(lines[:4], 1))
    out.append(("private-key", lines[1], first + "[showing lines 1-4 of 9; call read_file]\n"))
    rest = "".join(f"{n:>6}\t{line}\n" for n, line in enumerate(lines[4:], 5))
    out.append(("private-key", lines[5], rest))
    for token in _bearer():
        out += [
            ("bearer-token", token, f"Authorization: Bearer {token}"),
            ("bearer-token", token, f"curl -H 'authorization: bearer {token}' https://api.x.io"),
        ]
    for scheme, host in (("postgres", "db:5432/app"), ("https", "example.com/x"), ("redis", "r")):
        password = chars(ALNUM + "!*", 16)
        out.append(("url-password", password, f"DATABASE_URL={scheme}://admin:{password}@{host}"))
    password = "hunter2" + digits(3)
    out.append(("url-password", password, f"git remote add o https://bob:{password}@git.io/r"))
    return out


POSITIVES: list[tuple[str, str, str]] = _build()


def _negatives() -> list[str]:
    sha = hashlib.sha1(b"x").hexdigest()
    sha256 = hashlib.sha256(b"x").hexdigest()
    image = base64.b64encode(bytes(_rng.randrange(256) for _ in range(3000))).decode()
    return [
        "Update the task-list and ask-for-review steps; risk-assessment-for-production-2024",
        "use sk-learn? no: scikit-learn. The flag is --disk-cache-size-limit-in-bytes-2048",
        "sk-this-is-a-very-long-kebab-case-identifier-name",
        "the AKIA prefix marks an AWS access key id; ASIA marks temporary ones",
        "AKIA1234 is too short, AKIAIOSFODNN7EXAMPLEEXTRA is too long",
        f"commit {sha} (HEAD -> main)",
        f"sha256:{sha256}",
        f"session {uuid.UUID(int=_rng.getrandbits(128))} and {uuid.uuid4().hex}",
        f'{{"type": "image_url", "image_url": "data:image/png;base64,{image}"}}',
        "Send the Bearer token in the Authorization header.",
        "Authorization: Bearer $TOKEN",
        "Authorization: Bearer <your-token-here>",
        "curl -H 'Authorization: Bearer ${GITHUB_TOKEN}' https://api.github.com",
        "bearer of bad news, the bearer-of-the-ring",
        "https://github.com/acme/app.git and http://localhost:8080/path?q=1",
        "http://[::1]:8080/ and https://user@example.com/ and mailto:bob@example.com",
        "git@github.com:acme/app.git and ssh://git@github.com:22/acme/app",
        "postgres://user:$DB_PASSWORD@localhost/app and redis://:${PASS}@r:6379",
        "https://user:<password>@host/ and ftp://anon:***@ftp.example.com",
        "ghp_ is the prefix of a GitHub personal access token; gho_ of an OAuth one",
        "the gh_pages branch, ghp_short, github_pat_tooshort",
        "glpat- tokens come from GitLab; glpat-short",
        "xoxb- is a Slack bot token prefix; xoxb-123",
        "https://hooks.slack.com/services/ is the webhook base",
        "AIza is how Google API keys start; AIzaShort",
        "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0D\n-----END PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
        "the file holds a private key (PRIVATE KEY blocks are redacted)",
        "secret_access_key = os.environ['AWS_SECRET_ACCESS_KEY']",
        "aws_secret_access_key = " + "x" * 10,
        f"def test_{'a' * 40}(): pass",
        "password: hunter2 (in prose, not a URL)",
        "[REDACTED:openai-api-key] and [REDACTED:url-password] stay as they are",
        "https://user:[REDACTED:url-password]@host/",
        "Authorization: Bearer [REDACTED:bearer-token]",
    ]


NEGATIVES: list[str] = _negatives()
