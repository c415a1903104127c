"""Provider secret formats, as data: one row per provider, following gitleaks' provider
rules (gitleaks v8.30.0, MIT licence), each row naming its gitleaks rule ids; the
patterns are written here for Python's `re` (ASCII classes, bounded repetitions), not
copied. `values/secrets.py` turns the rows into rules.

Invariants (`tests/test_redact.py` checks the first two):
- Every match holds one of its row's `hints`, so a text holding none is never searched.
- Every repetition is bounded and a token may not start inside a longer identifier, so
  no pattern backtracks more than linearly on hostile input.
- Only self-identifying formats (a distinctive prefix): rules that flag a bare hex or
  base64 string near a word are left out, as they would flag hashes and ids.
- `check` names a test a random key passes and a word, placeholder or name does not.
"""

import re
from typing import NamedTuple

GITLEAKS_VERSION = "v8.30.0"

EDGE = r"[A-Za-z0-9_\-]"  # a token may not be glued to one of these, before or after
E = r"(?!" + EDGE + ")"
B64_EDGE = r"[A-Za-z0-9+/_\-]"  # the same inside base64 text
B64_E = r"(?![A-Za-z0-9+/=_\-])"
UUID = r"[a-z0-9]{8}-(?:[a-z0-9]{4}-){3}[a-z0-9]{12}"


class Provider(NamedTuple):
    """One provider's secrets: `[REDACTED:<name>]` replaces a match (or its `group`)."""

    name: str
    gitleaks: tuple[str, ...]  # the gitleaks rule ids this row follows
    pattern: str
    hints: tuple[str, ...]  # literals one of which every match holds
    check: str = ""  # "mixed", "cased", "digit-letter" (values/secrets.py), or none
    group: int = 0
    lower_hints: bool = False  # hints are matched against the lowercased text


def _token(prefixes: tuple[str, ...], body: str, end: str = E, edge: str = EDGE) -> str:
    """One of the literal `prefixes`, not glued to a longer identifier before it, then
    `body`, not glued to one after it. The prefix comes first and the look at the
    character before it right after it: the engine then finds candidates by the prefix
    alone (a pattern opening with a lookbehind is tried at every position, about 30
    times slower on a megabyte)."""
    starts = "|".join(re.escape(p) + "(?<!" + edge + re.escape(p) + ")" for p in prefixes)
    return "(?:" + starts + ")" + body + end


def _either(*patterns: str) -> str:
    return "(?:" + "|".join(patterns) + ")"


STRIPE = ("sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_")
SHOPIFY = ("shpat_", "shpca_", "shppa_", "shpss_")
BEDROCK = "bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t"  # base64 of bedrock.amazonaws.com
DIGITALOCEAN = ("doo_v1_", "dop_v1_", "dor_v1_")
PLANETSCALE = ("pscale_tkn_", "pscale_oauth_", "pscale_pw_")

