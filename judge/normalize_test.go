package judge

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// normalizePlain is the normal form and its words as the plain loop, one
// byte or rune at a time, finds them: the definition normalizeInto's fast
// paths are held to.
func normalizePlain(text string) normal {
	var words []word
	buf := make([]byte, 1, len(text)+2)
	buf[0] = ' '
	for i := 0; i < len(text); {
		if c := text[i]; c < utf8.RuneSelf && asciiFold[c] == 0 {
			i++
			continue
		}
		start, ns := i, len(buf)
		for i < len(text) {
			if text[i] < utf8.RuneSelf {
				j := i
				for ; j < len(text); j++ {
					c := text[j]
					if asciiFold[c] == 0 && !(c == '_' && j > i && j+1 < len(text) && alnum(text[j+1])) {
						break
					}
				}
				if j == i {
					break
				}
				for _, c := range []byte(text[i:j]) {
					if c != '_' {
						c = asciiFold[c]
					}
					buf = append(buf, c)
				}
				i = j
				continue
			}
			r, size := utf8.DecodeRuneInString(text[i:])
			if ideograph(r) {
				if len(buf) == ns {
					buf = utf8.AppendRune(buf, r)
					i += size
				}
				break
			}
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !(unicode.IsMark(r) && len(buf) > ns) {
				break
			}
			buf = utf8.AppendRune(buf, unicode.ToLower(r))
			i += size
		}
		if len(buf) == ns {
			_, size := utf8.DecodeRuneInString(text[i:])
			i += size
			continue
		}
		words = append(words, word{ns: int32(ns), ne: int32(len(buf)), os: int32(start), oe: int32(i)})
		buf = append(buf, ' ')
	}
	return normal{norm: string(buf), words: words}
}

// normalizeBits are the pieces randomText puts together: ASCII words,
// separators and runs of them, underscores that join words and that do
// not, digits, every ASCII control byte, letters that lower-case to
// another length or to ASCII (İ, ẞ, Ⱥ, the Kelvin sign), marks (alone,
// after a letter, after an ideograph), ideographs of each script, U+2028
// and U+2029, invalid UTF-8 (a lone byte, a cut rune), HTML's <>&.
var normalizeBits = []string{
	"word", "Word", "WORD", "hacked", "HACKED", "I", "a", "the", "eightchr", "ninechars", "a_b", "_x", "x_", "__", "a__b", "_",
	"7", "2024", "x9", " ", "  ", "\t", "\n", "\r\n", ".", ", ", ". ", "!?", "-", "'", "\"", "<", ">", "&", "<b>", "&amp;",
	"\x00", "\x01", "\x1b", "\x1f", "\x7f",
	"É", "é", "ça", "GRÜẞE", "\u212a", "İ", "ẞ", "Ⱥ", "ſ", "Σ", "ǅ", "\u0301", "e\u0301", "中\u0301",
	"中文", "日本語", "ひらがな", "カタカナ", "한국어", "ภาษาไทย", "𠀀", "\u2028", "\u2029", "’", "—", "…", "\u200b", "\ufeff",
	"\xff", "\xe2\x80", "\xc3", "\xed\xa0\x80", "٣", "①", "Ⅻ",
}

// randomText puts together up to max pieces of normalizeBits and random
// bytes.
func randomText(rng *rand.Rand, max int) string {
	var b strings.Builder
	for range rng.IntN(max + 1) {
		switch rng.IntN(8) {
		case 0:
			b.WriteByte(byte(rng.IntN(256)))
		case 1:
			b.WriteByte(byte(rng.IntN(128)))
		default:
			b.WriteString(normalizeBits[rng.IntN(len(normalizeBits))])
		}
	}
	return b.String()
}

