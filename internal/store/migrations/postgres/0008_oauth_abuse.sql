-- Registered clients that never obtained a grant are pruned after a while
-- (PruneUnusedOAuthClients): find them by age, and find a client's grants
-- (also what deleting a client checks for its foreign keys).
CREATE INDEX oauth_clients_created ON oauth_clients (created_at);
CREATE INDEX oauth_grants_client ON oauth_grants (client_id);

-- Keys the server makes for itself, shared by every node on this database:
-- created once, at first use, by whichever node needs one first. Today the
-- only one seals pending authorization requests into the sign-in form.
CREATE TABLE server_keys (
    name       TEXT   PRIMARY KEY,
    secret     BYTEA  NOT NULL,
    created_at BIGINT NOT NULL
);
