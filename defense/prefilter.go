package defense

import (
	"fmt"
	"math/bits"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"
)

// The pattern detector does not run its expressions over the whole text.
// One pass over the text finds its trigger words (compared in lower case)
// and its runs of base64 characters; a trigger tells where a match
// containing it would begin, and the expression runs there, anchored, on
// no more text than a match could cover. A text without triggers runs no
// expression at all, and one with triggers runs each expression only a
// few characters past them.
//
// This is exact, not a heuristic: the detector flags what the expressions
// find over the whole lower-cased text, given two properties of each
// built-in pattern's cues, which the tests check on the corpora, on texts
// generated from the expressions, and by fuzzing:
//
//   - every match contains one of the pattern's trigger words as a whole
//     word (a maximal run of [0-9A-Za-z_], the characters \b sees),
//     placed so that the trigger's rule finds the match's start from it;
//   - every match contains a whole word of each of the pattern's near
//     groups, within the pattern's extent of the match's start.
//
// Running an expression on text[start:cut] rather than on the whole text
// changes nothing, because (1) start is a word start, a line start, or a
// character the expression must consume, so \b and ^ hold there exactly
// when they hold in the whole text (patternRules checks what it can at
// init), and (2) cut lies past any match's extent and at a character that
// makes \b and $ hold there exactly when they hold in the whole text.
//
// ASCII text is matched as it is by the case-insensitive form of each
// expression, which finds what the plain form finds in the lower-cased
// text; other text is lower-cased first, as lower-casing may move offsets
// (the Kelvin sign becomes a one-byte k).

// A cue is what a pattern declares about its matches: a set of trigger
// words with the rule that leads from a trigger to a match's start, or
// (near) a group of words one of which every match contains.
type cue struct {
	words []string
	rule  rule
	near  bool
}

// ruleKind says where a match begins relative to its trigger.
type ruleKind uint8

const (
	atWord    ruleKind = iota // at the trigger word
	wordsBack                 // min..max whitespace-separated words before it
	lineStart                 // at the start of its line, only spaces before it (^\s*word)
	opener                    // at open, followed by \s*/?\s* and the word ([ / inst])
	angle                     // at a '<' followed by \|?\s* and the word (<|im_start)
	heading                   // at a line start, then \s*#{2,}\s* and the word (## system)
	blobRun                   // at a run of 32 or more base64 characters, or the character before it
)

// rule locates a match's start from a trigger.
type rule struct {
	kind     ruleKind
	min, max int    // wordsBack: how many words back
	open     string // opener: the opening literal
}

// at: the match starts at one of these words.
func at(words string) cue { return cue{words: strings.Fields(words)} }

// back: the match starts min to max words (separated by spaces only)
// before one of these words.
func back(min, max int, words string) cue {
	return cue{words: strings.Fields(words), rule: rule{kind: wordsBack, min: min, max: max}}
}

// lineAt: the match starts at the beginning of the line of one of these
// words, which only spaces precede.
func lineAt(words string) cue {
	return cue{words: strings.Fields(words), rule: rule{kind: lineStart}}
}

// after: the match starts at open, which precedes one of these words
// with only spaces and at most one slash between.
func after(open, words string) cue {
	return cue{words: strings.Fields(words), rule: rule{kind: opener, open: open}}
}

// inAngle: the match starts at a '<' that precedes one of these words
// with an optional '|' and spaces between.
func inAngle(words string) cue {
	return cue{words: strings.Fields(words), rule: rule{kind: angle}}
}

// headed: the match starts at the beginning of a line holding two or more
// '#' and then one of these words.
func headed(words string) cue {
	return cue{words: strings.Fields(words), rule: rule{kind: heading}}
}

// blob: the match starts at, or one character before, a run of 32 or
// more base64 characters.
func blob() cue { return cue{rule: rule{kind: blobRun}} }

// near: every match contains one of these words within the pattern's
// reach of its start. It prunes triggers cheaply before any expression
// runs.
func near(words string) cue { return cue{words: strings.Fields(words), near: true} }

// blobLen is the shortest base64 run the encoded_blob pattern flags.
const blobLen = 32

// Character classes of the scan, indexed by byte.
const (
	cWord  = 1 << iota // [0-9A-Za-z_]: \w, and so what \b sees
	cB64               // [0-9A-Za-z+/]
	cSpace             // [\t\n\f\r ]: \s
)

// charClass gives each byte its classes.
var charClass = func() (t [256]uint8) {
	for c := range 256 {
		b := byte(c)
		alnum := 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
		if alnum || b == '_' {
			t[c] |= cWord
		}
		if alnum || b == '+' || b == '/' {
			t[c] |= cB64
		}
		if strings.IndexByte("\t\n\f\r ", b) >= 0 {
			t[c] |= cSpace
		}
	}
	return t
}()

