package httpapi_test

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"
)

// realImage returns a real, minimal (1×1) image of an allowed attachment
// type, since the send checks content against its declared type.
func realImage(t testing.TB, contentType string) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 200, G: 30, B: 30, A: 255})
	var b bytes.Buffer
	var err error
	switch contentType {
	case "image/png":
		err = png.Encode(&b, img)
	case "image/jpeg":
		err = jpeg.Encode(&b, img, nil)
	case "image/gif":
		err = gif.Encode(&b, img, nil)
	case "image/bmp":
		return bmp1x1()
	default:
		t.Fatalf("realImage: no %s", contentType)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// paddedImage is a real image followed by zeros up to n bytes: the largest
// attachments, whose size matters and not their pixels.
func paddedImage(t testing.TB, contentType string, n int) []byte {
	img := realImage(t, contentType)
	out := make([]byte, n)
	copy(out, img)
	return out
}

// bmp1x1 is a 24-bit, one-pixel Windows bitmap (the standard library has no
// BMP encoder): a 14-byte file header, a 40-byte info header and one row of
// 3 bytes padded to 4.
func bmp1x1() []byte {
	var b bytes.Buffer
	le := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("BM")
	le(uint32(58))                  // file size
	le(uint32(0))                   // reserved
	le(uint32(54))                  // pixel data offset
	le(uint32(40))                  // info header size
	le(int32(1))                    // width
	le(int32(1))                    // height
	le(uint16(1))                   // planes
	le(uint16(24))                  // bits per pixel
	le(uint32(0))                   // no compression
	le(uint32(4))                   // image size
	le(int32(2835))                 // 72 dpi
	le(int32(2835))                 // 72 dpi
	le(uint32(0))                   // palette colours
	le(uint32(0))                   // important colours
	b.Write([]byte{30, 30, 200, 0}) // one blue-green-red pixel, padded
	return b.Bytes()
}
