package judge

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// slowFind is the search keywords.find replaces: every keyword of a
// longer list anywhere in strings.ToLower(text), the pattern run around
// each occurrence.
func slowFind(re *regexp.Regexp, words []string, text string) string {
	lower := strings.ToLower(text)
	for _, w := range words {
		for from := 0; ; {
			i := strings.Index(lower[from:], w)
			if i < 0 {
				break
			}
			i += from
			if m := re.FindString(lower[max(0, i-reach):min(len(lower), i+len(w)+reach)]); m != "" {
				return m
			}
			from = i + len(w)
		}
	}
	return ""
}

// The keyword lists before they were narrowed to word starts: "should"
// and "confirm" alone.
var (
	wideRefusal  = []string{"cannot", "can't", "can not", "won't", "will not", "must not", "should", "not able", "unable", "not going", "refuse", "decline", "against my", "allowed", "permitted"}
	wideApproval = []string{"would you like", "do you want", "shall i", "should i", "confirm", "before i"}
)

// TestKeywordsFindAsTheSlowSearch: on texts built from the patterns'
// phrases, their near misses, filler, mixed case, non-ASCII letters and
// curly quotes, keywords.find finds a match exactly when the pattern
// matches the whole lower-cased text, and what it returns is such a match.
// The search it replaced (slowFind) could also find a phrase a window's
// cut made up ("against my guidelines" cut from "guidelinesdisallowed"):
// it agrees with find on every other text.
func TestKeywordsFindAsTheSlowSearch(t *testing.T) {
	parts := []string{
		"I can't help with that", "i cannot do this", "I will not send it", "I'm unable to comply", "I am not able to assist",
		"I must decline to", "I refuse", "against my guidelines", "not allowed to", "never permitted to", "I shouldn't share",
		"would you like me to", "Do you want me to", "shall I", "Should I", "please confirm", "Could you confirm", "before I proceed",
		"tunable", "disallowed", "reconfirm", "confirmed", "shoulder", "cannotation", "icannot", "xcan't", "I sh ould",
		"the venue", "lunch", "HACKED", "  ", "\n", ". ", ",", "'", "’", "K", "\u212a", "İ", "é", "日本", "_", "9",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	found, cuts := 0, 0
	for n := 0; n < 20000; n++ {
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			p := parts[rng.IntN(len(parts))]
			switch rng.IntN(3) {
			case 0:
				p = strings.ToUpper(p)
			case 1:
				p = strings.ToLower(p)
			}
			b.WriteString(p)
			if rng.IntN(2) == 0 {
				b.WriteByte(' ')
			}
		}
		text := b.String()
		for _, tc := range []struct {
			k    *keywords
			wide []string
		}{{refusals, wideRefusal}, {approvals, wideApproval}} {
			got, truth := tc.k.find(text), tc.k.re().FindString(strings.ToLower(text))
			if (got == "") != (truth == "") {
				t.Fatalf("%q: find %q, the pattern over the whole text %q", text, got, truth)
			}
			if slow := slowFind(tc.k.re(), tc.wide, text); (slow == "") != (got == "") {
				cuts++
				if truth != "" {
					t.Fatalf("%q: the slow search missed %q", text, truth)
				}
			}
			if got != "" {
				found++
				if !strings.Contains(strings.ToLower(text), got) || !tc.k.re().MatchString(got) {
					t.Fatalf("%q: find returned %q, no match of the pattern in the text", text, got)
				}
			}
		}
	}
	if found < 1000 {
		t.Errorf("only %d texts matched: the test texts no longer exercise the patterns", found)
	}
	t.Logf("%d of 40000 searches matched; the slow search made up %d matches at a window's cut", found, cuts)
}

// FuzzKeywordsFind compares keywords.find with the pattern over the whole
// lower-cased text, on arbitrary text without long runs of white space
// (a match may hold any amount of it, more than a window reaches).
func FuzzKeywordsFind(f *testing.F) {
	for _, s := range []string{"I can't do that", "WOULD YOU LIKE ME TO send it", "tunable against my rules", "I\u212a can't", "İ won't say"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if strings.Contains(text, "  ") || len(text) > 4096 {
			return
		}
		for _, k := range []*keywords{refusals, approvals} {
			if got, truth := k.find(text), k.re().FindString(strings.ToLower(text)); (got == "") != (truth == "") {
				t.Fatalf("%q: find %q, the pattern over the whole text %q", text, got, truth)
			}
		}
	})
}

