"""Redaction: our rule table against detect-secrets, on the test corpus and on 1 MB of
transcript-like text.

    uv run python bench/secret_rules.py                              # our rules only
    uv run --with detect-secrets==1.5.0 python bench/secret_rules.py  # and detect-secrets

Reports, for each, positives caught (the value gone from the text), look-alikes flagged
(false positives), and seconds to scan 1 MB with and without secrets in it; for our
rules also hostile input: every rule's hint repeated and glued to long runs (about 100 KB
a text), the slowest text in microseconds per character and the whole run in seconds
(linear rules stay well under a microsecond a character). Prints a table and writes
bench/results/secrets.json.
"""

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from secrets_corpus import NEGATIVES, POSITIVES  # noqa: E402

from gitsessions.values.secrets import RULES, redact  # noqa: E402

# detect-secrets without its entropy and keyword plugins (they flag most identifiers)
DS_PLUGINS = [
    "AWSKeyDetector",
    "GitHubTokenDetector",
    "GitLabTokenDetector",
    "OpenAIDetector",
    "PrivateKeyDetector",
    "SlackDetector",
    "BasicAuthDetector",
    "JwtTokenDetector",
    "StripeDetector",
    "NpmDetector",
    "PypiTokenDetector",
    "SendGridDetector",
    "SquareOAuthDetector",
    "ArtifactoryDetector",
    "TelegramBotTokenDetector",
]
DS_NOISY = ["Base64HighEntropyString", "HexHighEntropyString", "KeywordDetector"]


def filler(size: int) -> str:
    """Transcript-like text: code, shell output, prose, hashes, URLs; no secrets."""
    block = "\n".join(
        [
            "def handle(request):  # task-list: ask-for-review",
            '    url = "https://api.example.com/v1/items?page=2"',
            "$ git log --oneline\n3f2a9c1d4e5b6a7c8d9e0f1a2b3c4d5e6f7a8b9c fix the parser",
            "The Bearer token goes in the header; see https://user@example.com/docs.",
            '{"id": "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d", "sha": "e3b0c44298fc1c149afbf4c8"}',
            'Traceback (most recent call last):\n  File "app.py", line 12, in <module>',
        ]
    )
    return (block + "\n") * (size // (len(block) + 1) + 1)


def ours(text: str) -> tuple[str, dict[str, int]]:
    return redact(text)


def detect_secrets_redactor(plugins: list[str]) -> Any:
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import transient_settings

    settings = {"plugins_used": [{"name": name} for name in plugins]}

    def run(text: str) -> tuple[str, dict[str, int]]:
        found: dict[str, int] = {}
        lines = []
        with transient_settings(settings):
            for line in text.split("\n"):
                for secret in scan_line(line):
                    value = secret.secret_value
                    if value and value in line:
                        line = line.replace(value, f"[REDACTED:{secret.type}]")
                        found[secret.type] = found.get(secret.type, 0) + 1
                lines.append(line)
        return "\n".join(lines), found

    return run


def measure(name: str, run: Any) -> dict[str, Any]:
    caught = missed = 0
    missed_rules: dict[str, int] = {}
    for rule, value, text in POSITIVES:
        new, _found = run(text)
        leaked = value in new or any(len(ln) >= 16 and ln in new for ln in value.split("\n"))
        if leaked or not _found:  # a key block's body lines count too
            missed += 1
            missed_rules[rule] = missed_rules.get(rule, 0) + 1
        else:
            caught += 1
    false_positives = sum(1 for text in NEGATIVES if run(text)[1])
    clean = filler(1_000_000)
    dirty_lines = clean.split("\n")
    step = max(1, len(dirty_lines) // len(POSITIVES))
    for n, (_rule, _value, text) in enumerate(POSITIVES):
        dirty_lines.insert(n * step, text)
    dirty = "\n".join(dirty_lines)
    timings = {}
    for label, text in (("clean_1mb_s", clean), ("with_secrets_1mb_s", dirty)):
        started = time.perf_counter()
        _new, found = run(text)
        timings[label] = round(time.perf_counter() - started, 4)
        if label == "clean_1mb_s":
            timings["clean_1mb_false_positives"] = sum(found.values())
    return {
        "name": name,
        "positives": len(POSITIVES),
        "caught": caught,
        "missed": missed,
        "missed_by_rule": missed_rules,
        "negatives": len(NEGATIVES),
        "false_positives": false_positives,
        **timings,
    }


def hostile() -> dict[str, Any]:
    """Each hint glued to runs of token characters, separators and itself."""
    worst = (0.0, "")
    started = time.perf_counter()
    for hint in sorted({h for rule in RULES for h in rule.hints}):
        for body in ("a", "A1", "-", "."):
            for text in (
                (hint + body * 3000 + " ") * 33,
                (hint + body * 20) * 5000,
                (hint + body * 20 + ".") * 5000,
                hint * (100_000 // len(hint)),
            ):
                at = time.perf_counter()
                redact(text)
                per_char = (time.perf_counter() - at) / len(text) * 1e6
                worst = max(worst, (per_char, hint))
    return {
        "hostile_worst_us_per_char": round(worst[0], 3),
        "hostile_worst_hint": worst[1],
        "hostile_total_s": round(time.perf_counter() - started, 2),
    }


COLUMNS = (
    ("name", "rules"),
    ("caught", "caught"),
    ("positives", "of"),
    ("false_positives", "look-alikes hit"),
    ("negatives", "of"),
    ("clean_1mb_s", "clean 1 MB s"),
    ("with_secrets_1mb_s", "with secrets 1 MB s"),
    ("hostile_worst_us_per_char", "hostile worst us/char"),
)


def table(results: list[dict[str, Any]]) -> str:
    rows = [[title for _key, title in COLUMNS]]
    rows += [[str(r.get(key, "-")) for key, _title in COLUMNS] for r in results]
    widths = [max(len(row[n]) for row in rows) for n in range(len(COLUMNS))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows
    )


def main() -> None:
    results = [measure("gitsessions rules", ours) | hostile()]
    try:
        import detect_secrets  # noqa: F401
    except ImportError:
        print("detect-secrets not installed: `uv run --with detect-secrets==1.5.0 ...`")
    else:
        results.append(measure("detect-secrets (focused)", detect_secrets_redactor(DS_PLUGINS)))
        results.append(
            measure(
                "detect-secrets (+entropy, keyword)",
                detect_secrets_redactor(DS_PLUGINS + DS_NOISY),
            )
        )
    for result in results:
        print(json.dumps(result))
    print(table(results))
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "secrets.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
