-- Search (issue 33; docs/decisions.md, "Search").
--
-- message_words holds each sent or received text's words as package
-- internal/search/words folds them (lower case, no diacritics, one space
-- between words) as a tsvector of the built-in 'simple' configuration,
-- which only splits and lowers: no stemming, no stop words, and no
-- extension (unaccent's job is done in Go before the text gets here). A
-- table of its own, written once per message, rather than a column of
-- messages: every send updates its message row (status, receipt), and a GIN
-- entry would be written again with each of those row versions.
--
-- conversation_numbers holds, per conversation, every suffix of at least
-- three digits of each participant's number, so that "any part of the
-- digits" is a range of this key (collation "C": digits in byte order) on
-- both engines, without pg_trgm. Written when a conversation is created.
--
-- Existing messages and conversations are indexed by the migration's Go
-- step (store.searchBackfill), with progress in the log.
CREATE TABLE message_words (
    message_id BIGINT PRIMARY KEY,
    words      tsvector NOT NULL
);
CREATE INDEX message_words_words ON message_words USING gin (words);

CREATE TABLE conversation_numbers (
    account_id      BIGINT NOT NULL,
    suffix          TEXT COLLATE "C" NOT NULL,
    conversation_id BIGINT NOT NULL,
    PRIMARY KEY (account_id, suffix, conversation_id)
);
