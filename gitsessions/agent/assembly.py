"""An agent assembled from settings, as chat, exec and the ACP adapter run it."""

from pathlib import Path
from typing import NamedTuple

from gitsessions.agent.loop import Agent
from gitsessions.services.settings.config import ModelSettings


class Built(NamedTuple):
    agent: Agent
    settings: ModelSettings
    workspace: Path
    resumed: bool
