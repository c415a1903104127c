"""The screenshots of `gitsessions view` kept under docs/ (README, docs/commands.md):
tests/view_demo.py's demo store, served by the view in this process, shot by headless
Chromium (`apt-get install chromium`) at 1200x900, one PNG per page kind.

    uv run python bench/view_screenshots.py [--out docs]
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gitsessions.cli.state import State  # noqa: E402
from gitsessions.cli.view_cmd import source_of  # noqa: E402
from gitsessions.protocols.web.server import ViewServer  # noqa: E402
from tests.view_demo import build  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--window-size=1200,900"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    args = parser.parse_args()
    # a fixed, plain place: the demo project's path shows on the pages
    work = Path(tempfile.gettempdir()) / "gitsessions-demo"
    shutil.rmtree(work, ignore_errors=True)
    home, project = work / "home", work / "shop"
    ids = build(home, project)
    state = State(home, dict(os.environ))
    server = ViewServer(source_of(state, project))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    pages = {
        "view-index.png": "/",
        "view-session.png": f"/s/{ids['main']}",
        "view-turn.png": f"/s/{ids['main']}/turn/2",
        "view-compaction.png": f"/s/{ids['main']}/compaction/1",
    }
    try:
        for name, path in pages.items():
            shot = args.out / name
            subprocess.run(
                [CHROMIUM, *FLAGS, f"--user-data-dir={work / 'profile'}",
                 f"--screenshot={shot}", server.url(path)],
                check=True, capture_output=True, timeout=120,
            )  # fmt: skip
            print(f"{shot.relative_to(ROOT) if shot.is_relative_to(ROOT) else shot}")
    finally:
        server.shutdown()
        server.server_close()
        state.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
