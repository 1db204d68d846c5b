-- Runnel schema, first cut. Applied once by adapters.postgres.migrations.migrate().
--
-- Rules the schema encodes:
-- * A stream is one row (`streams`); every unit of work on it locks that row
--   FOR UPDATE and rewrites the aggregate snapshot and denormalised columns.
-- * Sequences come from the locked row (`head`), never from a serial: a reader
--   tailing `sequence > cursor` would skip rows that commit out of order.
-- * Hot tables (records, events, receipts) carry no foreign keys: they are only
--   written under the stream-row lock, which already guarantees the stream exists.
-- * Natural-key text columns use the "C" collation so ordering matches Python's.

CREATE TABLE streams (
    id             uuid PRIMARY KEY,              -- uuid5 of the natural key
    tenant         text COLLATE "C" NOT NULL,
    run_id         text COLLATE "C" NOT NULL,
    stream_id      text COLLATE "C" NOT NULL,
    definition     jsonb NOT NULL,                -- the pins, for operators and listings
    snapshot_topic text NOT NULL,                 -- eventsourcing Snapshot, via its Mapper
    snapshot       bytea NOT NULL,
    version        integer NOT NULL,              -- aggregate version of the snapshot
    head           bigint NOT NULL,
    earliest       bigint NOT NULL,
    total_items    bigint NOT NULL,
    total_bytes    bigint NOT NULL,
    closed         boolean NOT NULL,
    legal_hold     boolean NOT NULL,
    erased         boolean NOT NULL,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant, run_id, stream_id)
);

-- The event log of every aggregate (Stream and ObjectIntent), append-only.
CREATE TABLE stream_events (
    originator_id      uuid NOT NULL,
    originator_version integer NOT NULL,
    topic              text NOT NULL,
    state              bytea NOT NULL,
    recorded_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (originator_id, originator_version)
);

-- Record bodies (already redacted). Exactly one of payload / data / object_id.
-- payload is `json`, not `jsonb`: it keeps the producer's key order and number
-- spelling byte for byte (jsonb would turn 1e20 into an integer).
CREATE TABLE records (
    stream              uuid NOT NULL,
    sequence            bigint NOT NULL,
    content_type        text NOT NULL,
    appended_at         timestamptz NOT NULL,
    size                integer NOT NULL,
    payload             json,
    data                bytea,
    object_id           text,
    object_size         bigint,
    object_sha256       text,
    object_content_type text,
    idempotency_key     text,
    PRIMARY KEY (stream, sequence)
);
CREATE INDEX records_by_object ON records (object_id) WHERE object_id IS NOT NULL;

-- The shape in which a unit of work hands records to the insert: one array of
-- these instead of one array per column (fewer values for the driver to encode).
CREATE TYPE runnel_record AS (
    stream              uuid,
    sequence            bigint,
    content_type        text,
    appended_at         timestamptz,
    size                integer,
    payload             json,
    data                bytea,
    object_id           text,
    object_size         bigint,
    object_sha256       text,
    object_content_type text,
    idempotency_key     text
);

-- Idempotency receipts outlive the records they name (pruning keeps them).
CREATE TABLE append_receipts (
    stream          uuid NOT NULL,
    idempotency_key text NOT NULL,
    sequence        bigint NOT NULL,
    PRIMARY KEY (stream, idempotency_key)
);

-- Projection of consumer acks (the aggregate is the source of truth).
CREATE TABLE consumers (
    stream      uuid NOT NULL,
    consumer_id text COLLATE "C" NOT NULL,
    acked       bigint NOT NULL,
    owner       text,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream, consumer_id)
);

-- One row per object intent: its snapshot plus the columns the reaper and the
-- orphan sweeper query.
CREATE TABLE object_intents (
    id              uuid PRIMARY KEY,
    stream          uuid NOT NULL,
    idempotency_key text NOT NULL,
    state           text NOT NULL,
    region          text NOT NULL,
    object_key      text NOT NULL,
    expires_at      timestamptz NOT NULL,
    sequence        bigint,
    version         integer NOT NULL,
    snapshot_topic  text NOT NULL,
    snapshot        bytea NOT NULL,
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX object_intents_by_stream ON object_intents (stream);
CREATE INDEX object_intents_live_by_expiry ON object_intents (expires_at)
    WHERE state IN ('prepared', 'uploaded');

-- Input-delivery outbox: one row per input record, claimed with a lease.
CREATE TABLE input_deliveries (
    stream          uuid NOT NULL,
    sequence        bigint NOT NULL,
    claimed_by      text,
    lease_until     timestamptz,
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    last_error      text,
    dead            boolean NOT NULL DEFAULT false,
    done            boolean NOT NULL DEFAULT false,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream, sequence)
);
CREATE INDEX input_deliveries_pending ON input_deliveries (stream, sequence)
    WHERE NOT done AND NOT dead;

-- Object bodies to delete once `not_before` has passed (filled by a later issue).
CREATE TABLE deletion_outbox (
    id          bigserial PRIMARY KEY,
    region      text NOT NULL,
    object_key  text NOT NULL,
    not_before  timestamptz NOT NULL,
    attempts    integer NOT NULL DEFAULT 0,
    last_error  text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (region, object_key)
);

-- Wakes that revealed missing sequences, as reported by readers.
CREATE TABLE gap_evidence (
    id          bigserial PRIMARY KEY,
    stream      uuid NOT NULL,
    tenant      text COLLATE "C" NOT NULL,
    run_id      text COLLATE "C" NOT NULL,
    stream_id   text COLLATE "C" NOT NULL,
    expected    bigint NOT NULL,
    received    bigint NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX gap_evidence_by_stream ON gap_evidence (stream, id);

-- Runs erased for good: nothing is created or appended in them afterwards.
CREATE TABLE erased_runs (
    tenant    text COLLATE "C" NOT NULL,
    run_id    text COLLATE "C" NOT NULL,
    erased_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, run_id)
);
