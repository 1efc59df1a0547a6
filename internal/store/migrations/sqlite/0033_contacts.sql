-- The team address book (issue 33, docs/decisions.md "Contacts"). A contact
-- belongs to one account; each of its numbers is a row of contact_numbers,
-- whose key makes a number one contact's per account (the conflict the API
-- answers 409 is found by a read first, so this key is the last guard).
-- search holds the name's and company's words, folded (lower case, no
-- diacritics), each after a space: a word prefix q is LIKE '% q%'.
CREATE TABLE contacts (
    id          INTEGER PRIMARY KEY,
    account_id  BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name        TEXT   NOT NULL,
    company     TEXT   NOT NULL DEFAULT '',
    email       TEXT   NOT NULL DEFAULT '',
    notes       TEXT   NOT NULL DEFAULT '',
    tags        TEXT   NOT NULL DEFAULT '[]',
    search      TEXT   NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX contacts_account ON contacts (account_id, id);

CREATE TABLE contact_numbers (
    account_id  BIGINT NOT NULL,
    number      TEXT   NOT NULL,
    contact_id  BIGINT NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
    label       TEXT   NOT NULL DEFAULT '',
    position    INTEGER NOT NULL,
    PRIMARY KEY (account_id, number)
);
CREATE INDEX contact_numbers_contact ON contact_numbers (contact_id, position);
