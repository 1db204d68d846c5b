-- An optimistic group write (docs/adr/0003) checks, inside its one statement, that
-- every stream it decided on is still at the version it was decided on; when one is
-- not, this raises, so the whole statement (and with it every write of the group)
-- is undone. SQLSTATE RN001 is how the committer recognises it and retries the
-- group under the row lock. VOLATILE, so it only runs when the CASE reaches it.
CREATE FUNCTION runnel_write_conflict() RETURNS boolean
    LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    RAISE EXCEPTION 'a stream changed since this process decided on it'
        USING ERRCODE = 'RN001';
END
$$;

-- Shapes in which a group hands rows to its write statement, like runnel_record:
-- one array of these instead of one array per column, because the driver's cost
-- is per array element.
CREATE TYPE runnel_event AS (
    originator_id      uuid,
    originator_version integer,
    topic              text,
    state              bytea
);

CREATE TYPE runnel_stream_update AS (
    id          uuid,
    topic       text,
    snapshot    bytea,
    version     integer,
    expected    integer,
    head        bigint,
    earliest    bigint,
    total_items bigint,
    total_bytes bigint,
    closed      boolean,
    legal_hold  boolean,
    erased      boolean,
    unread_floor bigint
);

CREATE TYPE runnel_stream_version AS (
    id      uuid,
    version integer
);
