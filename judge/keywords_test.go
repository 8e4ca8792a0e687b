package judge

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
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
