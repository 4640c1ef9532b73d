"""Settings of the data-source layer: the limits every query and load runs under."""

from __future__ import annotations

from pydantic import Field

from concerto.settings import PackSettings


class DataSettings(PackSettings):
    """Read from `CONCERTO_DATA_*`. Where tables live (`CONCERTO_DATABASE_URL`) is a core setting
    (`Settings.database_url`), shared with the store of the shared log."""

    data_max_file_mb: int = Field(
        1024,
        ge=1,
        description="Largest file `concerto data load` or an upload accepts; also the most a Parquet file's "
        "pages may unpack to, and (in values: rows × columns) the most it may hold",
    )
    data_max_unpacked_mb: int = Field(
        64,
        ge=1,
        description="Most an Excel workbook may unpack to (all its parts, checked before it is read: a workbook "
        "is read into memory whole, at about 2.5 times this); over it, a load is refused (an upload with 413)",
    )
    data_load_memory_mb: int = Field(
        128,
        ge=16,
        description="DuckDB's memory limit while it reads a file (plus 64 KB per column), so that a load's memory "
        "does not grow with the file; a load that needs more fails and names this setting",
    )
    data_row_cap: int = Field(10000, ge=1, le=1_000_000, description="Rows one query returns at most")
    data_query_timeout_s: float = Field(10.0, gt=0, le=600, description="Time limit of one query")
    data_import_dirs: str = Field(
        "",
        description="Folders (separated by ':') from which a question may ask the data_ingestion agent to load "
        "a file, besides the uploads folder of the data dir; empty: uploads only (the HTTP API never reads "
        "other server files)",
    )
    data_embed_max_values: int = Field(
        5000,
        ge=0,
        le=1_000_000,
        description="Distinct values of a free-text column embedded at load time for semantic search "
        "(0: none); a column with more is not embedded, and the load says so",
    )
