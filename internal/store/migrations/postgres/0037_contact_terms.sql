-- The address book's search index (issue 33; docs/decisions.md "Search").
--
-- Until now a contact search read every contact of the account (search
-- LIKE '% word%', and each contact's numbers LIKE '%digits%'): 20,000
-- contacts cost a search 10 to 40 ms of a core whatever it found. A term is
-- 'w' and one of the name's and company's folded words (the search column's
-- words), or 'n' and a suffix of at least three digits of one of the
-- contact's numbers, so that a word's beginning and "any part of the
-- digits" are each a range of this key (as conversation_numbers does for
-- the conversations' numbers). Written with the contact, in its
-- transaction; the migration's Go step indexes the existing contacts.
CREATE TABLE contact_terms (
    account_id BIGINT NOT NULL,
    term       TEXT COLLATE "C" NOT NULL,
    contact_id BIGINT NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
    PRIMARY KEY (account_id, term, contact_id)
);
CREATE INDEX contact_terms_contact ON contact_terms (contact_id);
