package main

import (
	"strconv"
	"strings"
	"time"
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
