"""Where the gitsessions home is: `--home`, else `$GITSESSIONS_HOME`, else
`$XDG_DATA_HOME/gitsessions` (`~/.local/share/gitsessions`). Light on purpose: every
command resolves it (`cli/state.py`) before anything of the store is loaded."""

from collections.abc import Mapping
from pathlib import Path


def resolve_home(flag: Path | None, env: Mapping[str, str]) -> Path:
    if flag is not None:
        return flag.expanduser().absolute()
    if env.get("GITSESSIONS_HOME"):
        return Path(env["GITSESSIONS_HOME"]).expanduser().absolute()
    data = env.get("XDG_DATA_HOME") or str(Path("~/.local/share").expanduser())
    return Path(data).absolute() / "gitsessions"
