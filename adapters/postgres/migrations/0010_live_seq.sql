-- The numbering state of each stream's live chunks (ADR 0017). The chunks themselves
-- are stored nowhere; this row only remembers the next `seq` and the newest runs of
-- producer positions, so that every node numbers one stream from one origin, in commit
-- order, and a re-driven position gets its first number again.
--
-- Written only by the live sender, in the transaction that NOTIFYs the chunks, under
-- this row's lock. Logged (not UNLOGGED): crash recovery must not restart numbers at 1.
-- No foreign key: a stream row is never deleted (erasure marks it), and a failing check
-- would drop the whole batch of chunks of other streams.

CREATE TABLE live_seq (
    stream uuid PRIMARY KEY,   -- streams.id
    state  jsonb NOT NULL      -- {"n": next seq, "g": newest run growing, "r": [[source, attempt, first, last, base], ...]}
);
