package dataset

import (
	"fmt"
	"unicode/utf8"

	"github.com/pikit-go/pikit/internal/termsafe"
)

// AppendQuoted appends s as a TOML basic string, with the one escaping
// rule every writer of dataset files uses (pikit import, pikit
// export-case): quotes, backslashes, newlines and tabs escaped as TOML
// spells them, and every other character a terminal or an editor could act
// on — C0 and C1 controls, DEL, bidi controls, line separators, invisible
// format characters (termsafe.Unsafe) — written as a \u or \U escape, so a
// file written from a hostile benchmark holds none of them raw. Invalid
// UTF-8 is written as U+FFFD, which is what a TOML reader would refuse
// otherwise.
func AppendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\t':
			b = append(b, `\t`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r < 0x20 || r == 0x7f || termsafe.Unsafe(r):
			if r > 0xffff {
				b = fmt.Appendf(b, `\U%08X`, r)
			} else {
				b = fmt.Appendf(b, `\u%04X`, r)
			}
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}

// Quote returns s as a TOML basic string (see AppendQuoted).
func Quote(s string) string { return string(AppendQuoted(make([]byte, 0, len(s)+2), s)) }
