// Package blob stores and serves hosted media: MMS attachments uploaded in
// POST /sms/messages and, later, call recordings.
//
// A [Store] wraps a gocloud.dev/blob bucket, so the same code runs against a
// local directory (file:///abs/path, the default), an S3-compatible bucket
// (s3://...) for scale-out, or memory (mem://, for tests).
//
// # Names are secrets
//
// The hosted URLs are public: anyone holding one can fetch the object without
// authenticating. What protects the content is that the object name is
// unguessable: [Store.Put] names every object with 32 bytes from crypto/rand,
// base64url-encoded without padding (43 characters), followed by "." and a
// short lowercase extension, for example
//
//	Jq3m0c...43 characters...kE.png
//
// Treat names and URLs as secrets: never log them. This package logs nothing,
// and the errors it returns have the name redacted (the underlying gocloud
// errors quote the key). Names are flat, drawn from [A-Za-z0-9_-] plus one dot,
// so they can never contain "/" or "..".
//
// # Serving
//
// [Store.Handler] serves GET and HEAD of /{name} relative to where it is
// mounted, for example
//
//	mux.Handle("/media/", http.StripPrefix("/media/", store.Handler()))
//
// and [Store.URL] builds the public URL from the configured public base
// (https://sb.example.com/media/). A request path that is not exactly of the
// form Put produces gets an empty 404 without the bucket being consulted.
// Content is served with http.ServeContent, so Range requests work (audio
// seeking), with the stored Content-Type and headers that keep the content
// from ever being rendered as an active page: X-Content-Type-Options: nosniff,
// Content-Security-Policy: default-src 'none'; sandbox, Referrer-Policy:
// no-referrer (the URL must not leak through a Referer header), and
// Content-Disposition: inline. Objects are immutable, so successful responses
// carry Cache-Control: private, max-age=31536000, immutable.
//
// # Durability
//
// Put returns only after the bucket writer's Close has succeeded, so a name
// that Put returned refers to a complete object. For file:// stores Put
// additionally fsyncs the object, its ".attrs" sidecar (where fileblob keeps
// the content type) and the directory, so the object survives a crash or power
// loss once Put has returned. Temporary files are created inside the store
// directory rather than in os.TempDir, so the final rename never crosses a
// filesystem boundary.
package blob
