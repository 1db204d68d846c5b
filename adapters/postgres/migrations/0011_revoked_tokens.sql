-- Revoked token ids (ADR 0024): every node keeps a copy in memory, re-read every
-- RUNNEL_REVOCATION_REFRESH_SECONDS and at once on a NOTIFY on `runnel_revoked`.
-- `tenant` is '' when the `jti` is revoked in every tenant ('' is no tenant id).
-- `expires_at` is when the revoked token would have expired anyway: after it the
-- row is deleted (by the next revocation), since an expired token is refused anyway.
CREATE TABLE revoked_tokens (
    jti        text NOT NULL,
    tenant     text NOT NULL DEFAULT '',
    revoked_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (jti, tenant)
);

CREATE INDEX revoked_tokens_by_expiry ON revoked_tokens (expires_at);
