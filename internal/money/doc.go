// Package money represents US-dollar amounts exactly, as integer millionths
// of a dollar.
//
// Per-segment rates such as 0.0079 have no exact binary floating-point form,
// and prices are multiplied by segment counts and summed into ledgers, so
// floats would drift. Micros keeps every step integral and reads and writes
// JSON numbers directly from and to decimal text, so a rate in the API
// ("billing.totalPrice", "messages[].unitPrice" in the public API spec) is
// exactly the rate that was configured.
package money
