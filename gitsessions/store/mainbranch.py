"""`refs/heads/main`: the one branch that is not a session, a README for stock git.

Invariants:
- `HEAD` names `refs/heads/main`, and `main` holds exactly one commit (no parent, no
  `Session:` trailer) whose tree is `README.md`: what this repository is and how to read
  it. So `git log`, `git clone` and `git fsck` of the store find a branch, never an
  unborn HEAD, and `doctor` never takes it for a session.
- It is written once, objects first and the ref by `add_if_new`; it is never moved
  afterwards. gc and purge walk every ref under `refs/`, so it is never pruned.
"""

from dulwich.objects import Blob, Commit, Tree

MAIN_REF = b"refs/heads/main"
AUTHOR = b"gitsessions <gitsessions@localhost>"
SUBJECT = "gitsessions store: see README.md"

README = """\
# A gitsessions store

This is the bare git repository in which gitsessions, a command-line coding agent,
keeps its sessions. It is written by gitsessions; read it with stock git, but do not
commit here: a session's branch only moves by gitsessions' compare-and-swap, and a
commit made by hand is not part of any session.

This branch, `main`, holds only this README. Every session is its own branch:

    refs/heads/sessions/<id>        <id> is 32 lowercase hex characters

and every change to a session is one commit on it. A session's tree:

| file | holds |
| --- | --- |
| `session.json` | the header: format, id, title, parent, times, workspace, model, counts, usage |
| `context.json` | the working context (sent to the model next), as transcript line numbers |
| `context-inline.json` | the context's messages the transcript does not hold (compaction's note) |
| `transcript/...` | the full record, a record per line (`{"message", "time", ...}`) |
| `compactions.json` | one record per compaction of the working context |
| `plan.json`, `pins.json` | the plan, pinned notes |

All JSON is canonical (sorted keys, UTF-8), so `git diff` between two commits is readable;
each file names its format (`"format": "gitsessions.plan/2"`).

Each commit message is a subject saying what happened (`turn 13.2: read_file app.py`),
then trailers: `Session: <id>` and `Event: <create|turn|compact|fork|rename|...>` on
every commit, and per event `Turn`, `Step`, `Workspace-Head`, `Tokens-Before`,
`Tokens-After`, `Parent-Session`, `Fork-Point`, `Imported-From`. A fork's first commit
has its parent session's head as parent.

Reading with stock git (`gitsessions list` gives the ids):

    git --git-dir store.git branch --list 'sessions/*'
    git --git-dir store.git log --oneline sessions/<id>
    git --git-dir store.git show sessions/<id>:session.json
    git --git-dir store.git ls-tree -r --name-only sessions/<id> transcript
    git --git-dir store.git show sessions/<id>:transcript/0000000000.jsonl

The full format is described in gitsessions' docs/format.md.
"""


def main_commit(when: int) -> tuple[Blob, Tree, Commit]:
    """The README blob, its tree and the commit of `main`, dated `when` (Unix time)."""
    blob = Blob.from_string(README.encode("utf-8"))
    tree = Tree()
    tree.add(b"README.md", 0o100644, blob.id)
    commit = Commit()
    commit.tree = tree.id
    commit.parents = []
    commit.author = commit.committer = AUTHOR
    commit.author_time = commit.commit_time = when
    commit.author_timezone = commit.commit_timezone = 0
    commit.encoding = b"UTF-8"
    commit.message = (SUBJECT + "\n").encode("utf-8")
    return blob, tree, commit
