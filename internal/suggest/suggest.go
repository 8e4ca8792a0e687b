// Package suggest finds the known names nearest to a mistyped one, for
// "did you mean" hints in error messages.
package suggest

import (
	"sort"
	"strings"

	"github.com/agnivade/levenshtein"
)

// Nearest returns up to three known names close to name, best first. A known
// name is close when its edit distance is at most a third of its length (at
// least 2), or when one contains the other.
func Nearest(name string, known []string) []string {
	type cand struct {
		name string
		dist int
	}
	lname := strings.ToLower(name)
	var cands []cand
	for _, k := range known {
		lk := strings.ToLower(k)
		d := levenshtein.ComputeDistance(lname, lk)
		limit := max(2, len(lk)/3)
		if d <= limit || (len(lname) >= 3 && (strings.Contains(lk, lname) || strings.Contains(lname, lk))) {
			cands = append(cands, cand{k, d})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].dist != cands[j].dist {
			return cands[i].dist < cands[j].dist
		}
		return cands[i].name < cands[j].name
	})
	var out []string
	for i := 0; i < len(cands) && i < 3; i++ {
		out = append(out, cands[i].name)
	}
	return out
}

// Hint formats the nearest names as " (did you mean x?)", or "" when none is near.
func Hint(name string, known []string) string {
	near := Nearest(name, known)
	switch len(near) {
	case 0:
		return ""
	case 1:
		return " (did you mean " + near[0] + "?)"
	default:
		return " (did you mean " + strings.Join(near[:len(near)-1], ", ") + " or " + near[len(near)-1] + "?)"
	}
}
