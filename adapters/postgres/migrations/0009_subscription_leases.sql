-- Concurrent-subscription slots shared by every node on this database (ADR 0018):
-- one row per open subscription, live while `lease_until` is ahead of the caller's
-- clock. A node renews its rows while their subscriptions live; a crashed node's rows
-- lapse by themselves and are deleted by the next acquire of the same principal.
CREATE TABLE subscription_leases (
    id          uuid PRIMARY KEY,
    tenant      text NOT NULL,
    sub         text NOT NULL,
    lease_until timestamptz NOT NULL,
    acquired_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX subscription_leases_by_principal
    ON subscription_leases (tenant, sub, lease_until);