// isWord reports whether c is a \w byte.
func isWord(c byte) bool { return charClass[c]&cWord != 0 }

// isSpace reports whether c is a \s byte.
func isSpace(c byte) bool { return charClass[c]&cSpace != 0 }

// starts returns up to two candidate starts of a match containing the
// trigger at pos (-1: none).
func (r rule) starts(text string, pos int) (int, int) {
	switch r.kind {
	case atWord:
		return pos, -1
	case wordsBack:
		first, second := -1, -1
		j := pos
		for k := 1; k <= r.max; k++ {
			if j = wordBefore(text, j); j < 0 {
				break
			}
			if k < r.min {
				continue
			}
			if first < 0 {
				first = j
			} else {
				second = j
			}
		}
		return first, second
	case lineStart:
		return startOfLine(text, pos), -1
	case opener:
		i := spacesBefore(text, pos)
		if i > 0 && text[i-1] == '/' {
			i = spacesBefore(text, i-1)
		}
		if strings.HasSuffix(text[:i], r.open) {
			return i - len(r.open), -1
		}
	case angle:
		i := spacesBefore(text, pos)
		if i > 0 && text[i-1] == '|' {
			i--
		}
		if i > 0 && text[i-1] == '<' {
			return i - 1, -1
		}
	case heading:
		i := spacesBefore(text, pos)
		j := i
		for j > 0 && text[j-1] == '#' {
			j--
		}
		if i-j >= 2 {
			return startOfLine(text, j), -1
		}
	case blobRun:
		// The expression begins with (?:^|[^A-Za-z0-9+/]): the run's
		// start at a line start, else the character before it.
		if pos == 0 || text[pos-1] == '\n' {
			return pos, -1
		}
		_, w := utf8.DecodeLastRuneInString(text[:pos])
		return pos - w, -1
	}
	return -1, -1
}

// wordBefore returns the start of the word that precedes pos with only
// (one or more) spaces between, or -1.
func wordBefore(text string, pos int) int {
	i := spacesBefore(text, pos)
	if i == pos || i == 0 || !isWord(text[i-1]) {
		return -1
	}
	for i > 0 && isWord(text[i-1]) {
		i--
	}
	return i
}

// spacesBefore returns the start of the run of \s characters that ends at
// pos (pos itself when there is none).
func spacesBefore(text string, pos int) int {
	for pos > 0 && isSpace(text[pos-1]) {
		pos--
	}
	return pos
}

// startOfLine returns the start of pos's line when only spaces other than
// '\n' precede pos on it, else -1.
func startOfLine(text string, pos int) int {
	for pos > 0 && text[pos-1] != '\n' && isSpace(text[pos-1]) {
		pos--
	}
	if pos > 0 && text[pos-1] != '\n' {
		return -1
	}
	return pos
}

// unbounded is an extent with no bound.
const unbounded = -1

// extent bounds how far a match extends from its start, in two measures,
// both of which make \s+ finite: steps, where a step is one rune or a
// whole run of \s characters, bound spans like [^.\n]{0,40}; runs, where
// a run is a maximal run of \s characters or of other characters, also
// bound \S+ and [a-z0-9+/]{32,}. A match obeys both, so it ends before
// the nearer of the two limits.
type extent struct {
	steps, runs int // unbounded or the most a match spans
}

// extentOf returns the extent of re's matches.
func extentOf(re *syntax.Regexp) extent {
	const inf = 1 << 30
	add := func(a, b int) int { return min(inf, a+b) }
	mul := func(n, a int) int { return min(inf, n*a) }
	var walk func(re *syntax.Regexp) (steps, runs int)
	walk = func(re *syntax.Regexp) (steps, runs int) {
		switch re.Op {
		case syntax.OpLiteral:
			for i, c := range re.Rune {
				if i == 0 || isSpaceRune(c) != isSpaceRune(re.Rune[i-1]) {
					runs++
				}
			}
			return len(re.Rune), runs
		case syntax.OpCharClass, syntax.OpAnyCharNotNL, syntax.OpAnyChar:
			return 1, 1
		case syntax.OpCapture, syntax.OpQuest:
			return walk(re.Sub[0])
		case syntax.OpStar, syntax.OpPlus, syntax.OpRepeat:
			most := re.Max
			if re.Op != syntax.OpRepeat {
				most = -1
			}
			steps, runs = walk(re.Sub[0])
			if most < 0 {
				steps, runs = inf, inf
			} else {
				steps, runs = mul(most, steps), mul(most, runs)
			}
			space, other := onlySpace(re.Sub[0]), noSpace(re.Sub[0])
			if space {
				steps = min(steps, 1) // one run of spaces, however long
			}
			if space || other {
				runs = min(runs, 1)
			}
			return steps, runs
		case syntax.OpConcat:
			for _, sub := range re.Sub {
				s, r := walk(sub)
				steps, runs = add(steps, s), add(runs, r)
			}
			return steps, runs
		case syntax.OpAlternate:
			for _, sub := range re.Sub {
				s, r := walk(sub)
				steps, runs = max(steps, s), max(runs, r)
			}
			return steps, runs
		}
		return 0, 0 // empty-width assertions, empty match
	}
	steps, runs := walk(re)
	if steps >= inf {
		steps = unbounded
	}
	if runs >= inf {
		runs = unbounded
	}
	return extent{steps, runs}
}

