-- Only the consumers a stream's definition declares exist: an ack no longer
-- registers one, and nobody owns a consumer by acking it first. The projection
-- loses the rows such acks registered and every owner; the snapshots are upcast
-- when loaded (`Stream.upcast_v1_v2`), so their stale acks stop holding credit.
-- A declaration is a JSON string (the id) or an object with an `id`.
DELETE FROM consumers AS c USING streams AS s
WHERE c.stream = s.id
  AND NOT EXISTS (
      SELECT 1 FROM jsonb_array_elements(coalesce(s.definition -> 'consumers', '[]')) AS d(declared)
      WHERE d.declared = to_jsonb(c.consumer_id)
         OR (jsonb_typeof(d.declared) = 'object' AND d.declared ->> 'id' = c.consumer_id));

UPDATE consumers SET owner = NULL WHERE owner IS NOT NULL;
