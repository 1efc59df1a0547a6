// Package oauth is Switchboard's OAuth 2.1 authorization server: discovery
// (RFC 8414), dynamic registration of public clients (RFC 7591), the
// authorization endpoint with its server-rendered sign-in and consent pages,
// the token endpoint (authorization code with PKCE S256, refresh-token
// rotation with reuse detection) and revocation (RFC 7009).
//
// The protocol is written by hand rather than with github.com/ory/fosite.
// The subset served is small (the code grant with PKCE S256, public clients
// only, refresh rotation), fosite's storage interfaces would have to be
// bridged to both store engines and to the store's batched write path, and
// its dependency tree is large for what it would save here. What fosite
// would have given us is kept deliberately: opaque 256-bit secrets stored
// only as SHA-256, single-use codes whose replay revokes the grant, refresh
// rotation whose reuse revokes the grant, every issuance in one transaction,
// and errors written in RFC 6749 form by their own writer.
//
// Handler serves every path itself; the caller mounts it for
// /.well-known/oauth-authorization-server, /oauth/ and /api/v1/oauth/.
package oauth
