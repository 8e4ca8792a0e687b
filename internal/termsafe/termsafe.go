// Package termsafe makes untrusted text safe to print on a terminal. In
// pikit's field model output, dataset files and results files are written
// by attackers, and a terminal interprets what reaches it: an ESC starts a
// CSI or OSC sequence that can move the cursor, rewrite the screen, set the
// window title, or write to the clipboard; a carriage return or backspace
// hides what came before it; a bidi override reorders what is shown.
//
// Everything here shows such characters as visible escapes and passes the
// rest through: C0 controls other than newline and tab, DEL and invalid
// UTF-8 bytes as \xNN (\r as \r); C1 controls, bidi embeddings, overrides,
// isolates and marks, line and paragraph separators and other invisible
// format characters as \uXXXX. Inside a JSON document the \uXXXX form is
// the JSON escape of the same character (and encoding/json never leaves a
// C0 control or an invalid byte unescaped), so a JSON stream stays valid
// JSON with the same values.
package termsafe

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Unsafe reports whether r must be escaped before it reaches a terminal.
// Newline and tab are safe.
func Unsafe(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f: // C1 controls: 0x9b is a one-byte CSI
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, // bidi marks
		r >= 0x202a && r <= 0x202e, // embeddings and overrides
		r >= 0x2066 && r <= 0x2069, // isolates
		r == 0x2028, r == 0x2029:   // line and paragraph separators
		return true
	case r == utf8.RuneError:
		return false // a real U+FFFD; invalid bytes are handled apart
	}
	return unicode.Is(unicode.Cf, r) && r != 0x200d // format characters, but keep the emoji joiner
}

// String returns s with every unsafe character escaped; newlines and tabs
// are kept.
func String(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	appendEscaped(&b, s)
	return b.String()
}

// Line is String for a one-line field: newlines and tabs are escaped too
// (as \n and \t), so a value cannot break a table row.
func Line(s string) string {
	if clean(s) && !strings.ContainsAny(s, "\n\t") {
		return s
	}
	s = strings.NewReplacer("\n", `\n`, "\t", `\t`).Replace(s)
	return String(s)
}

// clean reports whether s holds nothing to escape, quickly for ASCII.
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			for _, r := range s[i:] {
				if r == utf8.RuneError || Unsafe(r) {
					return false
				}
			}
			return true
		}
		if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

func appendEscaped(b *strings.Builder, s string) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(b, `\x%02x`, s[i])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(b, `\x%02x`, r)
		case Unsafe(r):
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
}

// Writer escapes what is written through it before passing it on. A
// multi-byte character split across two writes is held until it completes;
// Flush writes what is held (escaped, if it never completed).
type Writer struct {
	w       io.Writer
	pending []byte
}

// NewWriter returns a Writer passing safe text to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p and writes it. It reports len(p) on success.
func (w *Writer) Write(p []byte) (int, error) {
	n := len(p)
	if len(w.pending) > 0 {
		p = append(w.pending, p...)
		w.pending = nil
	}
	// Hold back an incomplete character at the end.
	if cut := incompleteTail(p); cut < len(p) {
		w.pending = append([]byte(nil), p[cut:]...)
		p = p[:cut]
	}
	s := string(p)
	if !clean(s) {
		s = String(s)
	}
	if _, err := io.WriteString(w.w, s); err != nil {
		return 0, err
	}
	return n, nil
}

// Flush writes a held incomplete character, escaped.
func (w *Writer) Flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	s := String(string(w.pending))
	w.pending = nil
	_, err := io.WriteString(w.w, s)
	return err
}

// incompleteTail returns where a trailing incomplete (but so far valid)
// UTF-8 sequence starts, or len(p) when there is none.
func incompleteTail(p []byte) int {
	for back := 1; back <= 3 && back <= len(p); back++ {
		i := len(p) - back
		if !utf8.RuneStart(p[i]) {
			continue
		}
		if !utf8.FullRune(p[i:]) {
			return i
		}
		return len(p)
	}
	return len(p)
}
