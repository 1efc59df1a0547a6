// Package sms is the messaging domain: the lines a credential may send from,
// and (later) sending, pricing and inbound texts.
package sms
