-- Re-drives of dead-lettered input deliveries (ADR 0057): who put which dead letters back
-- in line, and when; the stream's deliveries view lists the latest. Erasing the run
-- removes them with the stream's other rows (`upkeep.py`).
--
-- Expand only (ADR 0027): a new table nothing of the release before reads or writes.
CREATE TABLE IF NOT EXISTS delivery_redrives (
    id          bigserial PRIMARY KEY,
    stream      uuid NOT NULL,
    redriven_by text NOT NULL,
    redriven_at timestamptz NOT NULL,
    sequences   bigint[] NOT NULL
);
CREATE INDEX IF NOT EXISTS delivery_redrives_by_stream ON delivery_redrives (stream, id);
