-- 0003 was edited after its release: `runnel_stream_update` gained `unread_floor`
-- (for 0006's column), so a database migrated through the released 0003 lacks it
-- and every group write that updates a stream fails there. 0003 has its released
-- text back; this adds the attribute wherever it is missing, so every database
-- ends up with the same type, whichever text of 0003 it ran.
DO $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM pg_attribute
        WHERE attrelid = 'runnel_stream_update'::regclass
          AND attname = 'unread_floor' AND NOT attisdropped
    ) THEN
        ALTER TYPE runnel_stream_update ADD ATTRIBUTE unread_floor bigint;
    END IF;
END
$$;
