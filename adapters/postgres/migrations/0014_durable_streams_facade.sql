-- The Durable Streams facade (ADR 0041): what the protocol knows of a stream that a
-- Runnel stream does not. Each row names the Runnel run that IS the protocol stream
-- (its records, credit, retention and closure stay in the Runnel tables); a DELETE
-- erases that run and removes the row, and a re-created path gets a new run. A fork
-- (`forked_from`) holds a copy of its source's prefix; a deleted source that still has
-- forks keeps its row, `deleted`, until its last fork goes (the protocol's soft delete).
CREATE TABLE durable_streams (
    tenant          text NOT NULL,
    path            text NOT NULL,
    run_id          text NOT NULL,
    content_type    text NOT NULL,
    ttl_seconds     bigint,
    expires_at      timestamptz,
    touched_at      timestamptz NOT NULL,
    closed_by       text,
    writer_seq      text,
    forked_from     text,
    fork_offset     bigint,
    fork_sub_offset bigint,
    deleted         boolean NOT NULL DEFAULT false,
    PRIMARY KEY (tenant, path)
);

CREATE INDEX durable_streams_by_source ON durable_streams (tenant, forked_from)
    WHERE forked_from IS NOT NULL;

-- Idempotent producers of a facade stream: the epoch and the last accepted sequence.
CREATE TABLE durable_stream_producers (
    tenant      text NOT NULL,
    run_id      text NOT NULL,
    producer_id text NOT NULL,
    epoch       bigint NOT NULL,
    last_seq    bigint NOT NULL,
    PRIMARY KEY (tenant, run_id, producer_id)
);