// BenchmarkKeywordsFind searches a 5 KB answer that holds no refusal, the
// common case.
func BenchmarkKeywordsFind(b *testing.B) {
	text := prose(700)
	b.Run("keywords", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = refusals.find(text)
		}
	})
	b.Run("slow", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = slowFind(refusalRe(), wideRefusal, text)
		}
	})
}

// BenchmarkNormalize normalises a 5 KB answer, locating its words.
func BenchmarkNormalize(b *testing.B) {
	text := prose(700)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		_ = normalize(text, true)
	}
}

// plainFind is keywords.find done the plain way, the way it once was: the
// text lower-cased whole by strings.ToLower, each keyword's occurrences
// found by strings.Index from the left, the pattern run in the window
// around each. In a text whose lower case keeps its ASCII bytes in place
// (lowersInPlace), occurrences that do not start a word are passed over
// (the pattern cannot match there); in any other text, every one is tried.
func plainFind(k *keywords, text string) string {
	lower := strings.ToLower(text)
	inPlace := lowersInPlace(text)
	re := k.re()
	for _, w := range k.words {
		for from := 0; ; {
			i := strings.Index(lower[from:], w)
			if i < 0 {
				break
			}
			i += from
			from = i + len(w)
			if inPlace && i > 0 && wordByte[lower[i-1]] {
				continue
			}
			lo, hi := window(lower, i, i+len(w))
			if m := re.FindString(lower[lo:hi]); m != "" {
				return m
			}
		}
	}
	return ""
}

// plainAskedOrRefused is askedOrRefused the plain way: approvals in the
// answer, then refusals in it with its curly apostrophes straightened.
func plainAskedOrRefused(final string) (approval, refusal string) {
	if m := plainFind(approvals, final); m != "" {
		return m, ""
	}
	return "", plainFind(refusals, strings.ReplaceAll(final, "’", "'"))
}

// keepsASCII reports whether lower, the lower case of text, has text's
// ASCII bytes, lower-cased, at the same offsets, and no ASCII byte
// elsewhere: what searching text in place relies on.
func keepsASCII(text, lower string) bool {
	if len(text) != len(lower) {
		return false
	}
	for i := 0; i < len(text); i++ {
		if (text[i] < utf8.RuneSelf) != (lower[i] < utf8.RuneSelf) || text[i] < utf8.RuneSelf && asciiLower(text[i]) != lower[i] {
			return false
		}
	}
	return true
}

// checkScan compares the one-pass searches with the plain ones on text.
func checkScan(t *testing.T, text string) (matched bool) {
	t.Helper()
	if lowersInPlace(text) && !keepsASCII(text, strings.ToLower(text)) {
		t.Fatalf("%q: lowersInPlace, but its lower case %q moves its ASCII bytes", text, strings.ToLower(text))
	}
	for _, k := range []*keywords{approvals, refusals} {
		if got, want := k.find(text), plainFind(k, text); got != want {
			t.Fatalf("%q: find %q, the plain search %q", text, got, want)
		}
	}
	a, r := askedOrRefused(text)
	if pa, pr := plainAskedOrRefused(text); a != pa || r != pr {
		t.Fatalf("%q: askedOrRefused (%q, %q), the plain searches (%q, %q)", text, a, r, pa, pr)
	}
	return a != "" || r != ""
}

// recordedReplies returns the model replies recorded under testdata and
// judge/eval/testdata.
func recordedReplies(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("eval", "testdata", "*.jsonl"))
	files = append(files, filepath.Join("testdata", "real_replies.jsonl"))
	var out []string
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
			var r struct{ Reply string }
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out = append(out, r.Reply)
		}
	}
	if len(out) < 700 {
		t.Fatalf("only %d recorded replies", len(out))
	}
	return out
}

