"""Notes said once per model in a home (the server not listing the model, no price known),
remembered in `<home>/notes_said.json` (rewritten whole: temporary file, rename);
deleting it makes every note say itself once more.

Invariants: a home that cannot be read or written never stops anything (the note is
then said); standard library only, `json` imported when a note is due (`chat` asks
before its first prompt is answered).
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
