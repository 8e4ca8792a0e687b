package defense

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// datamarkPlain is datamark rune by rune, as it was first written: the
// definition the run-at-a-time copy is held to.
func datamarkPlain(s, marker string) string {
	var b strings.Builder
	inSpace := false
	for _, r := range s {
		if r != '\n' && r != '\r' && unicode.IsSpace(r) {
			if !inSpace {
				b.WriteString(marker)
			}
			inSpace = true
			continue
		}
		inSpace = false
		b.WriteRune(r)
	}
	return b.String()
}

// retokenizePlain is retokenize rune by rune, as it was first written.
func (r *retokenization) retokenizePlain(s string) (string, bool) {
	var b strings.Builder
	split := false
	for len(s) > 0 {
		i := strings.IndexFunc(s, isWordRune)
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		s = s[i:]
		j := strings.IndexFunc(s, func(c rune) bool { return !isWordRune(c) })
		if j < 0 {
			j = len(s)
		}
		word := s[:j]
		s = s[j:]
		n := utf8.RuneCountInString(word)
		if n <= r.minLen {
			b.WriteString(word)
			continue
		}
		split = true
		pieces := (n + r.piece - 1) / r.piece
		for k := range pieces {
			size := (k+1)*n/pieces - k*n/pieces
			if k > 0 {
				b.WriteString(r.sep)
			}
			for range size {
				_, w := utf8.DecodeRuneInString(word)
				b.WriteString(word[:w])
				word = word[w:]
			}
		}
	}
	return b.String(), split
}

// fastPathBits are the pieces randomDefenseText puts together: words
// short and long (ASCII, accented, with combining marks, ideographs),
// every kind of space and line break, every ASCII control byte, invalid
// UTF-8, U+FFFD itself, U+2028 and U+2029, <>&, and letters whose lower
// case differs in length (İ, the Kelvin sign).
var fastPathBits = []string{
	"a", "word", "characterization", "antidisestablishmentarianism", "überlangeswortmitumlauten", "e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301",
	"日本語のながいぶんしょうです", "x1234567890y", "İİİİİİİİİİİİ", "\u212a\u212a\u212a\u212a\u212a\u212a\u212a\u212a\u212a\u212a\u212a",
	" ", "  ", "\t", "\v", "\f", "\r", "\n", "\r\n", "\u00a0", "\u0085", "\u1680", "\u2000", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000",
	"\x00", "\x01", "\x1f", "\x7f", "\xff", "\xc3", "\xe2\x80", "\ufffd", "<", ">", "&", "-", "_", ".", "^",
}

func randomDefenseText(rng *rand.Rand) string {
	var b strings.Builder
	for range rng.IntN(40) {
		if rng.IntN(8) == 0 {
			b.WriteByte(byte(rng.IntN(256)))
		} else {
			b.WriteString(fastPathBits[rng.IntN(len(fastPathBits))])
		}
	}
	return b.String()
}

// TestDatamarkAndRetokenizeAsThePlainLoops: the run-at-a-time datamark and
// retokenize give what the rune-by-rune loops give, on the test data, on
// every byte and rune of the first planes' blocks in text, and on random
// texts of troublesome pieces, for several markers, separators and
// lengths.
func TestDatamarkAndRetokenizeAsThePlainLoops(t *testing.T) {
	rets := []*retokenization{
		{minLen: 10, sep: "-", piece: 5}, {minLen: 2, sep: "·", piece: 1}, {minLen: 3, sep: "--", piece: 2}, {minLen: 40, sep: "|", piece: 20},
	}
	check := func(s string) {
		t.Helper()
		for _, marker := range []string{"^", "◊", "ab"} {
			if got, want := datamark(s, marker), datamarkPlain(s, marker); got != want {
				t.Fatalf("datamark(%q, %q) = %q, want %q", s, marker, got, want)
			}
		}
		for _, r := range rets {
			got, gotSplit := r.retokenize(s)
			want, wantSplit := r.retokenizePlain(s)
			if got != want || gotSplit != wantSplit {
				t.Fatalf("retokenize(%q) with %+v = %q, %v; want %q, %v", s, *r, got, gotSplit, want, wantSplit)
			}
		}
	}
	for _, s := range testData {
		check(s)
	}
	for c := range 256 {
		check("abc" + string([]byte{byte(c)}) + "defghijklmnop q")
	}
	for r := rune(0x80); r < 0x3100; r++ {
		check("abcdefghijkl" + string(r) + "mnopqrstuvwx " + string(r) + " y" + string(r))
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for range 100_000 {
		check(randomDefenseText(rng))
	}
}

// FuzzDatamarkAndRetokenize compares them with the plain loops on any
// text.
func FuzzDatamarkAndRetokenize(f *testing.F) {
	for _, s := range testData {
		f.Add(s)
	}
	f.Add("\xff\u2028İ\u212a  \t\vx")
	r := &retokenization{minLen: 10, sep: "-", piece: 5}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := datamark(s, "^"), datamarkPlain(s, "^"); got != want {
			t.Fatalf("datamark(%q) = %q, want %q", s, got, want)
		}
		got, gotSplit := r.retokenize(s)
		want, wantSplit := r.retokenizePlain(s)
		if got != want || gotSplit != wantSplit {
			t.Fatalf("retokenize(%q) = %q, %v; want %q, %v", s, got, gotSplit, want, wantSplit)
		}
	})
}
