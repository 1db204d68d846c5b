"""`RUNNEL_WEBHOOK_SECRET`: a webhook node does not start without a key of at least 32
bytes, and says so in one line that never echoes the secret (ADR 0022)."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from entrypoints.composition.settings import Settings
from tests.integration.support import REPO

WEBHOOK = {"wait_service": "webhook", "webhook_url": "http://127.0.0.1:9/hook"}


@pytest.fixture(autouse=True)
def _no_webhook_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RUNNEL_WAIT_SERVICE", "RUNNEL_WEBHOOK_URL", "RUNNEL_WEBHOOK_SECRET",
                 "RUNNEL_STORAGE"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(("secret", "complaint"), [
    (None, "needs RUNNEL_WEBHOOK_SECRET"),
    ("s" * 31, "at least 32 bytes"),
    ("whsec_" + base64.b64encode(b"k" * 24).decode(), "at least 32 bytes"),  # 24 decoded
    ("whsec_not base64!", "base64"),
], ids=["missing", "31-bytes", "whsec-24-bytes", "whsec-not-base64"])
def test_a_webhook_without_a_strong_secret_is_refused(secret: str | None,
                                                      complaint: str) -> None:
    pins: dict[str, Any] = {**WEBHOOK, "webhook_secret": secret} if secret else WEBHOOK
    with pytest.raises(ValidationError, match=complaint) as refused:
        Settings(**pins)
    if secret:
        assert secret not in str(refused.value)


@pytest.mark.parametrize("secret", ["s" * 32, "whsec_" + base64.b64encode(b"k" * 32).decode()])
def test_a_secret_of_32_bytes_or_more_is_taken(secret: str) -> None:
    settings = Settings(**WEBHOOK, webhook_secret=secret)
    assert settings.webhook_secret is not None
    assert settings.webhook_secret.get_secret_value() == secret
    assert secret not in repr(settings)


def test_other_wait_services_need_no_webhook_secret() -> None:
    assert Settings(wait_service="none").webhook_secret is None
    assert Settings(storage="memory").wait_service_kind() == "memory"


def test_the_worker_refuses_a_short_webhook_secret_in_one_line(tmp_path: Path) -> None:
    secret = "too-short-a-secret"
    env = {**os.environ, "RUNNEL_DATA_DIR": str(tmp_path), "RUNNEL_STORAGE": "postgres",
           "RUNNEL_WAIT_SERVICE": "webhook", "RUNNEL_WEBHOOK_URL": "http://127.0.0.1:9/hook",
           "RUNNEL_WEBHOOK_SECRET": secret}
    result = subprocess.run([sys.executable, "-m", "entrypoints.commands", "worker"],
                            capture_output=True, text=True, cwd=REPO, timeout=120, env=env)
    assert result.returncode == 2
    complaint = [line for line in result.stderr.splitlines() if "RUNNEL_WEBHOOK_SECRET" in line]
    assert len(complaint) == 1 and "at least 32 bytes" in complaint[0]
    assert secret not in result.stderr and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []  # refused before anything started
