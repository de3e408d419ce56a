"""Resources: where the vault and the home are, and how documents are read and extracted."""

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import dagster as dg
from pydantic import Field

from assets.partitions import BUCKET_COUNT
from engramrag.embed.base import Embedder
from engramrag.embed.registry import make_embedder
from engramrag.extract.base import Extractor
from engramrag.extract.registry import make_extractor
from engramrag.lifecycle.document_pool import ExtractionConfig
from engramrag.lifecycle.freshness import Refresh, refresh_unless_fresh
from engramrag.lifecycle.step_settings import step_settings, version_config
from engramrag.revise.versions import VersionConfig
from engramrag.store import Home
from engramrag.vault.config import VaultConfig

STORE_POOL = "engram_stores"
T = TypeVar("T")


class EngramStores(dg.ConfigurableResource):
    """The vault a lifecycle reads and the home folder its stores live in."""

    home: str = Field(description="Home folder of the stores (catalog, quads, vectors, decisions).")
    vault: str = Field(description="The Markdown vault folder.")
    extractor: str = Field(default="rules", description="Extractor backend: rules (offline default).")
    embedder: str = Field(default="hash", description="Embedder backend: hash (offline default) or openai.")
    max_file_bytes: int = Field(default=2_000_000, description="Files larger than this are rejected.")
    extract_processes: int = Field(
        default=0,
        description="Worker processes that parse and extract documents with a CPU-bound extractor (rules); 0: one "
        "per core, 1: in the build's own process.",
    )
    extract_min_documents: int = Field(
        default=ExtractionConfig.min_documents,
        description="Fewer pending documents than this are extracted in the build's own process.",
    )
    single_valued: str = Field(
        default="",
        description="More single-valued properties for version chains, 'name=word|word' separated by ';' "
        "('sla=sla|응답 시간;tier=tier|등급'); the declared table is in engramrag/extract/properties.py.",
    )

    def home_dir(self) -> Home:
        return Home.at(self.home)

    def vault_dir(self) -> Path:
        return Path(self.vault).expanduser().resolve()

    def vault_config(self) -> VaultConfig:
        return VaultConfig(bucket_count=BUCKET_COUNT, max_file_bytes=self.max_file_bytes)

    def make_extractor(self) -> Extractor:
        return make_extractor(self.extractor, home=self.home_dir())

    def extraction_config(self) -> ExtractionConfig:
        return ExtractionConfig(processes=self.extract_processes, min_documents=self.extract_min_documents)

    def make_embedder(self) -> Embedder:
        return make_embedder(self.embedder)

    def version_config(self) -> VersionConfig:
        return version_config(self.single_valued)

    def step_settings(self) -> dict[str, str]:
        """Per global step, the settings its outputs depend on (``lifecycle.step_settings``)."""
        return step_settings(self.make_embedder().name, self.version_config())


def is_consistency_pass(context: dg.AssetExecutionContext | dg.AssetCheckExecutionContext) -> bool:
    """Whether this run is the consistency pass (run tag engram/pass=consistency: the nightly schedule, or
    ``engram build --full``), which recomputes and checks everything instead of what changed."""
    return context.run.tags.get("engram/pass") == "consistency"


def unless_fresh(
    context: dg.AssetExecutionContext, engram: EngramStores, step: str, compute: Callable[[], T]
) -> Refresh[T]:
    """Run ``compute`` unless the step's inputs are unchanged since it last finished (the consistency pass,
    run tag engram/pass=consistency, always recomputes)."""
    return refresh_unless_fresh(
        engram.home_dir(), engram.vault_config().bucket_count, step, engram.step_settings()[step], compute,
        force=is_consistency_pass(context),
    )


def stores_from_env() -> EngramStores:
    optional: dict[str, Any] = {}
    if os.environ.get("ENGRAM_SINGLE_VALUED"):
        optional["single_valued"] = dg.EnvVar("ENGRAM_SINGLE_VALUED")
    if os.environ.get("ENGRAM_EXTRACT_PROCESSES"):
        optional["extract_processes"] = dg.EnvVar.int("ENGRAM_EXTRACT_PROCESSES")
    return EngramStores(
        home=dg.EnvVar("ENGRAM_HOME"),
        vault=dg.EnvVar("ENGRAM_VAULT"),
        extractor=dg.EnvVar("ENGRAM_EXTRACTOR"),
        embedder=dg.EnvVar("ENGRAM_EMBEDDER"),
        **optional,
    )