PROVIDERS: tuple[Provider, ...] = (
    # -- payment ---------------------------------------------------------------------
    Provider(
        "stripe-access-token",
        ("stripe-access-token",),
        # gitleaks stops at 99 characters; Stripe documents keys of up to 255
        _token(STRIPE, r"[A-Za-z0-9]{10,247}"),
        STRIPE,
        check="mixed",
    ),
    Provider(
        "square-access-token",
        ("square-access-token",),
        _token(("EAAA", "sq0atp-"), r"[A-Za-z0-9_\-]{22,60}"),
        ("EAAA", "sq0atp-"),
        check="mixed",
    ),
    Provider(
        "shopify-token",
        (
            "shopify-access-token",
            "shopify-custom-access-token",
            "shopify-private-app-access-token",
            "shopify-shared-secret",
        ),
        _token(SHOPIFY, r"[a-fA-F0-9]{32}"),
        SHOPIFY,
    ),
    # -- AI providers ------------------------------------------------------------------
    Provider(
        "huggingface-access-token",
        ("huggingface-access-token", "huggingface-organization-api-token"),
        _token(("hf_", "api_org_"), r"[A-Za-z]{34}"),
        ("hf_", "api_org_"),
        check="cased",
    ),
    Provider(
        "perplexity-api-key",
        ("perplexity-api-key",),
        _token(("pplx-",), r"[A-Za-z0-9]{48}"),
        ("pplx-",),
        check="digit-letter",
    ),
    Provider(
        "aws-bedrock-api-key",
        ("aws-amazon-bedrock-api-key-long-lived", "aws-amazon-bedrock-api-key-short-lived"),
        _either(
            _token(("ABSK",), r"[A-Za-z0-9+/]{109,269}={0,2}", B64_E, B64_EDGE),
            _token((BEDROCK,), r"[A-Za-z0-9+/]{100,8192}={0,2}", B64_E, B64_EDGE),
        ),
        ("ABSK", BEDROCK),
    ),
    # -- package registries ------------------------------------------------------------
    Provider(
        "npm-access-token",
        ("npm-access-token",),
        _token(("npm_",), r"[A-Za-z0-9]{36}"),
        ("npm_",),
        check="mixed",
    ),
    Provider(
        "pypi-upload-token",
        ("pypi-upload-token",),
        # "pypi-" and the base64 of the macaroon's location (PyPI's host); gitleaks stops
        # at 1,000 characters, a token with many caveats is longer
        _token(("pypi-AgEIcHlwaS5vcmc",), r"[A-Za-z0-9_\-]{50,4096}"),
        ("pypi-AgEIcHlwaS5vcmc",),
    ),
    Provider(
        "rubygems-api-token",
        ("rubygems-api-token",),
        _token(("rubygems_",), r"[a-f0-9]{48}"),
        ("rubygems_",),
    ),
    Provider(
        "clojars-api-token",
        ("clojars-api-token",),
        _token(("CLOJARS_",), r"[A-Za-z0-9]{60}"),
        ("CLOJARS_",),
    ),
    Provider(
        "artifactory-token",
        ("artifactory-api-key", "artifactory-reference-token"),
        _either(
            _token(("AKCp",), r"[A-Za-z0-9]{69}", B64_E, B64_EDGE),
            _token(("cmVmd",), r"[A-Za-z0-9]{59}", B64_E, B64_EDGE),
        ),
        ("AKCp", "cmVmd"),
        check="mixed",
    ),
    # -- VCS hosts (GitHub and GitLab: values/secrets.py's own rules) --------------------
    Provider(
        "sourcegraph-access-token",
        ("sourcegraph-access-token",),  # without its bare 40-hex form: a git commit id
        _token(("sgp_",), r"(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}"),
        ("sgp_",),
    ),
    # -- cloud and infrastructure ------------------------------------------------------
    Provider(
        "digitalocean-token",
        ("digitalocean-access-token", "digitalocean-pat", "digitalocean-refresh-token"),
        _token(DIGITALOCEAN, r"[a-f0-9]{64}"),
        DIGITALOCEAN,
    ),
    Provider(
        "alibaba-access-key-id",
        ("alibaba-access-key-id",),
        _token(("LTAI",), r"[A-Za-z0-9]{20}"),
        ("LTAI",),
        check="digit-letter",
    ),
    Provider(
        "azure-ad-client-secret",
        ("azure-ad-client-secret",),
        r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])",
        ("Q~",),
    ),
    Provider(
        "flyio-access-token",
        ("flyio-access-token",),
        _either(
            _token(("fo1_",), r"[A-Za-z0-9_\-]{43}", B64_E, B64_EDGE),
            _token(("fm1a_", "fm1r_", "fm2_"), r"[A-Za-z0-9+/]{100,8192}={0,3}", B64_E, B64_EDGE),
        ),
        ("fo1_", "fm1a_", "fm1r_", "fm2_"),
    ),
    Provider(
        "heroku-api-key",
        ("heroku-api-key-v2",),
        _token(("HRKU-AA",), r"[A-Za-z0-9_\-]{58}"),
        ("HRKU-AA",),
    ),
    Provider(
        "hashicorp-tf-api-token",
        ("hashicorp-tf-api-token",),
        "(?<!" + EDGE + r")[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,70}" + E,
        ("atlasv1",),
    ),
    Provider(
        "vault-token",
        ("vault-service-token", "vault-batch-token"),  # not the legacy `s.` form
        _either(
            _token(("hvs.",), r"[A-Za-z0-9_\-]{90,120}"),
            _token(("hvb.",), r"[A-Za-z0-9_\-]{138,300}"),
        ),
        ("hvs.", "hvb."),
    ),
    Provider(
        "doppler-api-token",
        ("doppler-api-token",),
        _token(("dp.pt.",), r"[A-Za-z0-9]{43}"),
        ("dp.pt.",),
    ),
    Provider(
        "pulumi-api-token",
        ("pulumi-api-token",),
        _token(("pul-",), r"[a-f0-9]{40}"),
        ("pul-",),
    ),
    Provider(
        "planetscale-token",
        ("planetscale-api-token", "planetscale-oauth-token", "planetscale-password"),
        _token(PLANETSCALE, r"[A-Za-z0-9_=.\-]{32,64}"),
        PLANETSCALE,
    ),
    Provider(
        "databricks-api-token",
        ("databricks-api-token",),
        _token(("dapi",), r"[a-f0-9]{32}(?:-[0-9])?"),
        ("dapi",),
        check="digit-letter",
    ),
    Provider(
        "grafana-token",
        ("grafana-api-key", "grafana-cloud-api-token", "grafana-service-account-token"),
        _either(
            _token(("eyJrIjoi",), r"[A-Za-z0-9]{70,400}={0,3}", B64_E, B64_EDGE),
            _token(("glc_",), r"[A-Za-z0-9+/]{32,400}={0,3}", B64_E, B64_EDGE),
            _token(("glsa_",), r"[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
        ),
        ("eyJrIjoi", "glc_", "glsa_"),
    ),
    Provider(
        "cloudflare-origin-ca-key",
        ("cloudflare-origin-ca-key",),
        _token(("v1.0-",), r"[a-f0-9]{24}-[a-f0-9]{146}"),
        ("v1.0-",),
    ),
    Provider(
        "openshift-user-token",
        ("openshift-user-token",),
        _token(("sha256~",), r"[A-Za-z0-9_\-]{43}"),
        ("sha256~",),
    ),
    Provider(
        "dynatrace-api-token",
        ("dynatrace-api-token",),
        _token(("dt0c01.",), r"[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
        ("dt0c01.",),
    ),
    Provider(
        "1password-service-account-token",
        ("1password-service-account-token",),
        _token(("ops_eyJ",), r"[A-Za-z0-9+/]{250,8192}={0,3}", B64_E, B64_EDGE),
        ("ops_eyJ",),
    ),
    Provider(
        "age-secret-key",
        ("age-secret-key",),
        _token(("AGE-SECRET-KEY-1",), r"[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
        ("AGE-SECRET-KEY-1",),
    ),
    Provider(
        "sentry-token",
        ("sentry-user-token", "sentry-org-token"),
        _either(
            _token(("sntryu_",), r"[a-f0-9]{64}"),
            _token(("sntrys_eyJ",), r"[A-Za-z0-9+/=]{30,1024}_[A-Za-z0-9+/]{43}", B64_E, B64_EDGE),
        ),
        ("sntryu_", "sntrys_eyJ"),
    ),
    Provider(
        "prefect-api-token",
        ("prefect-api-token",),
        _token(("pnu_",), r"[A-Za-z0-9]{36}"),
        ("pnu_",),
        check="digit-letter",
    ),
    # -- chat, webhooks, mail, issue trackers -------------------------------------------
    Provider(
        "microsoft-teams-webhook",
        ("microsoft-teams-webhook",),
        r"https://[a-z0-9]{1,63}\.webhook\.office\.com/webhookb2/"
        + UUID
        + "@"
        + UUID
        + r"/IncomingWebhook/[a-z0-9]{32}/"
        + UUID,
        ("webhook.office.com",),
    ),
    Provider(
        "telegram-bot-api-token",
        ("telegram-bot-api-token",),  # like gitleaks: only next to a word naming Telegram
        r"(?i:telegr)[A-Za-z0-9_. \t\-]{0,20}[\"']{0,3}[ \t]{0,3}(?:=>|:=|=|:|,)[ \t\"'`=]{0,5}"
        r"([0-9]{5,16}:A[A-Za-z0-9_\-]{34})" + E,
        ("telegr",),
        group=1,
        lower_hints=True,
    ),
    Provider(
        "sendgrid-api-token",
        ("sendgrid-api-token",),
        _token(("SG.",), r"[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"),
        ("SG.",),
    ),
    Provider(
        "linear-api-key",
        ("linear-api-key",),
        _token(("lin_api_",), r"[A-Za-z0-9]{40}"),
        ("lin_api_",),
    ),
    Provider(
        "notion-api-token",
        ("notion-api-token",),
        _token(("ntn_",), r"[0-9]{11}[A-Za-z0-9]{35}"),
        ("ntn_",),
    ),
    Provider(
        "postman-api-token",
        ("postman-api-token",),
        _token(("PMAK-",), r"[a-fA-F0-9]{24}-[a-fA-F0-9]{34}"),
        ("PMAK-",),
    ),
)

# A bare JWT (`eyJ…` header, `.eyJ…` payload, `.` and a signature, empty when unsigned):
# after `bearer-token` in the rule order, so a JWT after `Bearer` keeps that rule's name.
JWT = Provider(
    "jwt",
    ("jwt",),
    _token(
        ("eyJ",),
        r"[A-Za-z0-9_\-]{16,8192}\.eyJ[A-Za-z0-9_\-]{16,16384}\.(?:[A-Za-z0-9_\-]{10,2048}={0,2})?",
        r"(?![A-Za-z0-9_\-=])",  # a period after it ends a sentence
    ),
    ("eyJ",),
)