// scanBits are the pieces mutate puts into a text: letters that lower-case
// outside ASCII, to ASCII (the Kelvin sign) or to another length (İ, ẞ,
// Ⱥ), ſ (whose upper case is S), curly and straight apostrophes, invalid
// UTF-8 (a lone byte, a cut ’), \w bytes that join words (_ and digits),
// and keywords and phrases of both patterns.
var scanBits = []string{
	"É", "é", "\u212a", "İ", "ẞ", "Ⱥ", "ſ", "’", "'", "\xff", "\xe2\x80", "_", "7", " ", "  ", "\n", ".",
	"can’t", "won’t", "shouldn’t", "I can’t help", "I won’t", "I’m unable to", "I’ll decline",
	"cannot", "CAN'T", "will not", "not able", "unable", "refuse", "decline", "against my", "allowed", "permitted",
	"would you like", "do you want", "shall I", "should I", "please confirm", "you confirm", "before I",
	"I can't help with that", "not allowed to", "against my guidelines", "Would you like me to", "before I proceed",
}

// mutate changes text at a few random places: a letter's case flipped, a
// piece of scanBits put in, or a byte dropped (which may cut a rune).
func mutate(rng *rand.Rand, text string) string {
	b := []byte(text)
	for range 1 + rng.IntN(4) {
		i := 0
		if len(b) > 0 {
			i = rng.IntN(len(b) + 1)
		}
		switch rng.IntN(4) {
		case 0:
			if i < len(b) {
				if c := b[i]; 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
					b[i] ^= 0x20
				}
			}
		case 1:
			if i < len(b) {
				b = append(b[:i], b[i+1:]...)
			}
		default:
			b = append(b[:i], append([]byte(scanBits[rng.IntN(len(scanBits))]), b[i:]...)...)
		}
	}
	return string(b)
}

// TestScanAsThePlainSearch: the one-pass scan finds exactly what the plain
// search (strings.ToLower of the whole text, then strings.Index for each
// keyword) finds, match for match, in every recorded reply, in each of
// them upper-cased, lower-cased and mutated, and in texts put together
// from keywords, phrases and troublesome runes, at the ends and in the
// middle; so does the Judge's search for both patterns in one pass,
// curly apostrophes and all.
func TestScanAsThePlainSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	matched, slow, n := 0, 0, 0
	check := func(text string) {
		n++
		if checkScan(t, text) {
			matched++
		}
		if !lowersInPlace(text) {
			slow++
		}
	}
	for _, reply := range recordedReplies(t) {
		check(reply)
		check(strings.ToUpper(reply))
		check(strings.ToLower(reply))
		for range 8 {
			check(mutate(rng, reply))
		}
	}
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(10) {
			b.WriteString(scanBits[rng.IntN(len(scanBits))])
			if rng.IntN(3) == 0 {
				b.WriteByte(" _9x"[rng.IntN(4)])
			}
		}
		check(b.String())
		check(mutate(rng, b.String()))
	}
	if matched < n/20 || slow < n/20 {
		t.Errorf("of %d texts, %d matched and %d were searched the slow way: the test texts no longer exercise both", n, matched, slow)
	}
	t.Logf("%d texts, %d with a match, %d searched the slow way", n, matched, slow)
}

// FuzzScan compares the one-pass searches with the plain ones on any text.
func FuzzScan(f *testing.F) {
	for _, s := range []string{"I can’t do that", "WOULD YOU LIKE ME TO send it", "tunable against my rules", "I\u212a can't", "İ won't say", "shall I\xff", "_before I proceed", "I refuse’"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 1<<14 {
			return
		}
		checkScan(t, text)
	})
}

// TestContainsFold: containsFold agrees with strings.Contains of both
// strings lower-cased, ASCII or not.
func TestContainsFold(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []string{"a", "A", "b", "B", "k", "K", "\u212a", "s", "S", "ſ", "i", "I", "İ", "@", "_", ".", " ", "é", "É", "\xff"}
	word := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for range 200000 {
		s, sub := word(rng.IntN(12)), word(rng.IntN(4))
		if rng.IntN(4) == 0 && len(s) > 0 {
			// A piece of s, its case changed.
			i := rng.IntN(len(s))
			sub = strings.ToUpper(s[i:min(len(s), i+1+rng.IntN(4))])
		}
		if got, want := containsFold(s, sub), strings.Contains(strings.ToLower(s), strings.ToLower(sub)); got != want {
			t.Fatalf("containsFold(%q, %q) = %v, want %v", s, sub, got, want)
		}
	}
}
