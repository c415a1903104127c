"""Compaction bench: how small, how fast, and how many must-keep facts survive.

Invariant: the bench only reads bench/fixtures/*.json and writes one JSON report; it never
touches a session store. Each fixture is compacted in manual mode (clear, then summarize)
with the real `compact` and the real token counter, so the numbers are the ones a user
would see. A fact survives when it is an exact substring of the compacted context's text
(message contents plus tool-call arguments: what the model reads next). Each kept fact is
reported by where it survived: in a message kept verbatim (or a pin), in the ledger
gitsessions copies into the continuation note (paths, commands, plan), or only in the
summarizer's prose. `prose-only-facts` holds facts no ledger can keep (a constraint in
the middle of a long user message, a decision in a reply, an error inside a log).

Without --base-url the summarizer is a deterministic local extractive one (first lines of
the user messages and the first line of each assistant reply), so CI checks the plumbing;
the report says which summarizer ran.

    uv run python bench/compaction.py
    uv run python bench/compaction.py --base-url http://localhost:11434/v1 --model gemma4
"""

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gitsessions.services.compaction.compaction import Summarize, compact
from gitsessions.services.compaction.compaction_policy import CompactionError, Policy
from gitsessions.services.compaction.continuation import (
    SummaryRequest,
    SummaryResult,
    is_note,
    note_data,
)
from gitsessions.services.compaction.ledger import LEDGER_HEADING
from gitsessions.values.messages import text_of

ROOT = Path(__file__).parent
LOCAL = "local-extractive"
SOURCES = ("kept", "ledger", "summary")


def local_summarizer(request: SummaryRequest) -> SummaryResult:
    """Extractive and deterministic: user lines first, then assistant headlines."""
    data = json.loads(request.messages[1]["content"])
    budget = request.max_tokens * 4  # characters, about max_tokens tokens
    lines: list[str] = []
    if data.get("previous_summary"):
        lines.append("Earlier: " + data["previous_summary"].split("\n", 1)[0][:300])
    for message in data["messages"]:
        if message.get("role") == "user":
            text = [line.strip() for line in text_of(message).splitlines() if line.strip()]
            lines += [f"User: {line[:300]}" for line in text[:4]]
    for message in data["messages"]:
        if message.get("role") == "assistant" and text_of(message).strip():
            lines.append(f"Assistant: {text_of(message).strip().splitlines()[0][:200]}")
    kept: list[str] = []
    for line in lines:
        if sum(len(k) + 1 for k in kept) + len(line) > budget:
            break
        kept.append(line)
    return SummaryResult("\n".join(kept), LOCAL)


def model_summarizer(base_url: str, model: str, api_key: str) -> tuple[Summarize, Any]:
    """A summarizer backed by the real model client (imported only when asked for)."""
    from gitsessions.services.model.model import ModelClient
    from gitsessions.services.settings.config import ModelSettings

    settings = ModelSettings(model=model, base_url=base_url, api_key=api_key, summary_model=model)
    client = ModelClient(settings)

    def summarize(request: SummaryRequest) -> SummaryResult:
        completion = client.complete(
            request.messages, temperature=request.temperature, max_tokens=request.max_tokens
        )
        usage = completion.usage
        return SummaryResult(
            text_of(completion.message),
            completion.model,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
        )

    return summarize, client


