"""Extractor backends by name."""

from __future__ import annotations

import os
from pathlib import Path

from engramrag.extract.base import Extractor
from engramrag.store import DEFAULT_HOME, Home

REPLAY_FILE_ENV = "ENGRAM_REPLAY_FILE"


def make_extractor(name: str, home: Home | None = None, read_only: bool = False) -> Extractor:
    """The extractor called ``name``. The ``openai`` one keeps its response cache in ``home`` (default:
    ENGRAM_HOME). ``read_only`` is for estimates (``engram build --dry-run``): the cache is only read and neither
    it nor the home folder is created, so an estimate leaves the disk as it found it."""
    if name == "rules":
        from engramrag.extract.rules import RulesExtractor

        return RulesExtractor()
    if name == "replay" or name.startswith("replay:"):
        from engramrag.extract.replay import ReplayExtractor

        return ReplayExtractor(replay_file(name))
    if name == "openai":
        from engramrag.extract.llm import LLMConfig, OpenAIExtractor, ResponseCache

        config = LLMConfig.from_environment()
        where = home or (_home_without_creating() if read_only else Home.at())
        return OpenAIExtractor(config, ResponseCache.for_home(where, read_only=read_only))
    raise ValueError(f"unknown extractor {name!r}; available: rules, replay (or replay:/path/to/openie.json), openai")


def _home_without_creating() -> Home:
    """The home ``Home.at()`` would choose, without making its folder."""
    return Home(Path(os.environ.get("ENGRAM_HOME") or DEFAULT_HOME).expanduser().resolve())


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
