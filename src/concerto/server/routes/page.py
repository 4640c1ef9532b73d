"""The page at `/` (decision 27): one HTML file; its modules, styles and vendored libraries
beside it are the core pack's static directory (`/static`, `concerto/core.py`)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

router = APIRouter()

PAGE = Path(__file__).parents[1] / "static" / "index.html"


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
async def page() -> str:
    """The page (`server/static/`): a page, so a link from another site may open it."""
    return PAGE.read_text(encoding="utf-8")
