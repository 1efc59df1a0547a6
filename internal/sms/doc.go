// Package sms is the messaging domain: the lines a credential may send from,
// sending (validation, recipients, pricing, the intent-carrier-outcome money
// path and its reconciliation), inbound texts with opt-outs, and delivery
// receipts.
package sms
