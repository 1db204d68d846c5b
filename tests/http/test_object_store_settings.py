"""Which object store a node opens, from its `RUNNEL_*` settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters.fs.objects import FilesystemObjectStore
from adapters.memory.objects import MemoryObjectStore
from adapters.s3 import S3ObjectStore
from application.ports.errors import ObjectRegionUnavailable
from entrypoints.composition.object_stores import open_object_store
from entrypoints.composition.settings import Settings

S3_REGIONS = {"eu": {"bucket": "runnel-eu", "endpoint_url": "http://127.0.0.1:9",
                     "access_key": "a", "secret_key": "s"},
              "us": {"bucket": "runnel-us"}}


async def test_the_default_is_the_filesystem_under_the_data_dir(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, region="eu")
    async with open_object_store(settings) as store:
        assert isinstance(store, FilesystemObjectStore)
        assert store.path_for("eu", "t/r/s/o") == tmp_path / "objects" / "eu" / "t/r/s/o"
        with pytest.raises(ObjectRegionUnavailable):
            store.path_for("us", "t/r/s/o")


async def test_the_filesystem_store_serves_the_listed_regions(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    monkeypatch.setenv("RUNNEL_OBJECT_REGIONS", '["eu", "us"]')
    settings = Settings(data_dir=tmp_path, region="eu")
    assert settings.object_store_regions() == ("eu", "us")
    async with open_object_store(settings) as store:
        assert isinstance(store, FilesystemObjectStore)
        store.path_for("us", "k")


async def test_memory_storage_keeps_bodies_in_memory() -> None:
    async with open_object_store(Settings(storage="memory")) as store:
        assert isinstance(store, MemoryObjectStore)


async def test_s3_regions_from_json_select_s3_and_start_one_client_per_region(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNNEL_S3_REGIONS", json.dumps(S3_REGIONS))
    settings = Settings()
    assert settings.object_store_kind() == "s3"
    assert settings.object_store_regions() == ("eu", "us")
    assert "runnel-eu" in repr(settings) and "'s'" not in repr(settings.s3_regions["eu"])
    async with open_object_store(settings) as store:
        assert isinstance(store, S3ObjectStore)
        with pytest.raises(ObjectRegionUnavailable):
            await store.stat("ap", "k")


def test_an_explicit_choice_wins_and_s3_needs_regions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNNEL_S3_REGIONS", json.dumps(S3_REGIONS))
    assert Settings(object_store="fs").object_store_kind() == "fs"
    monkeypatch.delenv("RUNNEL_S3_REGIONS")
    with pytest.raises(ValueError, match="RUNNEL_S3_REGIONS"):
        Settings(object_store="s3").object_store_kind()
