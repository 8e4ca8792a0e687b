// Package textcut shortens text without splitting a UTF-8 sequence, for
// the many places that show or keep only the start of a long text.
package textcut

import "unicode/utf8"

// Prefix returns the longest prefix of s of at most n bytes that ends on
// a rune boundary: s itself when it is no longer than n.
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:max(n, 0)]
}

// Clip returns s when it is at most n bytes, else its Prefix of n bytes
// followed by mark.
func Clip(s string, n int, mark string) string {
	if len(s) <= n {
		return s
	}
	return Prefix(s, n) + mark
}
