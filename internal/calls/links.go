package calls

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"

	"switchboard/internal/domain"
)

// Signed recording links have the form
//
//	/recordings/{account}/{callid}/{uniqueid}/{generation}.{signature}
//
// where the signature is HMAC-SHA256 under the current recording key of the
// account, call, leg and the call's link generation. Nothing expires: a link
// stops working when the call's generation moves on (recordings revoke) or
// the key is replaced (recordings rotate-key). Every part is ASCII that
// needs no escaping: ids are digits and dots, leg ids [A-Za-z0-9._-].

// LinkPrefix is where signed recording links are served.
const LinkPrefix = "/recordings/"

type link struct {
	account  int64
	callID   string
	uniqueID string
	gen      int64
	path     string // as given, after LinkPrefix
}

func linkMAC(key []byte, account int64, callID, uniqueID string, gen int64) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("switchboard recording link v1\n" + strconv.FormatInt(account, 10) + "\n" + callID + "\n" + uniqueID + "\n" + strconv.FormatInt(gen, 10)))
	return m.Sum(nil)
}

func linkPath(key []byte, account int64, callID, uniqueID string, gen int64) string {
	return LinkPrefix + strconv.FormatInt(account, 10) + "/" + callID + "/" + uniqueID + "/" +
		strconv.FormatInt(gen, 10) + "." + base64.RawURLEncoding.EncodeToString(linkMAC(key, account, callID, uniqueID, gen))
}

// parseLink reads the part of a link's path after LinkPrefix.
func parseLink(path string) (link, bool) {
	parts := strings.Split(path, "/")
	if len(parts) != 4 {
		return link{}, false
	}
	account, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil || account <= 0 {
		return link{}, false
	}
	if _, _, ok := domain.ParseCallID(parts[1]); !ok || !validUniqueID(parts[2]) {
		return link{}, false
	}
	g, s, ok := strings.Cut(parts[3], ".")
	if !ok {
		return link{}, false
	}
	gen, err := strconv.ParseInt(g, 10, 64)
	if err != nil || gen < 0 {
		return link{}, false
	}
	if len(s) != base64.RawURLEncoding.EncodedLen(sha256.Size) {
		return link{}, false
	}
	return link{account: account, callID: parts[1], uniqueID: parts[2], gen: gen, path: path}, true
}

// valid reports whether the link is, byte for byte, the one the server
// would hand out for its parts: the numbers parse leniently (+0, -0, 00)
// and base64 decoding ignores the padding bits of the last character, so
// comparing the decoded MAC alone would accept several spellings of one
// link. The comparison is in constant time.
func (l link) valid(key []byte) bool {
	want := linkPath(key, l.account, l.callID, l.uniqueID, l.gen)[len(LinkPrefix):]
	return hmac.Equal([]byte(l.path), []byte(want))
}

// validUniqueID reports whether s can be a leg id: 1 to 64 of [A-Za-z0-9._-].
func validUniqueID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
