package defense

import (
	"fmt"
	"unicode/utf8"

	"github.com/pikit-go/pikit/method"
)

func init() {
	RegisterDetector(method.Info{
		Name:        "length",
		Description: "Flags text longer than a threshold; long inputs can hide injections or flood the context.",
		Options: []method.Option{
			{Name: "threshold", Help: "characters above which text is flagged", Default: 2000},
		},
	}, newLengthDetector)
}

func newLengthDetector(args method.Args) (Detector, error) {
	t := args.Int("threshold")
	if t < 1 {
		return nil, badOption("threshold", "%d: want a positive number of characters", t)
	}
	return lengthDetector{threshold: t}, nil
}

// lengthDetector flags long text. Its score, n/(n+threshold), grows with
// the length n and is one half at the threshold.
type lengthDetector struct {
	threshold int
}

var _ Detector = lengthDetector{}

// Detect implements Detector.
func (d lengthDetector) Detect(text string) Detection {
	n := utf8.RuneCountInString(text)
	det := Detection{Flagged: n > d.threshold, Score: float64(n) / float64(n+d.threshold)}
	if det.Flagged {
		det.Reason = fmt.Sprintf("%d characters, over the threshold of %d", n, d.threshold)
	}
	return det
}
