"""`runnel config`: every setting, its value, its default and where the value came from."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

from pydantic import SecretStr
from pydantic_core import PydanticUndefined

from entrypoints.composition.settings import Settings

HIDDEN = "********"
_URL_PASSWORD = re.compile(r"(://[^/?#@:]*:)[^/?#@]*@")
"""The password of a URL's userinfo (`postgresql://user:password@host/db`)."""


def config_rows(settings: Settings, environ: Mapping[str, str] = os.environ
                ) -> list[tuple[str, str, str, str]]:
    """(variable, value, default, source) per setting; secrets are never shown."""
    rows = []
    for name, field in Settings.model_fields.items():
        variable = f"RUNNEL_{name.upper()}"
        default = field.default if field.default is not PydanticUndefined else (
            field.default_factory() if field.default_factory is not None  # type: ignore[call-arg]
            else None)
        rows.append((variable, _shown(getattr(settings, name)), _shown(default),
                     "environment" if variable in environ else "default"))
    return rows


def render(rows: list[tuple[str, str, str, str]]) -> str:
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    header = ("setting", "value", "default", "source")
    widths = [max(width, len(title)) for width, title in zip(widths, header, strict=False)]
    lines = []
    for row in [header, *rows]:
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
                     + "  " + row[3])
    return "\n".join(line.rstrip() for line in lines)


def _shown(value: Any) -> str:
    if isinstance(value, SecretStr):
        return HIDDEN
    if value is None:
        return "-"
    if isinstance(value, dict | list | tuple):
        return json.dumps(_plain(value))
    return without_password(str(value))


def without_password(text: str) -> str:
    """`text` with every URL password replaced: a DSN's `user:password@` shows `user:****@`
    (each host of a multi-host DSN shares the one userinfo)."""
    return _URL_PASSWORD.sub(lambda match: match.group(1) + HIDDEN + "@", text)


def _plain(value: Any) -> Any:
    if isinstance(value, SecretStr):
        return HIDDEN
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if hasattr(value, "model_dump"):
        return _plain(dict(value))
    return without_password(value) if isinstance(value, str) else value
