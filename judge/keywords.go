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
	alone *scanner // the scanner of these keywords alone, for find
}

// reach is how far around a keyword the pattern is run: longer than any
// phrase the patterns match.
const reach = 48

func newKeywords(re func() *regexp.Regexp, words ...string) *keywords {
	k := &keywords{re: re, words: words}
	k.alone = newScanner(k)
	return k
}

// find returns a match of the pattern in text, lower-cased, or "": the
// pattern runs only around occurrences of the keywords that start a word,
// never over the whole text (see scanner.scan and found.find).
func (k *keywords) find(text string) string {
	f := k.alone.scan(text)
	defer f.release()
	return f.find(k)
}

// scanner finds the keywords of one or more patterns in one pass over a
// text: the rule judge looks for an approval request and a refusal in the
// same answer, and reads it once for both.
type scanner struct {
	lists []*keywords
	words []string // every list's keywords, list after list
	base  []int    // where each list's keywords start in words
	// byFirst holds the indexes of the keywords grouped by their first
	// byte; first[c] is the group byte c starts, in either case.
	byFirst []uint8
	first   [256]struct{ lo, hi uint8 }
	// second[c] has bit secondBit(d) set when a keyword that byte c starts
	// may go on with byte d: most word starts that begin a keyword's first
	// letter fail on the second, and are let go without trying each word
	// of the group.
	second [256]uint32
	// class tells, in one load per byte of the text, whether the byte is
	// one of \w (wordClass) and whether a keyword starts with it
	// (startClass).
	class [256]uint8
	pool  sync.Pool // of *found
}

const (
	wordClass  = 1
	startClass = 2
)

// secondBit numbers a letter, in either case, 0 to 25, and any other byte
// 26.
var secondBit = func() (t [256]uint8) {
	for c := range 256 {
		t[c] = 26
		if l := asciiLower(byte(c)); 'a' <= l && l <= 'z' {
			t[c] = l - 'a'
		}
	}
	return t
}()

func newScanner(lists ...*keywords) *scanner {
	s := &scanner{lists: lists}
	for _, k := range lists {
		s.base = append(s.base, len(s.words))
		s.words = append(s.words, k.words...)
	}
	if len(s.words) > 255 {
		panic("judge: too many keywords for one scanner")
	}
	for _, w := range s.words {
		if w == "" || w != strings.ToLower(w) || !isASCII(w) {
			panic("judge: keyword " + w + " is not lower-case ASCII")
		}
	}
	for c := range 256 {
		lo := len(s.byFirst)
		for i, w := range s.words {
			if w[0] != asciiLower(byte(c)) {
				continue
			}
			s.byFirst = append(s.byFirst, uint8(i))
			if len(w) > 1 && secondBit[w[1]] < 26 {
				s.second[c] |= 1 << secondBit[w[1]]
			} else {
				s.second[c] |= 1 << 26 // tried whatever follows
			}
		}
		s.first[c].lo, s.first[c].hi = uint8(lo), uint8(len(s.byFirst))
		if lo < len(s.byFirst) {
			s.class[c] |= startClass
		}
		if wordByte[c] {
			s.class[c] |= wordClass
		}
	}
	s.pool.New = func() any { return &found{s: s, ends: make([]int, len(s.words))} }
	return s
}

// hit is an occurrence of keyword k at byte i.
type hit struct {
	k int
	i int
}

// found is what a scan found in a text, and the scratch space of the
// searches that follow it (the window a pattern runs on). Release it when
// done.
type found struct {
	s      *scanner
	text   string
	lower  string // the text lower-cased, when it is not searched in place
	slow   bool   // lower is set
	hits   []hit  // by keyword, then by place
	ends   []int  // the end of each keyword's last occurrence
	window []byte // a lower-cased window of the text
}

// scan finds the keywords that start a word in text, each keyword's
// occurrences without overlap. A text is searched in place when its lower
// case has its ASCII bytes at the same offsets (see lowersInPlace); any
// other is lower-cased, and its keywords looked for the slow way when
// asked for (see keywords.findLower).
func (s *scanner) scan(text string) *found {
	f := s.pool.Get().(*found)
	f.text, f.hits = text, f.hits[:0]
	if !lowersInPlace(text) {
		f.lower, f.slow = strings.ToLower(text), true
		return f
	}
	clear(f.ends)
	// Every keyword starts a word in a match of its pattern (the patterns
	// put \b or white space before each), so only word starts are tried,
	// and only those whose first two bytes begin a keyword. The class
	// table answers both questions asked of every byte (is it one of \w,
	// may a keyword start with it) in one load and one branch.
	prev := uint8(0) // wordClass when the byte before i is one of \w
	for i := 0; i < len(text); i++ {
		c := text[i]
		cl := s.class[c]
		if cl&^(prev<<1)&startClass != 0 {
			d := byte(0) // no second byte: secondBit 26
			if i+1 < len(text) {
				d = text[i+1]
			}
			if s.second[c]&(1<<secondBit[d]) != 0 {
				g := s.first[c]
				for _, w := range s.byFirst[g.lo:g.hi] {
					kw := s.words[w]
					if i >= f.ends[w] && hasPrefixFold(text[i:], kw) {
						f.hits = append(f.hits, hit{int(w), i})
						f.ends[w] = i + len(kw)
					}
				}
			}
		}
		prev = cl & wordClass
	}
	slices.SortStableFunc(f.hits, func(a, b hit) int { return a.k - b.k })
	return f
}

// find returns a match of k's pattern, lower-cased, or "": k must be one
// of the scanner's lists. Keywords are tried in their order and each one's
// occurrences from the left; the first match found is the one returned.
func (f *found) find(k *keywords) string {
	if f.slow {
		return k.findLower(f.lower)
	}
	l := slices.Index(f.s.lists, k)
	if l < 0 {
		panic("judge: keywords searched with a scanner that does not hold them")
	}
	from, to := f.s.base[l], f.s.base[l]+len(k.words)
	var re *regexp.Regexp
	for _, h := range f.hits {
		if h.k < from || h.k >= to {
			continue
		}
		if re == nil {
			re = k.re()
		}
		lo, hi := window(f.text, h.i, h.i+len(f.s.words[h.k]))
		f.window = append(f.window[:0], f.text[lo:hi]...)
		for j, c := range f.window {
			f.window[j] = asciiLower(c)
		}
		if m := re.Find(f.window); m != nil {
			return string(m)
		}
	}
	return ""
}

// release gives f back for reuse; f must not be used after.
func (f *found) release() {
	f.text, f.lower, f.slow = "", "", false
	if cap(f.hits) > maxPooledHits {
		f.hits = nil
	}
	if cap(f.window) > maxPooledWindow {
		f.window = nil
	}
	f.s.pool.Put(f)
}

// maxPooledHits and maxPooledWindow bound the scratch space kept for
// reuse: a hostile answer (a megabyte of "I cannot", or a word as long)
// should not leave its scratch space to every search after it.
const (
	maxPooledHits   = 1 << 12
	maxPooledWindow = 1 << 12
)

// asciiLower lower-cases an ASCII letter and leaves any other byte.
func asciiLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
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
		if asciiLower(s[i]) != w[i] {
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
		if !runeLowersInPlace(r, size) {
			return false
		}
		i += size
	}
	return true
}

// runeLowersInPlace is lowersInPlace for a rune outside ASCII and the
// size it was decoded from.
func runeLowersInPlace(r rune, size int) bool {
	if r == utf8.RuneError && size == 1 {
		return false
	}
	l := unicode.ToLower(r)
	return l == r || l >= utf8.RuneSelf && utf8.RuneLen(l) == size
}
