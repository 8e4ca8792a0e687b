package defense

import (
	"math/rand/v2"
	"regexp/syntax"
	"strings"
	"unicode"
)

// A generator of test texts for the pattern detector: strings built from
// the built-in expressions themselves (so they reach deep into each
// pattern, where a hand-written table would stop at the obvious
// phrasings), mutated into near misses and set in ordinary prose.

// palette holds the characters the generator prefers when an expression
// allows a choice: letters, the separators the patterns care about, and a
// few runes whose lower-case form is ASCII or longer in bytes.
var palette = []rune("abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ" +
	"         \t\n\r\f\v.,;:!?'\"-_/+=@#<>|[]()*&%$\u00a0\u00e9\u00c9\u0130\u212a\u017f\u2019\u3000")

// genMatch appends to b a string shaped by re: a match of it, except that
// empty-width assertions (\b, ^, $) are not enforced, so some results are
// near misses, which the tests want too.
func genMatch(r *rand.Rand, re *syntax.Regexp, b *strings.Builder) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, c := range re.Rune {
			if r.IntN(8) == 0 {
				c = unicode.ToUpper(c)
			}
			b.WriteRune(c)
		}
	case syntax.OpCharClass:
		b.WriteRune(pickRune(r, re.Rune))
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		b.WriteRune(palette[r.IntN(len(palette))])
	case syntax.OpCapture:
		genMatch(r, re.Sub[0], b)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := re.Min, re.Max
		switch re.Op {
		case syntax.OpStar:
			lo, hi = 0, -1
		case syntax.OpPlus:
			lo, hi = 1, -1
		case syntax.OpQuest:
			lo, hi = 0, 1
		}
		n := lo
		switch {
		case hi < 0 && r.IntN(6) == 0:
			n += r.IntN(60) // now and then a long run: whitespace floods, long blobs
		case hi < 0:
			n += r.IntN(3)
		case hi-lo > 8 && r.IntN(3) > 0:
			n += r.IntN(8) // spans like {0,40}: mostly short, sometimes full
		default:
			n += r.IntN(hi - lo + 1)
		}
		for range n {
			genMatch(r, re.Sub[0], b)
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			genMatch(r, sub, b)
		}
	case syntax.OpAlternate:
		genMatch(r, re.Sub[r.IntN(len(re.Sub))], b)
	}
}

// pickRune returns a rune of the class given by ranges (pairs lo, hi),
// preferring the palette.
func pickRune(r *rand.Rand, ranges []rune) rune {
	in := func(c rune) bool {
		for i := 0; i < len(ranges); i += 2 {
			if ranges[i] <= c && c <= ranges[i+1] {
				return true
			}
		}
		return false
	}
	if r.IntN(3) == 0 && in(' ') {
		return ' ' // spans like [^.\n]{0,40} mostly hold words and spaces
	}
	for range 12 {
		if c := palette[r.IntN(len(palette))]; in(c) {
			return c
		}
	}
	i := 2 * r.IntN(len(ranges)/2)
	lo, hi := ranges[i], min(ranges[i+1], ranges[i]+200)
	return lo + rune(r.IntN(int(hi-lo)+1))
}

// mutate returns s with a few random edits: a character dropped, doubled,
// replaced or a line broken, the edits that turn a match into a near miss.
func mutate(r *rand.Rand, s string) string {
	rs := []rune(s)
	for range 1 + r.IntN(3) {
		if len(rs) == 0 {
			break
		}
		i := r.IntN(len(rs))
		switch r.IntN(4) {
		case 0:
			rs = append(rs[:i], rs[i+1:]...)
		case 1:
			rs = append(rs[:i+1], rs[i:]...)
		case 2:
			rs[i] = palette[r.IntN(len(palette))]
		default:
			rs = append(rs[:i], append([]rune{'\n'}, rs[i:]...)...)
		}
	}
	return string(rs)
}

// genText returns a text around matches of the given expressions: one
// phrasing shaped by exprs[focus] and up to two by others, some mutated,
// with prose, bare separators or nothing at either side.
func genText(r *rand.Rand, exprs []*syntax.Regexp, prose []string, focus int) string {
	var b strings.Builder
	filler := func() {
		switch r.IntN(7) {
		case 0: // nothing: the phrasing touches the text's edge or the next one
		case 1:
			b.WriteRune(palette[r.IntN(len(palette))])
		case 2:
			b.WriteString("\n")
		case 3:
			b.WriteString(" ")
		case 4:
			b.WriteString(". ")
		default:
			s := prose[r.IntN(len(prose))]
			i, j := r.IntN(len(s)+1), r.IntN(len(s)+1)
			if r.IntN(2) == 0 {
				b.WriteString(" ")
			}
			b.WriteString(s[min(i, j):max(i, j)])
		}
	}
	filler()
	for k := range 1 + r.IntN(3) {
		e := exprs[focus]
		if k > 0 {
			e = exprs[r.IntN(len(exprs))]
		}
		var m strings.Builder
		genMatch(r, e, &m)
		s := m.String()
		if r.IntN(4) == 0 {
			s = mutate(r, s)
		}
		b.WriteString(s)
		filler()
	}
	return b.String()
}
