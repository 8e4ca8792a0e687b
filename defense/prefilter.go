package defense

import (
	"regexp/syntax"
	"strings"
)

// anchors returns literals of which at least one occurs in every text the
// expression matches: a cheap test that lets the detector skip a regular
// expression that cannot match. nil means no such set was found (the
// expression always runs).
func anchors(expr string) []string {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	lits, ok := required(re.Simplify())
	if !ok {
		return nil
	}
	for _, l := range lits {
		if len(l) < 2 {
			return nil // too short to filter anything
		}
	}
	return lits
}

// required returns a set of literals one of which every match of re
// contains.
func required(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return []string{strings.ToLower(string(re.Rune))}, true
		}
		return []string{string(re.Rune)}, true
	case syntax.OpCapture:
		return required(re.Sub[0])
	case syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			lits, ok := required(sub)
			if !ok {
				return nil, false
			}
			out = append(out, lits...)
		}
		return out, true
	case syntax.OpConcat:
		// The longest literal run is the most selective; any required
		// element will do.
		var best []string
		for _, sub := range re.Sub {
			if lits, ok := required(sub); ok && (best == nil || shortest(lits) > shortest(best)) {
				best = lits
			}
		}
		return best, best != nil
	}
	return nil, false
}

func shortest(lits []string) int {
	n := -1
	for _, l := range lits {
		if n < 0 || len(l) < n {
			n = len(l)
		}
	}
	return n
}

// mayMatch reports whether text holds one of the anchors (always true
// without anchors).
func mayMatch(text string, anchors []string) bool {
	if anchors == nil {
		return true
	}
	for _, a := range anchors {
		if strings.Contains(text, a) {
			return true
		}
	}
	return false
}
