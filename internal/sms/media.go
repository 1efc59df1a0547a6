package sms

import "bytes"

// imageType is what the service knows about one accepted attachment type.
type imageType struct {
	ext   string   // the extension hosted names get: never the client's
	magic [][]byte // file signatures, any of which the content must start with
}

// imageTypes are the attachment types the spec allows. The hosted name's
// extension comes from here, so that a client's filename can neither collide
// with the blob store's own files (fileblob's ".attrs" sidecars) nor give a
// PNG an ".html" name.
var imageTypes = map[string]imageType{
	"image/jpeg": {ext: "jpg", magic: [][]byte{{0xFF, 0xD8, 0xFF}}},
	"image/png":  {ext: "png", magic: [][]byte{[]byte("\x89PNG\r\n\x1a\n")}},
	"image/gif":  {ext: "gif", magic: [][]byte{[]byte("GIF87a"), []byte("GIF89a")}},
	"image/bmp":  {ext: "bmp", magic: [][]byte{[]byte("BM")}},
}

// hasSignature reports whether data starts with one of t's file signatures.
// Only the signature is checked, not the whole image: decoding ten 5 MB
// images per request would cost more than it protects, and hosted media is
// served with nosniff and a sandboxing Content-Security-Policy, so a file
// that merely starts like an image is never rendered as a page.
func (t imageType) hasSignature(data []byte) bool {
	for _, m := range t.magic {
		if bytes.HasPrefix(data, m) {
			return true
		}
	}
	return false
}
