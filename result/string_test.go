package result

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// firstSpecial is skipPlain's answer found a byte at a time: the index of
// the first byte of s that is not ASCII or not htmlSafe, or len(s).
func firstSpecial(s string) int {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf || htmlSafe[s[i]] == 0 {
			return i
		}
	}
	return len(s)
}

// TestSkipPlain compares skipPlain on words of eight bytes with the
// byte-at-a-time search on every byte at every place among plain bytes,
// on every pair of bytes, and on random words of bytes, of ASCII, and of
// bytes near the ones that need escaping.
func TestSkipPlain(t *testing.T) {
	check := func(b []byte) {
		t.Helper()
		if got, want := skipPlain(string(b), 0), firstSpecial(string(b)); got != want {
			t.Fatalf("skipPlain(%q) = %d, want %d", b, got, want)
		}
		// After plain bytes, and with too few bytes to read at once.
		s := "12345678" + string(b)
		if got, want := skipPlain(s, 0), firstSpecial(s); got != want {
			t.Fatalf("skipPlain(%q) = %d, want %d", s, got, want)
		}
		if got := skipPlain(string(b[:7]), 0); got != 0 {
			t.Fatalf("skipPlain(%q) = %d, want 0: fewer than eight bytes", b[:7], got)
		}
	}
	for c := range 256 {
		for at := range 8 {
			b := []byte("abcdefgh")
			b[at] = byte(c)
			check(b)
			// Next to a byte just below or above the ones that need
			// escaping, where a carry or a borrow could mislead.
			for _, n := range []byte{0x1f, 0x20, 0x21, 0x23, 0x25, 0x27, 0x3b, 0x3d, 0x3f, 0x5b, 0x5d, 0x7f, 0x80, 0x01, 0x00} {
				b[(at+1)%8] = n
				check(b)
			}
		}
		for d := range 256 {
			b := []byte("xyz  ABC")
			b[3], b[4] = byte(c), byte(d)
			check(b)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	near := []byte("\x00\x1f !\"#%&'+;<=>?[\\]^_`{|}~\x7f\x80\xe2\xff")
	b := make([]byte, 8)
	for range 1_000_000 {
		for i := range b {
			switch rng.IntN(3) {
			case 0:
				b[i] = byte(rng.IntN(256))
			case 1:
				b[i] = byte(rng.IntN(128))
			default:
				b[i] = near[rng.IntN(len(near))]
			}
		}
		check(b)
	}
}

// hostileRunes are what appendString escapes or passes over specially.
var hostileRunes = []string{
	"<", ">", "&", "\"", "\\", "\n", "\r", "\t", "\b", "\f", "\x00", "\x01", "\x1f", "\x7f", " ", "a", "Z", "~",
	"\u2028", "\u2029", "\u2027", "\u202a", "é", "日", "🙂", "\ufeff", "\ufffd", "İ", "\u212a",
	"\xff", "\xc3", "\xe2\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "plain text run ",
}

// TestAppendStringAsEncodingJSON compares appendString with json.Marshal
// on random strings of hostile runes and plain runs, at every alignment.
func TestAppendStringAsEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100_000 {
		var sb strings.Builder
		for range rng.IntN(30) {
			if rng.IntN(6) == 0 {
				sb.WriteByte(byte(rng.IntN(256)))
			} else {
				sb.WriteString(hostileRunes[rng.IntN(len(hostileRunes))])
			}
		}
		for pad := range 8 {
			s := strings.Repeat("p", pad) + sb.String()
			want, _ := json.Marshal(s)
			if got := appendString([]byte("x"), s); !bytes.Equal(got[1:], want) {
				t.Fatalf("%q: got %s, want %s", s, got[1:], want)
			}
		}
	}
}

// FuzzAppendString compares appendString with json.Marshal on any string.
func FuzzAppendString(f *testing.F) {
	for _, s := range hostileRunes {
		f.Add("12345678" + s + "abcdefgh")
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}
