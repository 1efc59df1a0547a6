// Package phone normalizes and validates phone numbers as the public API
// spec's "Phone number handling" section describes.
//
// Normalization is deliberately lexical (strip formatting, add a North
// American country code to bare 10-digit numbers) so that de-duplication is
// predictable; whether the resulting number can actually be dialled is a
// separate question, answered by Dialable with libphonenumber's metadata.
package phone
