// Package segment counts how many SMS segments a message body occupies.
//
// The count drives per-segment billing (see the "Segments" section of the
// public API spec), so it must be exact and cheap: Of is allocation-free and
// walks the text once (twice when it is split into several segments).
// Encoding is decided per message: a single character outside the GSM-7
// default alphabet moves the whole message to UCS-2, which is why the result
// carries the encoding alongside the counts.
package segment
