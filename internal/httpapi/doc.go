// Package httpapi is Switchboard's HTTP surface: the route table, the success
// envelope and the one error writer, strict JSON decoding, authentication and
// scope checks, request ids, metrics, health and panic recovery. Handlers are
// thin: decode, call one domain function, encode.
package httpapi
