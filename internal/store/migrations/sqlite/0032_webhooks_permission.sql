-- The Webhooks role permission (docs/decisions.md, "Webhooks need a role
-- permission"): managing the account's webhook subscriptions with an OAuth
-- token needs it, as call history needs call_reports. Until now the scopes
-- alone decided, so every role could. An existing role gets it only if it
-- held every other permission, as a role created with "all" (the
-- administrators' role, the only way to write one) did: a role that hides
-- some lines, users, calls or recordings must not keep a standing read of
-- all of them. The operator grants it to any other role that should have it.
ALTER TABLE roles ADD COLUMN webhooks BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE roles SET webhooks = TRUE
    WHERE users_visibility = 'all' AND numbers_access = 'all' AND call_reports AND allow_recordings;