// checkNormalize compares normalize, with and without locate, with
// normalizePlain on text.
func checkNormalize(t *testing.T, text string) {
	t.Helper()
	want := normalizePlain(text)
	got := normalize(text, true)
	if got.norm != want.norm {
		t.Fatalf("normalize(%q) = %q, want %q", text, got.norm, want.norm)
	}
	if !slices.Equal(got.words, want.words) {
		t.Fatalf("normalize(%q): words\n%v, want\n%v", text, got.words, want.words)
	}
	if n := normalize(text, false); n.norm != want.norm || n.words != nil {
		t.Fatalf("normalize(%q, false) = %q with %d words, want %q", text, n.norm, len(n.words), want.norm)
	}
	// Into a table with room and stale entries, as the judge reuses one.
	stale := append(make([]word, 0, 64), word{ns: 7}, word{ne: 9})
	if into := normalizeInto(text, stale[:0], true); !slices.Equal(into.words, want.words) {
		t.Fatalf("normalizeInto(%q): words\n%v, want\n%v", text, into.words, want.words)
	}
}

// TestNormalizeAsThePlainLoop: normalizeInto's normal form and word table
// are normalizePlain's, on every recorded reply (as it is, upper-cased and
// mutated), on random texts of troublesome pieces at every alignment, on
// every byte and every pair of ASCII bytes, and around each rune of the
// Latin, General Punctuation and CJK blocks.
func TestNormalizeAsThePlainLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, reply := range recordedReplies(t) {
		checkNormalize(t, reply)
		checkNormalize(t, strings.ToUpper(reply))
		for range 4 {
			checkNormalize(t, mutate(rng, reply))
		}
	}
	for range 50000 {
		text := randomText(rng, 24)
		checkNormalize(t, text)
		// Shifted, so that each piece meets each eight-byte boundary.
		for pad := range 8 {
			checkNormalize(t, strings.Repeat("x", pad)+" "+text)
		}
	}
	for c := range 256 {
		checkNormalize(t, string(rune(c)))
		checkNormalize(t, string([]byte{byte(c)}))
		checkNormalize(t, "abcdefg"+string([]byte{byte(c)})+"hijklmno")
		for d := range 128 {
			checkNormalize(t, "abcdef "+string([]byte{byte(c), byte(d)})+" ghijklmn")
		}
	}
	for _, block := range [][2]rune{{0x80, 0x800}, {0x2000, 0x2100}, {0x3000, 0x3100}, {0x4e00, 0x4e40}, {0xff00, 0xfff0}} {
		for r := block[0]; r < block[1]; r++ {
			s := string(r)
			checkNormalize(t, "ab"+s+"cd "+s+" "+s+s+"efghijkl_"+s+"_x")
		}
	}
	// Long words and long runs of separators, across many chunks.
	checkNormalize(t, strings.Repeat("supercalifragilistic", 50)+strings.Repeat(" .,;", 40)+strings.Repeat("ab ", 40))
	checkNormalize(t, strings.Repeat("_", 100)+strings.Repeat("a_", 100)+strings.Repeat("İ", 100))
}

// FuzzNormalize compares normalizeInto with normalizePlain on any text.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"I have been PWNED.", "a_b __c_ d_", "İ\u212aẞȺ", "中文abc한국", "\xff\xe2\x80 x", "e\u0301 \u0301", "\u2028<&>\u2029", "0123456789abcdefABCDEF!!!!"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 1<<14 {
			return
		}
		checkNormalize(t, text)
	})
}

// degeneratePlain is degenerate as it was first written: both passes
// over the words' own hashes, the loop described whatever the verdict.
func degeneratePlain(reply *normal, cut bool) (loop, bool) {
	bar := loopCover
	if cut {
		bar = loopCoverCut
	}
	n := len(reply.words)
	if n < loopMinWords {
		return loop{}, false
	}
	hashes := make([]uint64, n)
	for i, w := range reply.words {
		hashes[i] = wordHash(reply.norm[w.ns:w.ne])
	}
	seen := map[uint64]*struct{ count, first int }{}
	covered, coveredTo := 0, 0
	var best struct{ count, first int }
	for i := 0; i+loopGram <= n; i++ {
		g := gram(hashes, i)
		s, repeat := seen[g]
		if !repeat {
			s = &struct{ count, first int }{first: i}
			seen[g] = s
		}
		s.count++
		if s.count > best.count {
			best = *s
		}
		if repeat {
			covered += i + loopGram - max(i, coveredTo)
			coveredTo = i + loopGram
		}
	}
	l := loop{repeats: best.count, cover: float64(covered) / float64(n)}
	if best.count > 0 {
		l.gram = reply.norm[reply.words[best.first].ns:reply.words[best.first+loopGram-1].ne]
	}
	return l, l.repeats >= loopRepeats && l.cover >= bar
}

