"""Extractor backends by name."""

from __future__ import annotations

from engramrag.extract.base import Extractor


def make_extractor(name: str) -> Extractor:
    if name == "rules":
        from engramrag.extract.rules import RulesExtractor

        return RulesExtractor()
    raise ValueError(f"unknown extractor {name!r}; available: rules")


def extractor_id(extractor: Extractor) -> str:
    """What the catalog records; a different id re-extracts every document, deliberately."""
    model = getattr(extractor, "model", None)
    return f"{extractor.name}/{extractor.version}" + (f"/{model}" if model else "")
