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
    return [chars(B64, 40) for _ in range(9)]


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


HEX = "0123456789abcdef"
_URLSAFE = ALNUM + "_-"


def _b64url(data: str) -> str:
    return base64.urlsafe_b64encode(data.encode()).decode().rstrip("=")


def _uuid() -> str:
    return str(uuid.UUID(int=_rng.getrandbits(128)))


def _jwt(signed: bool = True) -> str:
    header = _b64url('{"alg":"RS256","typ":"JWT"}')
    payload = _b64url('{"sub":"' + digits(10) + '","iat":' + digits(10) + "}")
    return f"{header}.{payload}." + (chars(_URLSAFE, 86) if signed else "")


def _providers() -> list[tuple[str, str]]:
    """(rule, fake key) for the rules of values/provider_secrets.py (and GitLab's newer
    prefixes), each prefix split so that no literal in this file is key-shaped."""
    bedrock = base64.b64encode(
        b"bedrock.amazonaws.com/?Action=CallWithBearerToken&X-Amz-Credential="
        + chars(UPPER + DIGITS, 20).encode()
        + b"&Version=1"
    ).decode()
    sentry = base64.b64encode(
        (
            '{"iat":' + digits(10) + ',"url":"https://sentry.io","region_url":"https://us'
            '.sentry.io","org":"acme"}'
        ).encode()
    ).decode()
    return [
        ("stripe-access-token", "sk_" + "live_" + chars(ALNUM, 24)),
        ("stripe-access-token", "sk_" + "live_" + "51" + chars(ALNUM, 97)),
        ("stripe-access-token", "rk_" + "live_" + chars(ALNUM, 99)),
        ("stripe-access-token", "sk_" + "test_" + chars(ALNUM, 24)),
        ("stripe-access-token", "rk_" + "test_" + chars(ALNUM, 106)),  # past gitleaks' 99
        ("square-access-token", "EAAA" + chars(_URLSAFE, 60)),
        ("square-access-token", "sq0" + "atp-" + chars(_URLSAFE, 22)),
        ("shopify-token", "shp" + "at_" + chars(HEX, 32)),
        ("shopify-token", "shp" + "ss_" + chars(HEX, 32)),
        ("huggingface-access-token", "hf" + "_" + chars(UPPER + LOWER, 34)),
        ("huggingface-access-token", "api_" + "org_" + chars(UPPER + LOWER, 34)),
        ("perplexity-api-key", "pplx" + "-" + chars(ALNUM, 48)),
        ("aws-bedrock-api-key", "ABSK" + chars(B64, 132)),
        ("aws-bedrock-api-key", "bedrock-" + "api-key-" + bedrock),
        ("npm-access-token", "npm" + "_" + chars(ALNUM, 36)),
        ("npm-access-token", "npm" + "_" + chars(ALNUM, 36)),
        ("pypi-upload-token", "pypi-" + "AgEIcHlwaS5vcmc" + chars(_URLSAFE, 160)),
        ("pypi-upload-token", "pypi-" + "AgEIcHlwaS5vcmc" + chars(_URLSAFE, 1200)),
        ("rubygems-api-token", "rubygems" + "_" + chars(HEX, 48)),
        ("clojars-api-token", "CLOJARS" + "_" + chars(ALNUM, 60)),
        ("artifactory-token", "AKCp" + chars(ALNUM, 69)),
        ("artifactory-token", "cmVmd" + chars(ALNUM, 59)),
        ("sourcegraph-access-token", "sgp" + "_" + chars(HEX, 16) + "_" + chars(HEX, 40)),
        ("sourcegraph-access-token", "sgp" + "_local_" + chars(HEX, 40)),
        ("sourcegraph-access-token", "sgp" + "_" + chars(HEX, 40)),
        ("digitalocean-token", "dop" + "_v1_" + chars(HEX, 64)),
        ("digitalocean-token", "doo" + "_v1_" + chars(HEX, 64)),
        ("alibaba-access-key-id", "LTAI" + chars(ALNUM, 20)),
        ("azure-ad-client-secret", chars(ALNUM, 3) + digits(1) + "Q~" + chars(ALNUM + "_~.-", 34)),
        ("flyio-access-token", "fo1" + "_" + chars(_URLSAFE, 43)),
        ("flyio-access-token", "fm2" + "_" + chars(B64, 300) + "=="),
        ("heroku-api-key", "HRKU" + "-AA" + chars(_URLSAFE, 58)),
        ("hashicorp-tf-api-token", chars(ALNUM, 14) + ".atlas" + "v1." + chars(ALNUM, 67)),
        ("vault-token", "hvs" + "." + chars(_URLSAFE, 95)),
        ("vault-token", "hvb" + "." + chars(_URLSAFE, 150)),
        ("doppler-api-token", "dp.pt" + "." + chars(ALNUM, 43)),
        ("pulumi-api-token", "pul" + "-" + chars(HEX, 40)),
        ("planetscale-token", "pscale" + "_tkn_" + chars(ALNUM + "_", 43)),
        ("planetscale-token", "pscale" + "_pw_" + chars(ALNUM + "_", 43)),
        ("databricks-api-token", "dapi" + chars(HEX, 32)),
        ("databricks-api-token", "dapi" + chars(HEX, 32) + "-2"),
        ("grafana-token", "eyJrIjoi" + chars(ALNUM, 80) + "="),
        ("grafana-token", "glc" + "_" + chars(B64, 120) + "=="),
        ("grafana-token", "glsa" + "_" + chars(ALNUM, 32) + "_" + chars(HEX, 8)),
        ("cloudflare-origin-ca-key", "v1.0" + "-" + chars(HEX, 24) + "-" + chars(HEX, 146)),
        ("openshift-user-token", "sha256" + "~" + chars(_URLSAFE, 43)),
        (
            "dynatrace-api-token",
            "dt0c01" + "." + chars(UPPER + DIGITS, 24) + "." + chars(ALNUM, 64),
        ),
        ("1password-service-account-token", "ops" + "_eyJ" + chars(B64, 300)),
        ("age-secret-key", "AGE-SECRET" + "-KEY-1" + chars("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
        ("sentry-token", "sntryu" + "_" + chars(HEX, 64)),
        ("sentry-token", "sntrys" + "_" + sentry + "_" + chars(ALNUM + "+/", 43)),
        ("prefect-api-token", "pnu" + "_" + chars(ALNUM, 36)),
        ("sendgrid-api-token", "SG" + "." + chars(_URLSAFE, 22) + "." + chars(_URLSAFE, 43)),
        ("linear-api-key", "lin_" + "api_" + chars(ALNUM, 40)),
        ("notion-api-token", "ntn" + "_" + digits(11) + chars(ALNUM, 35)),
        ("postman-api-token", "PMAK" + "-" + chars(HEX, 24) + "-" + chars(HEX, 34)),
        ("gitlab-token", "gloas" + "-" + chars(_URLSAFE, 64)),
        ("gitlab-token", "glffct" + "-" + chars(_URLSAFE, 20)),
        ("gitlab-token", "GR1348941" + chars(_URLSAFE, 20)),
        ("gitlab-token", "glpat" + "-" + chars(_URLSAFE, 27) + "." + "01" + chars(HEX, 7)),
        ("jwt", _jwt()),
        ("jwt", _jwt(signed=False)),
    ]


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
        # the other spellings (issue 42, item 9): the CLI's own, the SDKs' variables, a flag
        (
            "aws-secret-access-key",
            secrets[4],
            f"aws configure set aws_secret_access_key {secrets[4]}",
        ),
        ("aws-secret-access-key", secrets[5], f"AWS_SECRET_KEY={secrets[5]}"),
        ("aws-secret-access-key", secrets[6], f'export AWS_SECRET="{secrets[6]}"'),
        ("aws-secret-access-key", secrets[7], f"s3cmd --secret-access-key {secrets[7]} ls"),
        ("aws-secret-access-key", secrets[8], f"tool --aws-secret-key={secrets[8]}"),
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
    for rule, key in _providers():
        out += [
            (rule, key, f"export SOME_TOKEN={key}"),
            (rule, key, f'{{"token": "{key}", "note": "from the settings page"}}'),
        ]
    teams = (
        "https://acme.webhook.office.com/webhookb2/"
        + _uuid()
        + "@"
        + _uuid()
        + "/IncomingWebhook/"
        + chars(LOWER + DIGITS, 32)
        + "/"
        + _uuid()
    )
    out.append(("microsoft-teams-webhook", teams, f"curl -H 'Content-Type: json' {teams}"))
    bot = digits(10) + ":A" + chars(_URLSAFE, 34)
    out += [
        ("telegram-bot-api-token", bot, f"TELEGRAM_BOT_TOKEN={bot}\n"),
        ("telegram-bot-api-token", bot, f'telegram_token: "{bot}"'),
    ]
    jwt = _jwt()
    out.append(("jwt", jwt, f'{{"id_token": "{jwt}", "expires_in": 3600}}'))
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
        "aws configure set aws_secret_access_key YOUR_SECRET_ACCESS_KEY_GOES_HERE",
        "AWS_SECRET=$AWS_SECRET and AWS_SECRET_KEY=${AWS_SECRET_KEY} and --secret-access-key $S",
        "the AWS secret access key you were given and the aws_secret setting, documented",
        f"the secret access key was rotated in commit {sha}; the secret access key {sha}",
        "AWS_SECRET_KEY_ID and aws-secret-manager and --secret-access-key-file ~/keys.txt",
        f"def test_{'a' * 40}(): pass",
        "password: hunter2 (in prose, not a URL)",
        "[REDACTED:openai-api-key] and [REDACTED:url-password] stay as they are",
        "https://user:[REDACTED:url-password]@host/",
        "Authorization: Bearer [REDACTED:bearer-token]",
        # look-alikes of the provider formats
        "sk_" + "live_" + "abc123 is too short; the sk_live_ and rk_live_ prefixes are Stripe's",
        "STRIPE_KEY=sk_" + "test_" + "x" * 24 + " and sk_" + "test_placeholder_value",
        "from huggingface_hub import hf_hub_download; hf_hub_download(repo_id='gpt2')",
        "pip install hf_transfer; set HF_TOKEN to your hf_ token; "
        + "hf_"
        + "abcdefghijklmnopqrstuvwxyzabcdefgh",
        "npm_config_cache=~/.npm npm_package_version=1.2.3 process.env.npm_lifecycle_event",
        "npm_" + "a" * 36 + " and NPM_TOKEN=${NPM_TOKEN}",
        "pypi-" + "AgEIcHlwaS5vcmc is where every PyPI token starts; see pypi-attestations",
        "eyJ" + "hbGciOi.eyJ" + "zdWIi.c2ln is JWT-shaped but too short",
        "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9 alone is a header, not a token",
        "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.payload_not_base64_json.signature_here",
        "the rapidapi client, the SG.Utils module, Q~ in prose, pul-l, ntn_ and sgp_ prefixes",
        "version v1.0-beta, sha256~ in a digest list, AGE-SECRET-KEY-1 starts an age key",
        "EAAA" + "A" * 40 + " is padding, LTAI" + "1234 is too short",
        "https://acme.webhook.office.com/webhookb2/ is the Teams webhook base",
        "a short-lived Bedrock key starts bedrock-" + "api-key-YmVkcm9jay5hbWF6b25hd3MuY29t",
        "TELEGRAM_BOT_TOKEN=$TELEGRAM_BOT_TOKEN and telegram: 12345",
        f"dapi{hashlib.md5(b'x').hexdigest()[:8]} and glpat-placeholder and GR1348941short",
    ]


NEGATIVES: list[str] = _negatives()