def token_counter() -> tuple[Any, str]:
    """The project's counter; len(json)/4 only if it cannot be imported."""
    try:
        from gitsessions.values.tokens import TokenCounter
    except ImportError:
        return (lambda messages: len(json.dumps(list(messages))) // 4), "estimate:json/4"
    counter = TokenCounter()
    return counter.count_context, counter.method


def context_text(messages: Sequence[dict[str, Any]]) -> str:
    parts: list[str] = []
    for message in messages:
        parts.append(text_of(message))
        parts += [str(c["function"].get("arguments", "")) for c in message.get("tool_calls") or []]
    return "\n".join(parts)


def fact_source(fact: str, messages: Sequence[dict[str, Any]]) -> str:
    """Where a kept fact survives, the first of: "kept" (a message kept verbatim, pins
    included), "ledger" (the note's ledger: paths, commands, plan, copied by
    gitsessions), "summary" (only the summarizer's prose keeps it)."""
    kept = context_text([m for m in messages if not is_note(m)])
    if fact in kept:
        return "kept"
    notes = "\n".join(note_data(m) for m in messages if is_note(m))
    summary, _, ledger = notes.partition(LEDGER_HEADING)
    if fact in ledger:
        return "ledger"
    return "summary" if fact in summary else "?"


def run_fixture(
    path: Path, policy: Policy, summarize: Summarize, count: Any, focus: str | None
) -> dict[str, Any]:
    fixture = json.loads(path.read_text(encoding="utf-8"))
    messages = fixture["messages"]
    facts: list[str] = fixture["facts"]
    row: dict[str, Any] = {"name": fixture["name"], "before_tokens": count(messages)}
    started = time.perf_counter()
    try:
        result = compact(
            messages, policy, summarize, count, mode="manual", focus=focus,
            transcript=messages, plan=fixture.get("plan", []), pins=fixture.get("pins", []),
        )  # fmt: skip
    except CompactionError as error:
        row.update(seconds=round(time.perf_counter() - started, 3), error=str(error))
        row.update(after_tokens=None, ratio=None, facts_kept=0, facts_total=len(facts))
        row["facts_missing"] = facts
        return row
    seconds = time.perf_counter() - started
    text = context_text(result.messages)
    missing = [fact for fact in facts if fact not in text]
    sources = {fact: fact_source(fact, result.messages) for fact in facts if fact not in missing}
    row.update(
        by_kept=sum(1 for where in sources.values() if where == "kept"),
        by_ledger=sum(1 for where in sources.values() if where == "ledger"),
        by_summary=sum(1 for where in sources.values() if where == "summary"),
        sources=sources,
    )
    row.update(
        after_tokens=result.after_tokens,
        ratio=round(result.before_tokens / max(result.after_tokens, 1), 2),
        seconds=round(seconds, 3),
        facts_kept=len(facts) - len(missing),
        facts_total=len(facts),
        facts_missing=missing,
        stages=list(result.stages),
        cleared=len(result.cleared),
        summarized_messages=result.summarized,
        over_limit=result.over_limit,
        usage=result.usage,
        summary_chars=len(result.summary or ""),
        notes=list(result.notes),
    )
    return row


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        f"{'fixture':<24} {'before':>7} {'after':>6} {'ratio':>6} {'secs':>6}  facts"
        "  (kept/ledger/summary)"
    )
    lines = [head, "-" * len(head)]
    for row in rows:
        if row.get("error"):
            lines.append(f"{row['name']:<24} {row['before_tokens']:>7}  FAILED: {row['error']}")
            continue
        facts = f"{row['facts_kept']}/{row['facts_total']}"
        facts += f"   ({row['by_kept']}/{row['by_ledger']}/{row['by_summary']})"
        lines.append(
            f"{row['name']:<24} {row['before_tokens']:>7} {row['after_tokens']:>6} "
            f"{row['ratio']:>5.1f}x {row['seconds']:>6.2f}  {facts}"
        )
        lines += [f"{'':<24} missing: {fact}" for fact in row["facts_missing"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint for the summarizer")
    parser.add_argument("--model", default="gemma4", help="summarizer model (with --base-url)")
    parser.add_argument("--api-key", default="not-needed", help="API key for --base-url")
    parser.add_argument("--fixtures", type=Path, default=ROOT / "fixtures")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "compaction.json")
    parser.add_argument("--max-context-tokens", type=int, default=24000)
    parser.add_argument("--focus", help="focus text passed to the summarizer")
    args = parser.parse_args(argv)

    count, count_method = token_counter()
    policy = Policy(max_context_tokens=args.max_context_tokens)
    client = None
    if args.base_url:
        summarize, client = model_summarizer(args.base_url, args.model, args.api_key)
        summarizer = f"model {args.model} at {args.base_url}"
    else:
        summarize, summarizer = local_summarizer, f"{LOCAL} (deterministic, no model)"
    paths = sorted(args.fixtures.glob("*.json"))
    if not paths:
        print(f"no fixtures in {args.fixtures}", file=sys.stderr)
        return 1
    try:
        rows = [run_fixture(path, policy, summarize, count, args.focus) for path in paths]
    finally:
        if client is not None:
            client.close()

    print(f"summarizer: {summarizer}")
    print(f"token count: {count_method}; max_context_tokens {policy.max_context_tokens}")
    print(table(rows))
    kept = sum(row["facts_kept"] for row in rows)
    total = sum(row["facts_total"] for row in rows)
    by = {where: sum(row.get(f"by_{where}", 0) for row in rows) for where in SOURCES}
    print(
        f"facts kept overall: {kept}/{total}: {by['kept']} in kept messages or pins, "
        f"{by['ledger']} by the ledger (copied by gitsessions), {by['summary']} by the "
        "summary alone"
    )
    if not args.base_url:
        print(
            "the summary half needs a real model endpoint (--base-url): the local "
            "summarizer only copies first lines, so its count checks the plumbing, not "
            "what a model keeps; prose-only-facts holds facts only a summary can keep"
        )
    report = {
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "summarizer": summarizer,
        "token_count": count_method,
        "policy": dataclasses.asdict(policy),
        "facts_kept": kept,
        "facts_total": total,
        "facts_by": by,
        "fixtures": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0 if all(not row.get("error") for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
