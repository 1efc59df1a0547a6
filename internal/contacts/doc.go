// Package contacts is the team address book (issue 33): a name, company,
// email, notes, tags and one or more numbers per contact, one contact per
// number per account. It keeps the rules (what a valid contact is, how a
// number is normalized, as the send path does, who may read, write and
// delete, what an imported row does) and builds the AccountContacts events;
// internal/store holds its SQL, internal/httpapi its routes.
package contacts