// isSpaceRune reports whether c is a \s character.
func isSpaceRune(c rune) bool { return c < utf8.RuneSelf && isSpace(byte(c)) }

// onlySpace reports whether every string re matches consists of \s
// characters.
func onlySpace(re *syntax.Regexp) bool { return allRunes(re, isSpaceRune) }

// noSpace reports whether no string re matches holds a \s character.
func noSpace(re *syntax.Regexp) bool {
	return allRunes(re, func(c rune) bool { return !isSpaceRune(c) })
}

// allRunes reports whether every rune of every string re matches
// satisfies ok.
func allRunes(re *syntax.Regexp, ok func(rune) bool) bool {
	switch re.Op {
	case syntax.OpLiteral:
		for _, c := range re.Rune {
			if !ok(c) {
				return false
			}
		}
		return true
	case syntax.OpCharClass:
		for i := 0; i < len(re.Rune); i += 2 {
			for c := re.Rune[i]; c <= re.Rune[i+1]; c++ {
				if !ok(c) {
					return false
				}
				if c >= utf8.RuneSelf {
					break // \s lies below: the rest of the range is alike
				}
			}
		}
		return true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return ok(' ') && ok('a')
	}
	for _, sub := range re.Sub {
		if !allRunes(sub, ok) {
			return false
		}
	}
	return true // empty-width, or made of subexpressions that all pass
}

// uses reports whether re contains an operator of one of the given kinds.
func uses(re *syntax.Regexp, ops ...syntax.Op) bool {
	if slices.Contains(ops, re.Op) {
		return true
	}
	for _, sub := range re.Sub {
		if uses(sub, ops...) {
			return true
		}
	}
	return false
}

// end returns where a match that starts at from ends at the latest: past
// the first limit it reaches, counting steps and runs in one walk. Runes
// are decoded as package regexp decodes them, so {0,40} spans 40 steps at
// most.
//
// The walk takes 64 bytes of ASCII text at a time while both limits are
// further off, counting runs and steps with a mask of the block's spaces,
// and goes byte by byte only through the block where a limit falls.
func (r extent) end(text string, from int) int {
	steps, runs := r.steps, r.runs
	if steps == unbounded && runs == unbounded {
		return len(text)
	}
	if steps == unbounded {
		steps = len(text) + 1
	}
	if runs == unbounded {
		runs = len(text) + 1
	}
	const (
		none = iota
		inSpace
		inOther
	)
	last := none // the kind of run the walk is in
	i := from
	for i < len(text) {
		if i+64 <= len(text) {
			if space, ascii := spaceMask(text[i : i+64]); ascii {
				starts := space ^ (space<<1 | b2u(last == inSpace)) // bit j: byte j begins a run
				if last == none {
					starts |= 1
				}
				n := bits.OnesCount64(starts)
				s := bits.OnesCount64(^space) + bits.OnesCount64(starts&space)
				if n <= runs && s <= steps {
					runs, steps, i = runs-n, steps-s, i+64
					last = inOther
					if space>>63 != 0 {
						last = inSpace
					}
					continue
				}
			}
		}
		for stop := min(i+64, len(text)); i < stop; {
			if isSpace(text[i]) {
				if last != inSpace {
					if runs == 0 || steps == 0 {
						return i
					}
					runs, steps, last = runs-1, steps-1, inSpace
				}
				i++
				continue
			}
			if last != inOther {
				if runs == 0 {
					return i
				}
				runs, last = runs-1, inOther
			}
			if steps == 0 {
				return i
			}
			steps--
			if text[i] < utf8.RuneSelf {
				i++
			} else {
				_, w := utf8.DecodeRuneInString(text[i:])
				i += w
			}
		}
	}
	return i
}

