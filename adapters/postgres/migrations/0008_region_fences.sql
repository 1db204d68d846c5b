-- A write fence per region, for disaster recovery (docs/adr/0016): once an operator
-- has failed over away from a region (`runnel fence REGION`), its nodes store
-- nothing until it is unfenced. `epoch` counts the fences of the region (each fence
-- increments it; an unfence keeps it), so operators and logs can tell them apart.
CREATE TABLE region_fences (
    region     text COLLATE "C" PRIMARY KEY,
    fenced     boolean NOT NULL,
    epoch      bigint NOT NULL,
    changed_at timestamptz NOT NULL DEFAULT now()
);

-- Called inside every write statement of a node of `node_region`: true, or it raises
-- SQLSTATE RN002 (distinct from a version conflict's RN001, so the statement is not
-- retried), and with it the whole statement and its transaction are undone.
--
-- The region's advisory lock, taken shared here until the writer's transaction
-- ends, is what `runnel fence` takes exclusively: the fence therefore commits
-- only after every write that passed this check has committed, and a writer that
-- comes later waits for the fence, then reads it (each statement of a VOLATILE
-- function takes a fresh snapshot under READ COMMITTED). Once a fence has been
-- answered, no write of that region commits.
CREATE FUNCTION runnel_assert_unfenced(node_region text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    fence_epoch bigint;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1381322318, hashtext(node_region));
    SELECT epoch INTO fence_epoch FROM region_fences WHERE region = node_region AND fenced;
    IF FOUND THEN
        RAISE EXCEPTION 'region % is fenced (epoch %)', node_region, fence_epoch
            USING ERRCODE = 'RN002', DETAIL = fence_epoch::text;
    END IF;
    RETURN true;
END
$$;
