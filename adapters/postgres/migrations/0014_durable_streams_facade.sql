-- The Durable Streams facade (ADR 0041): what the protocol knows of a stream that a
-- Runnel stream does not. Each row names the Runnel run that IS the protocol stream
-- (its records, credit, retention and closure stay in the Runnel tables); a DELETE
-- removes the row and erases that run, and a re-created path gets a new run.
CREATE TABLE durable_streams (
    tenant       text NOT NULL,
    path         text NOT NULL,
    run_id       text NOT NULL,
    content_type text NOT NULL,
    ttl_seconds  bigint,
    expires_at   timestamptz,
    touched_at   timestamptz NOT NULL,
    closed_by    text,
    PRIMARY KEY (tenant, path)
);

-- Idempotent producers of a facade stream: the epoch and the last accepted sequence.
CREATE TABLE durable_stream_producers (
    tenant      text NOT NULL,
    run_id      text NOT NULL,
    producer_id text NOT NULL,
    epoch       bigint NOT NULL,
    last_seq    bigint NOT NULL,
    PRIMARY KEY (tenant, run_id, producer_id)
);
