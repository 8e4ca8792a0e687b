package importer

import (
	"strings"
	"unicode"

	"github.com/pikit-go/pikit/internal/lazy"
)

// Sentence starts as BIPIA finds them: BIPIA inserts a "middle" attack
// at the start of a sentence that NLTK's PunktSentenceTokenizer, built
// with no training (no abbreviations, collocations or orthographic
// statistics), finds with span_tokenize. Without training Punkt's
// decisions reduce to a few rules, written out here:
//
//   - a candidate break is a '.', '?' or '!' followed by punctuation that
//     cannot be inside a word, or by whitespace and another token;
//   - it is a break when, among the word before it, the mark and what
//     follows, Punkt's word tokens hold a sentence-ending token (a lone
//     '?', '!' or '.', or a word ending in one period) with a token after
//     it; a word ending in two or more periods is an ellipsis, never a
//     break;
//   - a single letter with a period (an initial) is no break before a
//     word in either case or before ";:,.!?", and a number with a period
//     is none before a lowercase word or that punctuation;
//   - closing quotes and brackets after the mark stay with the sentence
//     before.
//
// Newlines are whitespace like any other: a table with no sentence mark
// is one sentence. Offsets are Python's (code points) while reading, and
// bytes in what punktStarts returns. TestPunktAgainstNLTK checks these
// rules against NLTK itself.

// punktStarts returns the byte offsets where Punkt's sentences start in
// text, in order; the first is 0 unless the text is blank.
func punktStarts(text string) []int {
	r := []rune(text)
	type span struct{ start, stop int }
	var slices []span
	last := 0
	for _, m := range punktEndContexts(r) {
		if !punktContainsBreak(m.context) {
			continue
		}
		slices = append(slices, span{last, m.end})
		if m.next >= 0 {
			last = m.next
		} else {
			last = m.end
		}
	}
	slices = append(slices, span{last, len([]rune(strings.TrimRightFunc(text, pySpace)))})

	// Realign: closing punctuation after a break joins the sentence before.
	var starts []int
	realign := 0
	for i, s1 := range slices {
		s1.start += realign
		if i == len(slices)-1 {
			if s1.start < s1.stop {
				starts = append(starts, s1.start)
			}
			continue
		}
		s2 := slices[i+1]
		if n := punktRealign(r, s2.start, s2.stop); n > 0 {
			starts = append(starts, s1.start)
			realign = n
			continue
		}
		realign = 0
		if s1.start < s1.stop {
			starts = append(starts, s1.start)
		}
	}
	// Code points to bytes.
	out := make([]int, len(starts))
	b, c := 0, 0
	for i, s := range starts {
		for ; c < s && c < len(r); c++ {
			b += len(string(r[c]))
		}
		out[i] = b
	}
	return out
}

// punktRealign is the length of Punkt's realignment match at the start of
// r[from:to] (closing quotes or brackets, lazily, then whitespace, "--" or
// the end), or 0.
func punktRealign(r []rune, from, to int) int {
	if from > to {
		return 0
	}
	s := r[from:to]
	for k := 1; k <= len(s); k++ {
		if !strings.ContainsRune(`"')]}`, s[k-1]) {
			return 0
		}
		// After k closers: whitespace (all of it), "--", or the end (or a
		// line end: Python's $ under MULTILINE).
		switch {
		case k == len(s):
			return k
		case pySpace(s[k]):
			j := k
			for j < len(s) && pySpace(s[j]) {
				j++
			}
			return j
		case s[k] == '-' && k+1 < len(s) && s[k+1] == '-':
			return k
		}
	}
	return 0
}

// punktEnd is a candidate sentence end: the code-point offset after the
// mark, where the next token starts (-1 when punctuation follows), and
// the text Punkt decides on.
type punktEnd struct {
	end, next int
	context   []rune
}

// punktNonWord are the characters Punkt never puts inside a word.
const punktNonWord = `)";}]*:@'({[?!`

func punktIsNonWord(c rune) bool { return strings.ContainsRune(punktNonWord, c) }

// punktEndContexts finds the candidate ends with their contexts, as
// Punkt's _match_potential_end_contexts does (overlapping candidates, as
// in "!!!", keep the last).
func punktEndContexts(r []rune) []punktEnd {
	type match struct {
		start, next int
		after       []rune
	}
	var matches []match
	for i, c := range r {
		if c != '.' && c != '?' && c != '!' {
			continue
		}
		if i+1 < len(r) && punktIsNonWord(r[i+1]) {
			matches = append(matches, match{i, -1, r[i+1 : i+2]})
			continue
		}
		j := i + 1
		for j < len(r) && pySpace(r[j]) {
			j++
		}
		if j == i+1 || j == len(r) {
			continue
		}
		k := j
		for k < len(r) && !pySpace(r[k]) {
			k++
		}
		matches = append(matches, match{i, j, r[i+1 : k]})
	}
	var out []punktEnd
	prevStart, prevStop := 0, 0
	have := false
	var prev match
	emit := func() {
		ctx := append(append(append([]rune{}, r[prevStart:prevStop]...), r[prev.start]), prev.after...)
		out = append(out, punktEnd{end: prev.start + 1, next: prev.next, context: ctx})
	}
	for _, m := range matches {
		before := r[prevStop:m.start]
		idx := 0
		for k := len(before) - 1; k >= 0; k-- {
			if strings.ContainsRune(" \t\n\r\v\f", before[k]) { // Python's string.whitespace
				idx = k
				break
			}
		}
		if idx != 0 {
			idx += prevStop + 1
		} else {
			idx = prevStart
		}
		if have && prevStop <= idx {
			emit()
		}
		prev, have = m, true
		prevStart, prevStop = idx, m.start
	}
	if have {
		emit()
	}
	return out
}