// b2u returns 1 for true and 0 for false.
func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// spaceMask returns the mask of the \s bytes of a 64-byte block, bit j
// for block[j], and whether the block is ASCII.
func spaceMask(block string) (mask uint64, ascii bool) {
	var or byte
	for j := 0; j+8 <= len(block); j += 8 {
		b := block[j : j+8]
		or |= b[0] | b[1] | b[2] | b[3] | b[4] | b[5] | b[6] | b[7]
		m := uint64(spaceBit[b[0]]) | uint64(spaceBit[b[1]])<<1 | uint64(spaceBit[b[2]])<<2 | uint64(spaceBit[b[3]])<<3 |
			uint64(spaceBit[b[4]])<<4 | uint64(spaceBit[b[5]])<<5 | uint64(spaceBit[b[6]])<<6 | uint64(spaceBit[b[7]])<<7
		mask |= m << j
	}
	return mask, or < utf8.RuneSelf
}

// spaceBit is 1 for the \s bytes and 0 for others.
var spaceBit = func() (t [256]uint8) {
	for c := range 256 {
		if isSpace(byte(c)) {
			t[c] = 1
		}
	}
	return t
}()

// safeEnd returns the first position at or after pos where the text may
// be cut without changing what an expression sees at the cut: a '\n' (or
// the end) when it uses $, an ASCII non-word character otherwise, so \b
// and $ are true at the cut exactly when they are in the whole text.
func safeEnd(text string, pos int, endLine bool) int {
	if endLine {
		if i := strings.IndexByte(text[pos:], '\n'); i >= 0 {
			return pos + i
		}
		return len(text)
	}
	for ; pos < len(text); pos++ {
		if c := text[pos]; c < utf8.RuneSelf && !isWord(c) {
			return pos
		}
	}
	return len(text)
}

// patternRules checks at init the part of the package comment's promise
// that depends on how a pattern begins. At a word start or a line start,
// \b holds in the anchored run exactly when it holds in the whole text;
// at a '<', a '[' or the character before a base64 run it may not, so
// patterns that test \b before reading a character must start at words
// or lines. At a word start ^ holds in the anchored run but not in the
// whole text, so patterns that test ^ first must not start at words.
// (chat_role_tag and encoded_blob test ^ first and start at a '<', a '['
// or a character other than a base64 one: their ^-branches go on to read
// a character that such a start cannot be, which the tests check.)
func patternRules(name string, re *syntax.Regexp, cues []cue) error {
	first := leading(re)
	lines := slices.Contains(first, syntax.OpBeginLine) || slices.Contains(first, syntax.OpBeginText)
	words := slices.Contains(first, syntax.OpWordBoundary) || slices.Contains(first, syntax.OpNoWordBoundary)
	for _, c := range cues {
		if c.near {
			continue
		}
		switch c.rule.kind {
		case atWord, wordsBack:
			if lines {
				return fmt.Errorf("pattern %s tests ^ first but starts at a word (%v)", name, c.words)
			}
		case opener, angle, blobRun:
			if words {
				return fmt.Errorf("pattern %s tests \\b first but starts at a bracket or before a base64 run (%v)", name, c.words)
			}
		}
	}
	return nil
}

// leading returns the empty-width operators re may test before it reads
// a character.
func leading(re *syntax.Regexp) []syntax.Op {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return []syntax.Op{re.Op}
	case syntax.OpCapture, syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		return leading(re.Sub[0])
	case syntax.OpConcat:
		var ops []syntax.Op
		for _, sub := range re.Sub {
			ops = append(ops, leading(sub)...)
			if !nullable(sub) {
				break
			}
		}
		return ops
	case syntax.OpAlternate:
		var ops []syntax.Op
		for _, sub := range re.Sub {
			ops = append(ops, leading(sub)...)
		}
		return ops
	}
	return nil
}

// nullable reports whether re matches the empty string (assertions
// permitting).
func nullable(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune) == 0
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL, syntax.OpNoMatch:
		return false
	case syntax.OpStar, syntax.OpQuest:
		return true
	case syntax.OpRepeat:
		return re.Min == 0 || nullable(re.Sub[0])
	case syntax.OpPlus, syntax.OpCapture:
		return nullable(re.Sub[0])
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !nullable(sub) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		return slices.ContainsFunc(re.Sub, nullable)
	}
	return true // empty-width
}

// compileAnchored returns expr compiled to match only at the start of its
// input, the form matchAt runs, with flags (such as "i") added.
func compileAnchored(flags, expr string) *regexp.Regexp {
	return regexp.MustCompile(`(?m` + flags + `)\A(?:` + expr + `)`)
}
