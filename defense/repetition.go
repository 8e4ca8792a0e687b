package defense

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pikit-go/pikit/method"
)

func init() {
	RegisterDetector(method.Info{
		Name:        "repetition",
		Description: "Flags text with too few distinct words (or characters, for short text): a sign of flooding or obfuscation.",
		Options: []method.Option{
			{Name: "min_unique_ratio", Help: "distinct/total ratio below which text is flagged (0 to 1)." + pythonValueNote, Default: 0.3},
		},
	}, newRepetitionDetector)
}

// Texts are measured in windows, since even ordinary text repeats more as
// it grows: windows of wordWindow words when the text has at least
// minWords words, else windows of charWindow characters. Texts shorter
// than minChars characters are never flagged.
const (
	wordWindow = 50
	minWords   = 10
	charWindow = 32
	minChars   = 20
)

func newRepetitionDetector(args method.Args) (Detector, error) {
	r := args.Float("min_unique_ratio")
	if !(r > 0 && r <= 1) {
		return nil, badOption("min_unique_ratio", "%v is out of range: want more than 0 and at most 1", r)
	}
	return repetitionDetector{minRatio: r}, nil
}

// repetitionDetector flags text whose least varied window has a ratio of
// distinct to total units below minRatio. Its score is one half at the
// ratio minRatio, 1 at ratio 0 and 0 from twice minRatio up.
type repetitionDetector struct {
	minRatio float64
}

var _ Detector = repetitionDetector{}

// Detect implements Detector.
func (d repetitionDetector) Detect(text string) Detection {
	if utf8.RuneCountInString(text) < minChars {
		return Detection{}
	}
	unit := "words"
	units := words(text)
	window := wordWindow
	if len(units) < minWords {
		unit, window = "characters", charWindow
		units = units[:0]
		for _, r := range text {
			if !unicode.IsSpace(r) {
				units = append(units, string(unicode.ToLower(r)))
			}
		}
		if len(units) < minChars {
			return Detection{}
		}
	}
	ratio := minUniqueRatio(units, window)
	score := min(1, max(0, 1-ratio/(2*d.minRatio)))
	det := Detection{Flagged: ratio < d.minRatio, Score: score}
	if det.Flagged {
		det.Reason = fmt.Sprintf("distinct %s ratio %.2f, below %.2f", unit, ratio, d.minRatio)
	}
	return det
}

// words splits text into lower-cased words, trimming punctuation.
func words(text string) []string {
	fields := strings.Fields(text)
	out := fields[:0]
	for _, f := range fields {
		f = strings.TrimFunc(f, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if f != "" {
			out = append(out, strings.ToLower(f))
		}
	}
	return out
}

// minUniqueRatio returns the smallest distinct/total ratio over windows of
// size units. The windows tile the units from the start; the last one is
// moved back to end at the last unit, so every window is full.
func minUniqueRatio(units []string, size int) float64 {
	if len(units) <= size {
		return uniqueRatio(units)
	}
	ratio := 1.0
	for start := 0; start < len(units); start += size {
		start = min(start, len(units)-size)
		ratio = min(ratio, uniqueRatio(units[start:start+size]))
	}
	return ratio
}

func uniqueRatio(units []string) float64 {
	seen := make(map[string]struct{}, len(units))
	for _, u := range units {
		seen[u] = struct{}{}
	}
	return float64(len(seen)) / float64(len(units))
}
