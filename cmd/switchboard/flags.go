package main

import (
	"strconv"
	"strings"
	"time"

	"switchboard/internal/bytesize"
)

// optionalBool is a boolean flag that remembers whether it was given, so
// "account set" changes only the settings named on the command line.
type optionalBool struct {
	set, value bool
}

func (b *optionalBool) String() string { return strconv.FormatBool(b.value) }

func (b *optionalBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	b.set, b.value = true, v
	return nil
}

func (b *optionalBool) IsBoolFlag() bool { return true }

func (b *optionalBool) apply(dst *bool) {
	if b.set {
		*dst = b.value
	}
}

// optionalSize is a size flag (bytesize.Parse: 500MiB, 1GiB, 750MB, bytes)
// that remembers whether it was given.
type optionalSize struct {
	set   bool
	value int64
}

func (f *optionalSize) String() string { return strconv.FormatInt(f.value, 10) }

func (f *optionalSize) Set(s string) error {
	v, err := bytesize.Parse(s)
	if err != nil {
		return err
	}
	f.set, f.value = true, v
	return nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func nonNilIDs(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}

func validTimeZone(name string) bool {
	_, err := time.LoadLocation(name)
	return err == nil
}

// optionalString is a string flag that remembers whether it was given, so
// an edit changes only the fields named on the command line (and "" can
// clear one).
type optionalString struct {
	set   bool
	value string
}

func (f *optionalString) String() string { return f.value }

func (f *optionalString) Set(s string) error {
	f.set, f.value = true, s
	return nil
}

func (f *optionalString) apply(dst *string) {
	if f.set {
		*dst = f.value
	}
}
