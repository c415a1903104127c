"""Notes said once per model in a home, never at every chat start or session switch.

"the server does not list model M" and "no price known for model M" are worth saying
the first time; said at every start they are noise. What was said is remembered in
`<home>/notes_said.json`: `{"format": 1, "said": {KIND: [KEY, ...]}}` (a key is the
model, or the endpoint and the model), a private file rewritten whole (temporary file,
rename). Deleting the file makes every note say itself once more.

Invariants:
- A home that cannot be read or written never stops anything: the note is then said
  (and remembered when it can be).
- Standard library only, and `json` imported when a note is due: `chat` asks before its
  first prompt is answered.
"""

import contextlib
import os
from pathlib import Path

FILE = "notes_said.json"


def first_time(home: Path, kind: str, key: str) -> bool:
    """Whether note `kind` about `key` was never said in `home`; it is remembered as
    said from now on."""
    # json: 11 ms before a chat's prompt, which needs it only the first time
    import json

    path = home / FILE
    said: dict[str, list[str]] = {}
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and isinstance(data.get("said"), dict):
            said = {
                k: [x for x in v if isinstance(x, str)]
                for k, v in data["said"].items()
                if isinstance(v, list)
            }
    if key in said.get(kind, []):
        return False
    said.setdefault(kind, []).append(key)
    temp = path.with_name(f"{FILE}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump({"format": 1, "said": said}, file, ensure_ascii=False)
        os.replace(temp, path)
    with contextlib.suppress(OSError):
        temp.unlink(missing_ok=True)
    return True
