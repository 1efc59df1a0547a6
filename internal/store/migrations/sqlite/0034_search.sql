-- Search (issue 33; docs/decisions.md, "Search").
--
-- message_words indexes each sent or received text's words as package
-- internal/search/words folds them (lower case, no diacritics, one space
-- between words), keyed by the message id (the rowid). Contentless: the
-- text is in messages already, and a deleted message's words are removed
-- with it (contentless_delete). detail=none keeps no positions: search
-- matches words and word prefixes, never phrases, and the index is the
-- smaller and cheaper to write for it. The tokenizer only splits on the
-- spaces (the words are folded already; remove_diacritics 2 is the same
-- rule again, harmless). prefix='2 3 4 5 6 7 8' keeps a doclist for each
-- word's beginnings of 2 to 8 characters: a beginning of those lengths is
-- then one doclist read newest first up to the page's end, where without
-- it FTS5 merges the doclists of every word it begins, whole, before the
-- first row (70 to 170 ms for a word in 8% of a million texts, under 1 ms
-- with it: docs/benchmarks.md, "Search").
--
-- conversation_numbers holds, per conversation, every suffix of at least
-- three digits of each participant's number, so that "any part of the
-- digits" is a range of this key on both engines (no trigram index).
-- Written when a conversation is created; a deleted conversation keeps its
-- row (its participants are the same when it is texted again) and is left
-- out by the search as by the list (no message left).
--
-- Existing messages and conversations are indexed by the migration's Go
-- step (store.searchBackfill), with progress in the log.
CREATE VIRTUAL TABLE message_words USING fts5(words, content='', contentless_delete=1, detail=none,
    prefix='2 3 4 5 6 7 8', tokenize='unicode61 remove_diacritics 2');

CREATE TABLE conversation_numbers (
    account_id      BIGINT NOT NULL,
    suffix          TEXT NOT NULL,
    conversation_id BIGINT NOT NULL,
    PRIMARY KEY (account_id, suffix, conversation_id)
) WITHOUT ROWID;
