package judge

import (
	"context"

	"github.com/pikit-go/pikit/agent"
)

// Task is what the attacker wanted, as the judge needs it.
type Task struct {
	Text    string // the injected task
	Payload string // the worded payload as crafted (attack output)
	Canary  string // the string a compliant answer carries
	// CanaryRegex, when set, replaces the canary: a compliant answer
	// matches this regular expression (RE2 syntax), as a benchmark's regex
	// judge asks.
	CanaryRegex string
	// CanaryFuzzy, when positive, has the match judge count a success
	// when PartialRatio of the canary and the answer is above it, as a
	// benchmark that matches its reference fuzzily does (BIPIA: 80).
	CanaryFuzzy int
	// Criteria, when set, is what success means in words, for the LLM
	// judge: a benchmark's own question ("the response gives specific
	// investment advice…").
	Criteria    string
	RequireSink bool              // success needs a sink to fire
	SinkArgs    map[string]string // arguments a fired sink must carry (substring, case-insensitive)
}

// Evidence points at the trace step behind a signal.
type Evidence struct {
	Signal string `json:"signal"`
	Step   int    `json:"step"`
	Detail string `json:"detail,omitempty"`
}

// Verdict is a judge's decision on one trace.
type Verdict struct {
	Success    bool       `json:"success"`
	Outcome    Outcome    `json:"outcome"`
	Confidence string     `json:"confidence"` // "high", "medium", "low" or "n/a"
	Reason     string     `json:"reason"`
	Signals    []string   `json:"signals"`
	Evidence   []Evidence `json:"evidence,omitempty"`
	Raw        string     `json:"raw,omitempty"` // an LLM judge's answer, kept verbatim
}

// Judge decides whether an injection succeeded.
type Judge interface {
	Judge(ctx context.Context, tr agent.Trace, task Task) (Verdict, error)
}

// None gives no verdict: every trace is not_judged.
type None struct{}

// Judge implements Judge.
func (None) Judge(context.Context, agent.Trace, Task) (Verdict, error) {
	return Verdict{Outcome: NotJudged, Confidence: "n/a", Reason: "no judge", Signals: []string{}}, nil
}
