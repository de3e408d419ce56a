"""Extractor backends by name."""

from __future__ import annotations

import os
from pathlib import Path

from engramrag.extract.base import Extractor

REPLAY_FILE_ENV = "ENGRAM_REPLAY_FILE"


def make_extractor(name: str) -> Extractor:
    if name == "rules":
        from engramrag.extract.rules import RulesExtractor

        return RulesExtractor()
    if name == "replay" or name.startswith("replay:"):
        from engramrag.extract.replay import ReplayExtractor

        return ReplayExtractor(replay_file(name))
    if name == "openai":
        from engramrag.extract.llm import LLMConfig, OpenAIExtractor, ResponseCache
        from engramrag.store import Home

        return OpenAIExtractor(LLMConfig.from_environment(), ResponseCache.for_home(Home.at()))
    raise ValueError(f"unknown extractor {name!r}; available: rules, replay (or replay:/path/to/openie.json), openai")


def replay_file(name: str) -> Path:
    """The file of precomputed extractions: named after ``replay:``, else taken from ENGRAM_REPLAY_FILE."""
    given = name.partition(":")[2].strip()
    source = "the extractor name" if given else REPLAY_FILE_ENV
    value = given or os.environ.get(REPLAY_FILE_ENV, "").strip()
    if not value:
        raise ValueError(
            f"the replay extractor needs a file of precomputed extractions: set {REPLAY_FILE_ENV}=/path/to/openie.json "
            "or name the extractor replay:/path/to/openie.json"
        )
    path = Path(value).expanduser()
    if not path.is_file():
        raise ValueError(
            f"replay file {path} (from {source}) does not exist; point {REPLAY_FILE_ENV} or replay:<path> at an "
            "existing OpenIE JSON file"
        )
    return path


def extractor_id(extractor: Extractor) -> str:
    """What the catalog records; a different id re-extracts every document, deliberately."""
    model = getattr(extractor, "model", None)
    return f"{extractor.name}/{extractor.version}" + (f"/{model}" if model else "")
