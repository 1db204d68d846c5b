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
