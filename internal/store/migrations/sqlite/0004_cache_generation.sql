-- A counter bumped by every write that may change what the server caches in
-- memory (accounts, roles, users, lines, keys, rates, OAuth grants and
-- tokens). Message traffic does not bump it, so the caches survive send load.
CREATE TABLE cache_generation (
    id  INTEGER PRIMARY KEY CHECK (id = 1),
    gen BIGINT NOT NULL
);
INSERT INTO cache_generation (id, gen) VALUES (1, 0);
