"""A quick look at the model server before the first request: is it there, which models
does it list. Standard library only, so `chat` can say so before its prompt without
waiting for the openai package to import (a background thread imports it meanwhile).

Invariant: `probe` never raises for what the server does; it returns what it learned.
The API key is sent as the real requests send it and never appears in a message.
"""

import json
import urllib.error
import urllib.request
from dataclasses import dataclass

from gitsessions.services.config import DEFAULT_BASE_URL, ModelSettings

PROBE_SECONDS = 5.0


@dataclass(frozen=True)
class Probe:
    unreachable: str | None = None  # why the server could not be reached, one line
    models: tuple[str, ...] | None = None  # what GET /models listed (None: no list)


def probe(settings: ModelSettings) -> Probe:
    """GET {base_url}/models within a few seconds."""
    url = settings.base_url.rstrip("/") + "/models"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {settings.api_key}"})
    try:
        with urllib.request.urlopen(request, timeout=min(settings.timeout, PROBE_SECONDS)) as r:
            body = json.loads(r.read(1_000_000))
    except urllib.error.HTTPError:
        return Probe()  # some servers have no /models; the first request will tell
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", None) or error
        where = f"(base URL from {settings.sources.get('base_url', 'settings')})"
        return Probe(
            unreachable=f"cannot reach the model server at {settings.base_url}: {reason} "
            f"{where}; check --base-url or GITSESSIONS_BASE_URL"
        )
    except ValueError:  # not JSON
        return Probe()
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return Probe()
    ids = sorted(str(m["id"]) for m in data if isinstance(m, dict) and "id" in m)
    return Probe(models=tuple(ids))


def is_default_endpoint(settings: ModelSettings) -> bool:
    """Whether the settings point at the built-in default, Ollama on this machine."""
    return settings.base_url == DEFAULT_BASE_URL


OLLAMA_HINT = (
    "gitsessions talks to Ollama at {url} by default: start it with `ollama serve`, then "
    "`ollama pull {model}`; or point elsewhere with --base-url and --model (or "
    "GITSESSIONS_BASE_URL and GITSESSIONS_MODEL, or base_url and model in {config})"
)
