package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"
)

// The lexing of a result line: what the streaming readers need to find a
// field's value and check the structure of what they skip, without
// decoding it.

// Describe shows the start of some unexpected text, quoted (so nothing in
// it reaches a terminal raw).
func Describe(b []byte) string {
	if len(b) == 0 {
		return "the end of the file"
	}
	if len(b) > 24 {
		b = b[:24]
		for len(b) > 0 && !utf8.Valid(b) {
			b = b[:len(b)-1]
		}
		return strconv.Quote(string(b)) + "…"
	}
	return strconv.Quote(string(b))
}

// eachField calls fn with each key (unescaped) and value of a JSON object
// whose structure is known to be sound; anything but an object calls it
// for nothing.
func eachField(b []byte, fn func(key, v []byte)) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return
	}
	for i = skipSpace(b, i+1); i < len(b) && b[i] == '"'; {
		end, ok := stringEnd(b, i)
		if !ok {
			return
		}
		key := b[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if json.Unmarshal(b[i:end], &k) != nil {
				return
			}
			key = []byte(k)
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return
		}
		start := skipSpace(b, i+1)
		stop, err := skipValue(b, start, 0)
		if err != nil {
			return
		}
		fn(key, b[start:stop])
		if i = skipSpace(b, stop); i >= len(b) || b[i] != ',' {
			return
		}
		i = skipSpace(b, i+1)
	}
}

// eachElement calls fn with each element of a JSON array whose structure
// is known to be sound; anything but an array calls it for nothing.
func eachElement(b []byte, fn func(v []byte)) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return
	}
	for i = skipSpace(b, i+1); i < len(b) && b[i] != ']'; {
		stop, err := skipValue(b, i, 0)
		if err != nil {
			return
		}
		fn(b[i:stop])
		if i = skipSpace(b, stop); i >= len(b) || b[i] != ',' {
			return
		}
		i = skipSpace(b, i+1)
	}
}

// ErrSyntax is the error of a text that is not JSON.
var ErrSyntax = errors.New("invalid JSON")

// ErrTruncated is SkipValue's error when the text ends inside a value.
var ErrTruncated = errors.New("unexpected end of JSON")

// maxSkipDepth bounds the nesting skipValue follows.
const maxSkipDepth = 10000

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index just past the JSON string that starts at
// b[i] (a quote), and false when it does not end in b.
func stringEnd(b []byte, i int) (int, bool) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b), false
		}
		j += k
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1, true
		}
		j++
	}
}

// skipValue returns the index just past the JSON value starting at b[i],
// checking its structure: strings end, brackets match, objects hold
// "key": value pairs, literals and numbers are well formed. (The insides
// of strings are not checked.) It returns ErrTruncated when b ends inside
// the value.
func skipValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return i, ErrTruncated
	}
	switch c := b[i]; {
	case c == '"':
		end, ok := stringEnd(b, i)
		if !ok {
			return end, ErrTruncated
		}
		return end, nil
	case c == '{' || c == '[':
		if depth >= maxSkipDepth {
			return i, errors.New("JSON nested too deeply")
		}
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return i, ErrTruncated
		}
		if b[i] == closer {
			return i + 1, nil
		}
		for {
			var err error
			if c == '{' {
				if i >= len(b) {
					return i, ErrTruncated
				}
				if b[i] != '"' {
					return i, ErrSyntax
				}
				end, ok := stringEnd(b, i)
				if !ok {
					return end, ErrTruncated
				}
				i = skipSpace(b, end)
				if i >= len(b) {
					return i, ErrTruncated
				}
				if b[i] != ':' {
					return i, ErrSyntax
				}
				i = skipSpace(b, i+1)
			}
			if i, err = skipValue(b, i, depth+1); err != nil {
				return i, err
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return i, ErrTruncated
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
			case closer:
				return i + 1, nil
			default:
				return i, ErrSyntax
			}
		}
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return number(b, i)
	}
	return i, ErrSyntax
}

func literal(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) {
		if string(b[i:]) == lit[:len(b)-i] {
			return len(b), ErrTruncated
		}
		return i, ErrSyntax
	}
	if string(b[i:i+len(lit)]) != lit {
		return i, ErrSyntax
	}
	return i + len(lit), nil
}

// number skips a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
// A number that reaches the end of b may go on past it: ErrTruncated.
func number(b []byte, i int) (int, error) {
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	bad := func() (int, error) {
		if i == len(b) {
			return i, ErrTruncated
		}
		return i, ErrSyntax
	}
	if b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if digits() == 0 {
		return bad()
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return bad()
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return bad()
		}
	}
	if i == len(b) {
		return i, ErrTruncated
	}
	return i, nil
}

// SkipValue returns the index just past the JSON value that starts at
// b[i] (after white space), checking its structure: ErrSyntax when it is
// not JSON, ErrTruncated when b ends inside it.
func SkipValue(b []byte, i int) (int, error) { return skipValue(b, skipSpace(b, i), 0) }
