// Package webhooks is the webhook capability: subscriptions (create, update,
// enable, disable, secrets), the destination rules that keep deliveries off
// private networks, Standard Webhooks signing, and the dispatcher that turns
// outbox events into signed, retried deliveries.
package webhooks
