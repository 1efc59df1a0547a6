// Package carriers is Switchboard's carrier connections (issue 34): named
// connections kept in the database (so that every node and the CLI see the
// same), the settings each kind takes and which of them are secret, and
// the router through which every send reaches the connection of the line
// it is sent from. A line without a connection uses the server's --carrier
// flags, as before connections existed.
//
// The protocols are packages of their own that know nothing of
// Switchboard (internal/carrier/kannel, internal/carrier/sim, and the SMPP,
// Twilio and Telnyx clients); this package holds the rules: which kinds
// exist, what a name may be, what is printed back, what a connection's
// state is, and where its texts go.
package carriers
