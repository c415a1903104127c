"""A remote's index of sessions by project, `refs/gitsessions/projects/<key>/<id>` (naming
the branch's commit), so `pull --here` fetches one project's refs by prefix alone.

Invariants:
- A key is a root commit id of the project or `url-` + SHA-1 of a normalised remote
  URL; a session is indexed under every key of its identity. Keys and ids are checked
  before they make a ref name.
- Written only by a push, beside the branch it indexes (same compare-and-swap), pruned
  with it. It is a hint: what a pull brings is judged as any pull's, so a stale or forged
  entry can leave a session out or bring one a whole pull would, never lose anything.
"""

import hashlib
import re
from collections.abc import Mapping, Sequence

from gitsessions.values.ids import is_session_id

PROJECTS = b"refs/gitsessions/projects/"
_ROOT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
MOST_KEYS = 32


def keys(identity: Mapping[str, Sequence[str]] | None) -> list[bytes]:
    """The index keys of a project identity (`{"roots", "remotes"}`), sorted."""
    if not identity:
        return []
    found = {root.encode() for root in identity.get("roots", ()) if _ROOT.fullmatch(root)}
    found |= {
        b"url-" + hashlib.sha1(url.encode("utf-8", "replace")).hexdigest().encode()
        for url in identity.get("remotes", ())
        if url
    }
    return sorted(found)[:MOST_KEYS]


def refs_of(session_id: str, identity: Mapping[str, Sequence[str]] | None) -> list[bytes]:
    """The index refs naming `session_id` under each key of `identity`."""
    assert is_session_id(session_id), session_id
    return [PROJECTS + key + b"/" + session_id.encode() for key in keys(identity)]


def session_of(ref: bytes) -> str | None:
    """The session id an index ref names, or None for anything else."""
    if not ref.startswith(PROJECTS):
        return None
    key, _, tail = ref[len(PROJECTS) :].partition(b"/")
    sid = tail.decode("ascii", "replace")
    if not key or b"/" in tail or not is_session_id(sid):
        return None
    return sid
