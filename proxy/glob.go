package proxy

import (
	"path"
	"unicode/utf8"
)

// The globs of taint rules and sinks. They match a whole string, and
// unlike path.Match's, their * crosses '/': an argument glob is about a
// URL, a path with directories or a sentence as much as a file name.
//
//	*        any run of characters, '/' included (or none)
//	?        any one character
//	[abc]    one of the characters listed; [a-z] a range; [^abc] none of them
//	\c       the character c itself (\*, \?, \[)
//
// A tool name has no '/', so tool and sink globs read as they always did.

// validGlob reports a malformed pattern (an unclosed [ or a \ at the end).
// The bracket and escape syntax is path.Match's, so path checks it.
func validGlob(pattern string) error {
	_, err := path.Match(pattern, "")
	return err
}

// globMatch reports whether s matches pattern as a whole; a malformed
// pattern matches nothing.
func globMatch(pattern, s string) bool {
	// The classic walk: on a mismatch, go back to the last * and let it
	// take one more character of s.
	p, i := 0, 0
	star, starI := -1, 0
	for i < len(s) {
		if p < len(pattern) {
			if pattern[p] == '*' {
				star, starI = p, i
				p++
				continue
			}
			if np, ni, ok := matchOne(pattern, p, s, i); ok {
				p, i = np, ni
				continue
			}
		}
		if star < 0 {
			return false
		}
		_, w := utf8.DecodeRuneInString(s[starI:])
		starI += w
		p, i = star+1, starI
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchOne matches the pattern element at pattern[p] (a character, ?, a
// class or an escape) against the character at s[i], and returns where
// each goes on.
func matchOne(pattern string, p int, s string, i int) (int, int, bool) {
	r, w := utf8.DecodeRuneInString(s[i:])
	switch pattern[p] {
	case '?':
		return p + 1, i + w, true
	case '[':
		end := classEnd(pattern, p)
		if end < 0 {
			return 0, 0, false
		}
		// The class alone, as path.Match reads it, against one character.
		if ok, err := path.Match(pattern[p:end], s[i:i+w]); err != nil || !ok {
			return 0, 0, false
		}
		return end, i + w, true
	case '\\':
		if p+1 >= len(pattern) {
			return 0, 0, false
		}
		p++
	}
	pr, pw := utf8.DecodeRuneInString(pattern[p:])
	if pr != r {
		return 0, 0, false
	}
	return p + pw, i + w, true
}

// classEnd returns the index just past the ] that closes the class that
// opens at pattern[p], or -1.
func classEnd(pattern string, p int) int {
	j := p + 1
	if j < len(pattern) && pattern[j] == '^' {
		j++
	}
	for first := true; j < len(pattern); first = false {
		switch pattern[j] {
		case ']':
			if !first {
				return j + 1
			}
		case '\\':
			j++
		}
		j++
	}
	return -1
}