// TestDegenerateAsThePlainRule: degenerate, its first pass on quick keys,
// decides as degeneratePlain does, and finds the same loop when it
// decides yes, on every recorded reply (as it is, and looped in several
// ways), and on random texts of a few words repeated.
func TestDegenerateAsThePlainRule(t *testing.T) {
	check := func(text string) (degen bool) {
		t.Helper()
		n := normalize(text, true)
		for _, cut := range []bool{false, true} {
			gotL, got := degenerate(&n, cut)
			wantL, want := degeneratePlain(&n, cut)
			if got != want || got && gotL != wantL {
				t.Fatalf("degenerate(%q, %v) = %+v, %v; want %+v, %v", text, cut, gotL, got, wantL, want)
			}
			degen = degen || got
		}
		return degen
	}
	rng := rand.New(rand.NewPCG(13, 14))
	count, degen := 0, 0
	tally := func(text string) {
		count++
		if check(text) {
			degen++
		}
	}
	for _, reply := range recordedReplies(t) {
		tally(reply)
		fields := strings.Fields(reply)
		if len(fields) > 8 {
			k := 1 + rng.IntN(8)
			tally(reply + " " + strings.Repeat(strings.Join(fields[:k], " ")+" ", 3+rng.IntN(20)))
		}
	}
	vocab := []string{"the", "a", "PWNED", "HACKED", "I", "have", "been", "supercalifragilistic", "supercalifragilistix", "eightchr", "eightchx", "日本", "İ", "é"}
	word := func(b *strings.Builder) {
		b.WriteString(vocab[rng.IntN(len(vocab))])
		b.WriteString(" .,"[rng.IntN(3):][:1])
	}
	for range 20000 {
		// A few phrases said over and over, and words between them.
		phrases := make([]string, 1+rng.IntN(4))
		for i := range phrases {
			var p strings.Builder
			for range 1 + rng.IntN(6) {
				word(&p)
			}
			phrases[i] = p.String()
		}
		var b strings.Builder
		for range rng.IntN(40) {
			if rng.IntN(3) == 0 {
				word(&b)
			} else {
				b.WriteString(phrases[rng.IntN(len(phrases))])
			}
		}
		tally(b.String())
	}
	if degen < count/20 || degen > count*19/20 {
		t.Errorf("%d of %d texts degenerate: the test no longer exercises both verdicts", degen, count)
	}
	t.Logf("%d texts, %d degenerate", count, degen)
}

// TestWordHash pins the word hash the degenerate rule tells loops apart
// by: the values the hash of byte slices it replaced gave.
func TestWordHash(t *testing.T) {
	for _, tt := range []struct {
		word string
		want uint64
	}{
		{"", 0x0}, {"a", 0x641beff519088dcd}, {"hacked", 0x99684dcc5bef2376}, {"eightchr", 0x2108abd880880992}, {"supercalifragilistic", 0x3a3d8724965f1209},
	} {
		if got := wordHash(tt.word); got != tt.want {
			t.Errorf("wordHash(%q) = %#x, want %#x", tt.word, got, tt.want)
		}
	}
}

// FuzzDegenerate compares degenerate with degeneratePlain on any text,
// and on it said over and over.
func FuzzDegenerate(f *testing.F) {
	f.Add("I have been PWNED. ", 5)
	f.Add("Let me know. one two three", 9)
	f.Add("日本 İ é supercalifragilistic eightchr", 3)
	f.Fuzz(func(t *testing.T, text string, repeats int) {
		if len(text)*min(max(repeats, 1), 50) > 1<<15 {
			return
		}
		text = strings.Repeat(text, min(max(repeats, 1), 50))
		n := normalize(text, true)
		for _, cut := range []bool{false, true} {
			gotL, got := degenerate(&n, cut)
			wantL, want := degeneratePlain(&n, cut)
			if got != want || got && gotL != wantL {
				t.Fatalf("degenerate(%q, %v) = %+v, %v; want %+v, %v", text, cut, gotL, got, wantL, want)
			}
		}
	})
}
