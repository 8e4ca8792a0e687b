package judge

import (
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// keywords is a pattern's prefilter: words one of which every match of the
// pattern contains, found in one pass over a text, whatever its case,
// without a lower-cased copy of it.
type keywords struct {
	re    func() *regexp.Regexp
	words []string // lower-case ASCII
	// first lists, for each byte a keyword can start with (in either
	// case), the keywords that do.
	first [256][]uint8
	// pool holds the scratch space of a search (the hits, and the window
	// a pattern runs on).
	pool sync.Pool
}

// reach is how far around a keyword the pattern is run: longer than any
// phrase the patterns match.
const reach = 48

// hit is an occurrence of keyword k at byte i.
type hit struct {
	k int
	i int
}

// scratch is what one search needs.
type scratch struct {
	hits   []hit
	ends   []int  // the end of each keyword's last occurrence
	window []byte // a lower-cased window of the text
}

func newKeywords(re func() *regexp.Regexp, words ...string) *keywords {
	k := &keywords{re: re, words: words}
	for i, w := range words {
		if w == "" || w != strings.ToLower(w) || !isASCII(w) {
			panic("judge: keyword " + w + " is not lower-case ASCII")
		}
		c := w[0]
		k.first[c] = append(k.first[c], uint8(i))
		if 'a' <= c && c <= 'z' {
			k.first[c-'a'+'A'] = append(k.first[c-'a'+'A'], uint8(i))
		}
	}
	k.pool.New = func() any { return &scratch{ends: make([]int, len(words))} }
	return k
}

// find returns a match of the pattern in text, lower-cased, or "": the
// pattern runs only around occurrences of the keywords that start a word,
// never over the whole text. Keywords are tried in their order and each
// one's occurrences from the left; the first match found is the one
// returned. A text is searched in place when its lower case has its ASCII
// bytes at the same offsets (see lowersInPlace); any other is lower-cased
// first and searched the slow way.
func (k *keywords) find(text string) string {
	if !lowersInPlace(text) {
		return k.findLower(strings.ToLower(text))
	}
	s := k.pool.Get().(*scratch)
	defer k.pool.Put(s)
	s.hits = s.hits[:0]
	clear(s.ends)
	// Every keyword starts a word in a match of its pattern (the patterns
	// put \b or white space before each), so only word starts are tried.
	for i := 0; i < len(text); i++ {
		if i > 0 && wordByte[text[i-1]] {
			continue
		}
		cands := k.first[text[i]]
		if len(cands) == 0 {
			continue
		}
		for _, c := range cands {
			w := k.words[c]
			if i >= s.ends[c] && hasPrefixFold(text[i:], w) {
				s.hits = append(s.hits, hit{int(c), i})
				s.ends[c] = i + len(w)
			}
		}
	}
	if len(s.hits) == 0 {
		return ""
	}
	slices.SortStableFunc(s.hits, func(a, b hit) int { return a.k - b.k })
	re := k.re()
	for _, h := range s.hits {
		lo, hi := window(text, h.i, h.i+len(k.words[h.k]))
		s.window = append(s.window[:0], text[lo:hi]...)
		for j, c := range s.window {
			if 'A' <= c && c <= 'Z' {
				s.window[j] = c + 'a' - 'A'
			}
		}
		if m := re.Find(s.window); m != nil {
			return string(m)
		}
	}
	return ""
}

// findLower is find over a lower-cased text: each keyword in turn, its
// occurrences from the left.
func (k *keywords) findLower(lower string) string {
	re := k.re()
	for _, w := range k.words {
		for from := 0; ; {
			i := strings.Index(lower[from:], w)
			if i < 0 {
				break
			}
			i += from
			lo, hi := window(lower, i, i+len(w))
			if m := re.FindString(lower[lo:hi]); m != "" {
				return m
			}
			from = i + len(w)
		}
	}
	return ""
}

// window returns where the pattern runs around a keyword at text[i:j]:
// reach bytes each side, widened to the ends of the words it would cut.
// A cut word would let \b match at the cut and find a phrase the text
// does not hold ("against my guidelines" in "against my guidelinesdis").
func window(text string, i, j int) (lo, hi int) {
	lo, hi = max(0, i-reach), min(len(text), j+reach)
	for lo > 0 && wordByte[text[lo-1]] && wordByte[text[lo]] {
		lo--
	}
	for hi < len(text) && wordByte[text[hi-1]] && wordByte[text[hi]] {
		hi++
	}
	return lo, hi
}

// wordByte marks the bytes of \w, which \b tells from the rest.
var wordByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
	}
	return t
}()

// hasPrefixFold reports whether s starts with the lower-case ASCII word w,
// in any case.
func hasPrefixFold(s, w string) bool {
	if len(s) < len(w) {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[i] {
			return false
		}
	}
	return true
}

// isASCII reports whether s is all ASCII.
func isASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if !asciiWord(s[i:]) {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// asciiWord reports whether the first eight bytes of s are ASCII.
func asciiWord(s string) bool {
	_ = s[7]
	w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	return w&0x8080808080808080 == 0
}

// lowersInPlace reports whether strings.ToLower(s) differs from s only in
// the case of ASCII letters and of non-ASCII letters that stay non-ASCII
// and as long: then the patterns, which match ASCII alone, match the same
// bytes at the same offsets in s with its ASCII lower-cased. Invalid UTF-8
// (ToLower writes U+FFFD), a letter that lower-cases to ASCII (the Kelvin
// sign to k) or to another length (İ) is not.
func lowersInPlace(s string) bool {
	for i := 0; i < len(s); {
		if i+8 <= len(s) && asciiWord(s[i:]) {
			i += 8
			continue
		}
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return false
		}
		if l := unicode.ToLower(r); l != r && (l < utf8.RuneSelf || utf8.RuneLen(l) != size) {
			return false
		}
		i += size
	}
	return true
}
