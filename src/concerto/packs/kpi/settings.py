"""Settings of the KPI pack."""

from __future__ import annotations

from pydantic import Field

from concerto.settings import PackSettings


class KPISettings(PackSettings):
    """Read from `CONCERTO_CHROMA_URL`."""

    chroma_url: str | None = Field(None, description="ChromaDB server URL (default: embedded in the data dir)")
