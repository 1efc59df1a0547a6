package auth

import (
	"sync"

	"golang.org/x/crypto/bcrypt"
)

// HashPassword hashes a portal password for storage.
func HashPassword(password string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	return string(h), err
}

// dummyHash is compared against when the user does not exist, so that sign-in
// takes the same time whether or not the username is known. It is made on
// first use: computing it at start-up would slow every CLI command.
var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("switchboard-dummy-password"), bcrypt.DefaultCost)
	return h
})

// CheckPassword reports whether password matches hash. An empty hash (no
// portal access, or no such user) still costs one bcrypt comparison.
func CheckPassword(hash, password string) bool {
	if hash == "" {
		bcrypt.CompareHashAndPassword(dummyHash(), []byte(password))
		return false
	}
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) == nil
}