// punktToken is one of Punkt's word tokens, annotated.
type punktToken struct {
	tok                        string
	sentbreak, abbr, ellipsis  bool
	periodFinal, initial, num  bool
	firstUpper, firstLower     bool
	typeNoPeriodIsNumber, punc bool
}

var (
	punktNumeric = lazy.Regexp(`^-?[.,]?\p{Nd}[\p{Nd},.-]*\.?$`)
	punktInitial = lazy.Regexp(`^[\p{L}\p{M}_]\.$`)
	punktDots    = lazy.Regexp(`^\.\.+$`)
)

// punktContainsBreak is Punkt's text_contains_sentbreak without training:
// whether a token with a sentence break has a token after it.
func punktContainsBreak(ctx []rune) bool {
	var toks []punktToken
	for _, line := range strings.Split(string(ctx), "\n") {
		for _, w := range punktWords([]rune(line)) {
			t := punktToken{tok: w, periodFinal: strings.HasSuffix(w, ".")}
			first := []rune(w)[0]
			t.firstUpper, t.firstLower = unicode.IsUpper(first), unicode.IsLower(first)
			t.initial = punktInitial().MatchString(w)
			t.num = punktNumeric().MatchString(strings.ToLower(w))
			t.punc = len(w) == 1 && strings.ContainsRune(";:,.!?", first)
			switch {
			case w == "." || w == "?" || w == "!":
				t.sentbreak = true
			case punktDots().MatchString(w):
				t.ellipsis = true
			case t.periodFinal && !strings.HasSuffix(w, ".."):
				t.sentbreak = true
			}
			toks = append(toks, t)
		}
	}
	// The second pass, for a period-final token before another.
	for i := 0; i+1 < len(toks); i++ {
		t, next := &toks[i], toks[i+1]
		if !t.periodFinal || !(t.initial || t.num) {
			continue
		}
		// Punkt's orthographic heuristic, with no statistics: never a
		// sentence starter before punctuation or a lowercase word, else
		// unknown.
		notStarter := next.punc || next.firstLower
		if notStarter || (t.initial && next.firstUpper) {
			t.sentbreak, t.abbr = false, true
		}
	}
	found := false
	for _, t := range toks {
		if found {
			return true
		}
		if t.sentbreak {
			found = true
		}
	}
	return false
}

// punktWords splits one line as Punkt's word tokenizer does: runs of
// hyphens or periods (and ". . .") alone, a word up to whitespace,
// punctuation that cannot be in a word, such a run, or a comma ending
// it; else one character.
func punktWords(r []rune) []string {
	var out []string
	for i := 0; i < len(r); {
		switch {
		case pySpace(r[i]):
			i++
			continue
		case punktMulti(r, i) > 0:
			n := punktMulti(r, i)
			out = append(out, string(r[i:i+n]))
			i += n
			continue
		case !strings.ContainsRune("(\"`{[:;&#*@)}]-,", r[i]):
			j := i + 1
			for !punktWordEnd(r, j) {
				j++
			}
			out = append(out, string(r[i:j]))
			i = j
			continue
		}
		out = append(out, string(r[i]))
		i++
	}
	return out
}

// punktWordEnd reports whether a word ends before r[j].
func punktWordEnd(r []rune, j int) bool {
	if j >= len(r) || pySpace(r[j]) || punktIsNonWord(r[j]) || punktMulti(r, j) > 0 {
		return true
	}
	if r[j] == ',' {
		k := j + 1
		return k >= len(r) || pySpace(r[k]) || punktIsNonWord(r[k]) || punktMulti(r, k) > 0
	}
	return false
}

// punktMulti is the length of the multi-character punctuation at r[i]:
// two or more hyphens, two or more periods, or ". . ." and longer.
func punktMulti(r []rune, i int) int {
	run := func(c rune) int {
		n := 0
		for i+n < len(r) && r[i+n] == c {
			n++
		}
		return n
	}
	if n := run('-'); n >= 2 {
		return n
	}
	if n := run('.'); n >= 2 {
		return n
	}
	// (\.\s){2,}\. , greedy with backtracking: the longest such run.
	best, k := 0, i
	pairs := 0
	for k+1 < len(r) && r[k] == '.' && pySpace(r[k+1]) {
		pairs++
		k += 2
		if pairs >= 2 && k < len(r) && r[k] == '.' {
			best = k + 1 - i
		}
	}
	return best
}

// pySpace is Python's whitespace in str methods and in \s: Unicode's,
// and the four information separators U+001C to U+001F.
func pySpace(c rune) bool { return unicode.IsSpace(c) || (c >= 0x1c && c <= 0x1f) }
