"""The embedded broker's object store (`streams.tools.object_store`) over real HTTP, spoken to
by boto3: the S3 semantics Tansu relies on, and what it keeps on disk."""
from __future__ import annotations

from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError

from streams.errors import BrokerError
from streams.tools.broker import DiskStorage, S3Storage
from streams.tools.object_store import StoreLocked, lock_directory


def client(storage: S3Storage):  # type: ignore[no-untyped-def]
    return boto3.client("s3", endpoint_url=storage.endpoint, region_name=storage.region,
                        aws_access_key_id=storage.access_key_id, aws_secret_access_key=storage.secret_access_key)


@pytest.fixture
def disk(tmp_path: Path):  # type: ignore[no-untyped-def]
    store = DiskStorage(tmp_path / "broker", tmp_path / "store.log")
    yield store
    store.stop()


def test_conditional_puts_create_once_and_update_only_the_version_read(disk):
    s3 = client(disk.start())
    first = s3.put_object(Bucket="tansu", Key="meta.json", Body=b"1", IfNoneMatch="*")
    with pytest.raises(ClientError, match="PreconditionFailed"):
        s3.put_object(Bucket="tansu", Key="meta.json", Body=b"2", IfNoneMatch="*")
    with pytest.raises(ClientError, match="PreconditionFailed"):
        s3.put_object(Bucket="tansu", Key="meta.json", Body=b"2", IfMatch='"0123456789abcdef"')
    second = s3.put_object(Bucket="tansu", Key="meta.json", Body=b"3", IfMatch=first["ETag"])
    with pytest.raises(ClientError, match="PreconditionFailed"):
        s3.put_object(Bucket="tansu", Key="meta.json", Body=b"4", IfMatch=first["ETag"])  # stale
    got = s3.get_object(Bucket="tansu", Key="meta.json")
    assert got["Body"].read() == b"3" and got["ETag"] == second["ETag"]
    with pytest.raises(ClientError) as unchanged:
        s3.get_object(Bucket="tansu", Key="meta.json", IfNoneMatch=second["ETag"])
    assert unchanged.value.response["Error"]["Code"] == "304"


def test_listing_pages_through_a_prefix_in_key_order_and_groups_by_delimiter(disk):
    s3 = client(disk.start())
    keys = [f"topics/t/partitions/0/records/{offset:020d}.batch" for offset in range(2345)]
    for key in keys:
        s3.put_object(Bucket="tansu", Key=key, Body=b"x")
    s3.put_object(Bucket="tansu", Key="topics/u/watermark.json", Body=b"{}")
    pages = list(s3.get_paginator("list_objects_v2").paginate(
        Bucket="tansu", Prefix="topics/t/", PaginationConfig={"PageSize": 1000}))
    assert [page["KeyCount"] for page in pages] == [1000, 1000, 345]
    assert [item["Key"] for page in pages for item in page["Contents"]] == keys
    whole = s3.list_objects_v2(Bucket="tansu", Prefix="topics/t/")  # no max-keys: Tansu's listing
    assert whole["KeyCount"] == 2345 and not whole["IsTruncated"], "one page, not three round trips"
    odd = "topics/v/a&b<c>\"d'.batch"
    s3.put_object(Bucket="tansu", Key=odd, Body=b"xy")
    assert [(i["Key"], i["Size"]) for i in s3.list_objects_v2(Bucket="tansu", Prefix="topics/v/")["Contents"]] \
        == [(odd, 2)]
    grouped = s3.list_objects_v2(Bucket="tansu", Prefix="topics/", Delimiter="/")
    assert [p["Prefix"] for p in grouped["CommonPrefixes"]] == ["topics/t/", "topics/u/", "topics/v/"]
    s3.delete_objects(Bucket="tansu", Delete={"Objects": [{"Key": keys[0]}, {"Key": keys[1]}]})
    assert s3.list_objects_v2(Bucket="tansu", Prefix="topics/t/", MaxKeys=1)["Contents"][0]["Key"] == keys[2]


def test_ranges_heads_copies_and_missing_objects(disk):
    s3 = client(disk.start())
    s3.put_object(Bucket="tansu", Key="a", Body=b"0123456789")
    assert s3.get_object(Bucket="tansu", Key="a", Range="bytes=2-4")["Body"].read() == b"234"
    assert s3.head_object(Bucket="tansu", Key="a")["ContentLength"] == 10
    s3.copy_object(Bucket="tansu", Key="b", CopySource={"Bucket": "tansu", "Key": "a"})
    assert s3.get_object(Bucket="tansu", Key="b")["Body"].read() == b"0123456789"
    with pytest.raises(ClientError, match="NoSuchKey"):
        s3.get_object(Bucket="tansu", Key="nothing")
    with pytest.raises(ClientError, match="NoSuchBucket"):
        s3.get_object(Bucket="other", Key="a")


def test_what_was_acknowledged_is_there_after_the_store_is_killed(disk):
    s3 = client(disk.start())
    etag = s3.put_object(Bucket="tansu", Key="records/1.batch", Body=b"batch")["ETag"]
    assert disk._proc is not None
    disk._proc.kill()  # no clean close: only what was committed before the answer is kept
    disk._proc.wait()
    got = client(disk.start()).get_object(Bucket="tansu", Key="records/1.batch")
    assert got["Body"].read() == b"batch" and got["ETag"] == etag


def test_a_second_store_on_the_same_directory_is_refused_clearly(disk, tmp_path):
    disk.start()
    with pytest.raises(StoreLocked, match="in use by another memstream broker"):
        lock_directory(disk.directory)
    with pytest.raises(BrokerError, match="in use by another memstream broker"):
        DiskStorage(disk.directory, tmp_path / "second.log").start(timeout=20)
