"""The embedded broker's disk: a small S3-compatible object store kept in one SQLite file.

Tansu (the embedded broker) keeps topics, records, watermarks and committed offsets as objects
in an S3 bucket and coordinates its metadata with conditional requests: `PUT` with
`If-None-Match: *` (create) and `If-Match: <etag>` (update), `GET` with `If-None-Match` (304 when
unchanged). This server answers exactly the part of S3 that Tansu's object store client speaks
(path-style buckets, PutObject, GetObject with ranges, HeadObject, DeleteObject, DeleteObjects,
CopyObject, ListObjectsV2 with prefix, delimiter and continuation), keeping every object as a row
of one SQLite database in WAL mode: a write is committed before it is acknowledged, so a killed
process (`kill -9` of the whole group) loses nothing, and a power loss loses at most the last
writes the OS had not flushed, never the file's consistency (synchronous=NORMAL; Kafka's own
default leaves flushing to the OS too). Listing a prefix is an index range scan.

Why not a registry package: moto keeps nothing on disk; the file-per-object servers on PyPI honour
`If-None-Match` but not `If-Match` on PUT and walk the directory tree on every listing, which Tansu
does on every fetch (docs/decisions.md, "The embedded broker keeps its topics on disk").

Run it as `python -m streams.tools.object_store DIR --port N`; one process serves one directory
(a lock file refuses a second one). Credentials are not checked: it listens on 127.0.0.1 only.
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import fcntl
import hashlib
import logging
import os
import sqlite3
import time
from collections.abc import AsyncIterator
from email.utils import formatdate
from functools import partial
from pathlib import Path
from typing import IO
from urllib.parse import unquote
from xml.etree import ElementTree as ET
from xml.sax.saxutils import escape

from aiohttp import web

from streams.errors import MemstreamError
from streams.tools.object_purge import KEEP_BATCHES, PURGE_INTERVAL_SECONDS, purge_all_buckets

log = logging.getLogger(__name__)

S3_NS = "http://s3.amazonaws.com/doc/2006-03-01/"
DATABASE = "objects.sqlite3"
LOCK = "LOCK"
MAX_KEYS = 1000
LISTING_PAGE = 50_000
"""Keys a listing answers when the client names no `max-keys`. S3 answers 1,000; Tansu names none
and lists a partition's every batch object on each fetch, ending the listing at the fetch's
deadline (the consumer's fetch max wait) and answering what it found by then: one large page
rather than many round trips keeps a long partition inside that deadline."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS buckets (name TEXT PRIMARY KEY, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS objects (
    bucket TEXT NOT NULL, key TEXT NOT NULL, etag TEXT NOT NULL, modified REAL NOT NULL,
    content_type TEXT, size INTEGER NOT NULL, body BLOB NOT NULL,
    PRIMARY KEY (bucket, key)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS listing ON objects (bucket, key, etag, modified, size);
"""
"""The `listing` index covers a listing's columns, so a listing reads no object body: Tansu lists
a partition's records on every fetch."""


class StoreLocked(MemstreamError):
    """Another object store process already serves this directory."""


class S3Failure(MemstreamError):
    """An S3 error answer: HTTP status, S3 error code and message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def lock_directory(directory: Path) -> IO[str]:
    """Hold DIR/LOCK for as long as the returned file stays open (released when the process
    dies, however it dies)."""
    directory.mkdir(parents=True, exist_ok=True)
    handle = open(directory / LOCK, "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise StoreLocked(f"{directory} is in use by another memstream broker (stop it first)") from None
    return handle


def open_database(directory: Path) -> sqlite3.Connection:
    db = sqlite3.connect(directory / DATABASE, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(SCHEMA)
    return db


def _etag(body: bytes) -> str:
    return '"' + hashlib.md5(body, usedforsecurity=False).hexdigest() + '"'


def _http_date(epoch: float) -> str:
    return formatdate(epoch, usegmt=True)


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch)) + f".{int(epoch % 1 * 1000):03d}Z"


def _matches(header: str, etag: str) -> bool:
    """Whether an If-Match / If-None-Match header names `etag` (or is `*`)."""
    tags = {value.strip().removeprefix("W/") for value in header.split(",")}
    return "*" in tags or etag in tags or etag.strip('"') in {t.strip('"') for t in tags}


def _prefix_end(prefix: str) -> str | None:
    """The least string greater than every string starting with `prefix` (None: no bound)."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else None


def _xml(root: ET.Element, status: int = 200) -> web.Response:
    return web.Response(status=status, body=ET.tostring(root, xml_declaration=True, encoding="utf-8"),
                        content_type="application/xml")


def _error(failure: S3Failure, resource: str) -> web.Response:
    root = ET.Element("Error")
    for tag, text in (("Code", failure.code), ("Message", failure.message), ("Resource", resource)):
        ET.SubElement(root, tag).text = text
    return _xml(root, failure.status)


def _sql_escaped(column: str) -> str:
    return f"replace(replace(replace({column}, '&', '&amp;'), '<', '&lt;'), '>', '&gt;')"


CONTENTS_SQL = ("'<Contents><Key>' || " + _sql_escaped("key") + " || '</Key><LastModified>' || "
                "strftime('%Y-%m-%dT%H:%M:%fZ', modified, 'unixepoch') || '</LastModified><ETag>' || "
                + _sql_escaped("etag") + " || '</ETag><Size>' || size || "
                "'</Size><StorageClass>STANDARD</StorageClass></Contents>'")
"""A listing's `<Contents>` element of one object, written by SQLite as it reads the row."""


def _listing_xml(bucket: str, prefix: str, delimiter: str, max_keys: int, contents: list[str],
                 common: list[str], next_token: str | bool) -> bytes:
    """A ListObjectsV2 answer, written as strings (`contents`: `CONTENTS_SQL` entries): a fetch
    lists a partition's batch objects, and building an ElementTree spent three quarters of a
    listing's time."""
    parts = [f'<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="{S3_NS}">'
             f"<Name>{escape(bucket)}</Name><Prefix>{escape(prefix)}</Prefix>"
             f"<KeyCount>{len(contents) + len(common)}</KeyCount><MaxKeys>{max_keys}</MaxKeys>"]
    if delimiter:
        parts.append(f"<Delimiter>{escape(delimiter)}</Delimiter>")
    parts.append(f"<IsTruncated>{'true' if next_token else 'false'}</IsTruncated>")
    if next_token:
        parts.append(f"<NextContinuationToken>{next_token}</NextContinuationToken>")
    parts.extend(contents)
    parts.extend(f"<CommonPrefixes><Prefix>{escape(p)}</Prefix></CommonPrefixes>" for p in common)
    parts.append("</ListBucketResult>")
    return "".join(parts).encode()


def _sub(parent: ET.Element, tag: str, text: str) -> None:
    ET.SubElement(parent, tag).text = text


class ObjectStore:
    """The S3 operations over one SQLite database; `app()` is the aiohttp application."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def app(self) -> web.Application:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_route("*", "/{bucket}", self._bucket_route)
        app.router.add_route("*", "/{bucket}/", self._bucket_route)
        app.router.add_route("*", "/{bucket}/{key:.+}", self._object_route)
        return app

    # -- routing ---------------------------------------------------------------------------
    async def _bucket_route(self, request: web.Request) -> web.StreamResponse:
        bucket = request.match_info["bucket"]
        try:
            if request.method == "PUT":
                self.db.execute("INSERT OR IGNORE INTO buckets VALUES (?, ?)", (bucket, time.time()))
                return web.Response(headers={"Location": f"/{bucket}"})
            self._check_bucket(bucket)
            if request.method == "HEAD":
                return web.Response()
            if request.method == "GET":
                return self._list(bucket, request.query)
            if request.method == "POST" and "delete" in request.query:
                return self._delete_many(bucket, await request.read())
            if request.method == "DELETE":
                self.db.execute("DELETE FROM buckets WHERE name = ?", (bucket,))
                return web.Response(status=204)
            raise S3Failure(501, "NotImplemented", f"{request.method} on a bucket is not supported")
        except S3Failure as failure:
            return _error(failure, f"/{bucket}")

    async def _object_route(self, request: web.Request) -> web.StreamResponse:
        bucket, key = request.match_info["bucket"], request.match_info["key"]
        try:
            self._check_bucket(bucket)
            if request.method == "PUT" and "uploadId" not in request.query:
                if "x-amz-copy-source" in request.headers:
                    return self._copy(bucket, key, request)
                return self._put(bucket, key, request, await request.read())
            if request.method in ("GET", "HEAD"):
                return self._get(bucket, key, request)
            if request.method == "DELETE":
                self.db.execute("DELETE FROM objects WHERE bucket = ? AND key = ?", (bucket, key))
                return web.Response(status=204)
            raise S3Failure(501, "NotImplemented", f"{request.method} {dict(request.query)} is not supported")
        except S3Failure as failure:
            return _error(failure, f"/{bucket}/{key}")

    def _check_bucket(self, bucket: str) -> None:
        if self.db.execute("SELECT 1 FROM buckets WHERE name = ?", (bucket,)).fetchone() is None:
            raise S3Failure(404, "NoSuchBucket", f"no bucket {bucket}")

    # -- objects ---------------------------------------------------------------------------
    def _current_etag(self, bucket: str, key: str) -> str | None:
        row = self.db.execute("SELECT etag FROM objects WHERE bucket = ? AND key = ?", (bucket, key)).fetchone()
        return None if row is None else str(row[0])

    def _check_put_conditions(self, bucket: str, key: str, request: web.Request) -> None:
        if_none_match, if_match = request.headers.get("If-None-Match"), request.headers.get("If-Match")
        if if_none_match is None and if_match is None:
            return
        current = self._current_etag(bucket, key)
        if if_none_match is not None and current is not None and _matches(if_none_match, current):
            raise S3Failure(412, "PreconditionFailed", "the object exists")
        if if_match is not None and (current is None or not _matches(if_match, current)):
            status, code = (404, "NoSuchKey") if current is None else (412, "PreconditionFailed")
            raise S3Failure(status, code, "the object's ETag does not match")

    def _write(self, bucket: str, key: str, body: bytes, content_type: str | None) -> tuple[str, float]:
        etag, now = _etag(body), time.time()
        self.db.execute("INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (bucket, key, etag, now, content_type, len(body), body))
        return etag, now

    def _put(self, bucket: str, key: str, request: web.Request, body: bytes) -> web.Response:
        self._check_put_conditions(bucket, key, request)
        etag, _ = self._write(bucket, key, body, request.headers.get("Content-Type"))
        return web.Response(headers={"ETag": etag})

    def _copy(self, bucket: str, key: str, request: web.Request) -> web.Response:
        source = request.headers["x-amz-copy-source"].lstrip("/")
        source_bucket, _, source_key = unquote(source).partition("/")
        row = self.db.execute("SELECT body, content_type FROM objects WHERE bucket = ? AND key = ?",
                              (source_bucket, source_key)).fetchone()
        if row is None:
            raise S3Failure(404, "NoSuchKey", f"no object {source}")
        self._check_put_conditions(bucket, key, request)
        etag, now = self._write(bucket, key, bytes(row[0]), row[1])
        root = ET.Element("CopyObjectResult", xmlns=S3_NS)
        _sub(root, "LastModified", _iso(now))
        _sub(root, "ETag", etag)
        return _xml(root)

    def _get(self, bucket: str, key: str, request: web.Request) -> web.Response:
        row = self.db.execute(
            "SELECT etag, modified, content_type, size" + (", body" if request.method == "GET" else "")
            + " FROM objects WHERE bucket = ? AND key = ?", (bucket, key)).fetchone()
        if row is None:
            raise S3Failure(404, "NoSuchKey", "the object does not exist")
        etag, modified, content_type, size = row[0], row[1], row[2], row[3]
        headers = {"ETag": etag, "Last-Modified": _http_date(modified), "Accept-Ranges": "bytes"}
        if_match, if_none_match = request.headers.get("If-Match"), request.headers.get("If-None-Match")
        if if_match is not None and not _matches(if_match, etag):
            raise S3Failure(412, "PreconditionFailed", "the object's ETag does not match")
        if if_none_match is not None and _matches(if_none_match, etag):
            return web.Response(status=304, headers=headers)
        body = bytes(row[4]) if request.method == "GET" else b""
        status, length = 200, size
        if request.http_range.start is not None or request.http_range.stop is not None:
            window = request.http_range.indices(size) if size else (0, 0, 1)
            start, stop = window[0], window[1]
            if start >= size:
                raise S3Failure(416, "InvalidRange", "the range is outside the object")
            body, status, length = body[start:stop], 206, stop - start
            headers["Content-Range"] = f"bytes {start}-{stop - 1}/{size}"
        headers["Content-Type"] = content_type or "application/octet-stream"
        if request.method == "HEAD":
            headers["Content-Length"] = str(length)
            return web.Response(status=status, headers=headers)
        return web.Response(status=status, body=body, headers=headers)

    # -- listing and bulk delete -------------------------------------------------------------
    def _list(self, bucket: str, query: "web.MultiDictProxy[str]") -> web.Response:
        prefix, delimiter = query.get("prefix", ""), query.get("delimiter", "")
        max_keys = min(int(query["max-keys"]), MAX_KEYS) if "max-keys" in query else LISTING_PAGE
        token = query.get("continuation-token")
        after = base64.urlsafe_b64decode(token).decode() if token else query.get("start-after", "")
        end = _prefix_end(prefix)
        contents: list[str] = []
        common: list[str] = []
        truncated, last = False, after
        while True:
            rows = self.db.execute(
                f"SELECT key, {CONTENTS_SQL} FROM objects WHERE bucket = ? AND key >= ? AND key > ?"
                + (" AND key < ?" if end else "") + " ORDER BY key LIMIT ?",
                (bucket, prefix, last, *([end] if end else []), max_keys + 1)).fetchall()
            skipped = False
            for key, entry in rows:
                if len(contents) + len(common) == max_keys:
                    truncated = True
                    break
                cut = key.find(delimiter, len(prefix)) if delimiter else -1
                if cut >= 0:
                    common.append(key[:cut + len(delimiter)])
                    last = key[:cut + len(delimiter)] + "\U0010ffff"  # past every key under it
                    skipped = True
                    break
                contents.append(entry)
                last = key
            if truncated or not skipped:
                break
        return web.Response(body=_listing_xml(bucket, prefix, delimiter, max_keys, contents, common,
                                              truncated and base64.urlsafe_b64encode(last.encode()).decode()),
                            content_type="application/xml")

    def _delete_many(self, bucket: str, body: bytes) -> web.Response:
        try:
            request = ET.fromstring(body)
        except ET.ParseError as exc:
            raise S3Failure(400, "MalformedXML", str(exc)) from None
        keys = [element.text or "" for element in request.iter() if element.tag.rsplit("}", 1)[-1] == "Key"]
        with self.db:
            self.db.executemany("DELETE FROM objects WHERE bucket = ? AND key = ?", [(bucket, k) for k in keys])
        root = ET.Element("DeleteResult", xmlns=S3_NS)
        for key in keys:
            _sub(ET.SubElement(root, "Deleted"), "Key", key)
        return _xml(root)


def serve(directory: Path, port: int, host: str = "127.0.0.1",
          purge_interval: float = PURGE_INTERVAL_SECONDS, keep_batches: int = KEEP_BATCHES) -> None:
    """Serve `directory` until SIGTERM or SIGINT (blocking), deleting read batches every
    `purge_interval` seconds (`streams.tools.object_purge`)."""
    lock = lock_directory(directory)
    db = open_database(directory)
    app = ObjectStore(db).app()
    app.cleanup_ctx.append(partial(_purging, db, purge_interval, keep_batches))
    try:  # SIGTERM and SIGINT end run_app gracefully
        web.run_app(app, host=host, port=port, access_log=None, print=None)
    finally:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        lock.close()


async def _purging(db: sqlite3.Connection, interval: float, keep: int,
                   app: web.Application) -> AsyncIterator[None]:
    """Delete the batches every consumer group has read, every `interval` seconds, for as long as
    the store serves (`streams.tools.object_purge`)."""

    async def every_interval() -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                purge_all_buckets(db, keep)
            except sqlite3.Error as exc:  # a busy or failing disk: try again next time
                log.warning("purging read batches failed: %s", exc)

    task = asyncio.create_task(every_interval())
    yield
    task.cancel()


def disk_bytes(directory: Path) -> int:
    """What the store takes on disk (the database and its write-ahead log)."""
    return sum(path.stat().st_size for path in directory.glob(DATABASE + "*") if path.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description="The embedded broker's S3-compatible object store.")
    parser.add_argument("directory", type=Path)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--purge-interval", type=float, default=PURGE_INTERVAL_SECONDS,
                        help="Seconds between deletions of the batches every consumer group has read.")
    parser.add_argument("--keep-batches", type=int, default=KEEP_BATCHES,
                        help="Batch objects a partition keeps however far every group has read.")
    args = parser.parse_args()
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        serve(args.directory, args.port, purge_interval=args.purge_interval, keep_batches=args.keep_batches)
    except StoreLocked as exc:
        raise SystemExit(f"object store not started: {exc}") from None


if __name__ == "__main__":
    main()
