package agent

import "github.com/pikit-go/pikit/target"

// Round is one attempt of an adaptive attack: the injection a search tried,
// what the target made of it, and the judge's verdict. A candidate the
// search dropped before sending it (off topic, or an attacker answer that
// could not be read) is a Round with Pruned set and Round 0: it cost the
// attacker, not the target.
type Round struct {
	// Index numbers every attempt, sent or pruned, from 1 in the order
	// made; Round numbers the attempts sent to the target, from 1.
	Index int `json:"index"`
	Round int `json:"round"`
	// Parent is the Index of the attempt this one refined (0: none);
	// Depth its distance from the first attempt of its line (tree search).
	Parent int `json:"parent,omitempty"`
	Depth  int `json:"depth,omitempty"`
	// Operator says how the candidate was made: "start:naive",
	// "attacker", "mutate:obfuscation+suffix", "turn", ...
	Operator string `json:"operator"`
	// Improvement is the attacker model's note on what it changed.
	Improvement string `json:"improvement,omitempty"`
	// Prompt is the injection as the attack wrote it (the payload; a
	// crescendo turn). Channel holds channel options the candidate set
	// (a mutated placement).
	Prompt  string         `json:"prompt"`
	Channel map[string]any `json:"channel,omitempty"`
	// Answer is the target's final text; SinkCalls the sinks it called.
	Answer    string   `json:"answer,omitempty"`
	SinkCalls []string `json:"sink_calls,omitempty"`
	// Outcome, Success, Score (1 to 10, higher is closer to the goal) and
	// Reason are the judge's verdict on this attempt.
	Outcome string `json:"outcome,omitempty"`
	Success bool   `json:"success"`
	Score   int    `json:"score,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Pruned says why the candidate was not sent.
	Pruned string `json:"pruned,omitempty"`
	// Backtracked marks a crescendo turn taken back after the target
	// refused it or a defense stopped it.
	Backtracked bool `json:"backtracked,omitempty"`
	// ModelCalls and Usage are what the attempt cost the target;
	// AttackerCalls and AttackerUsage what it cost the attacker model.
	ModelCalls    int          `json:"model_calls"`
	Usage         target.Usage `json:"usage"`
	AttackerCalls int          `json:"attacker_calls,omitempty"`
	AttackerUsage target.Usage `json:"attacker_usage"`
}
