package attack

import (
	"slices"

	"github.com/pikit-go/pikit/method"
)

// AdaptiveName is the name of the attack that searches for an injection
// that lands instead of wording it once.
const AdaptiveName = "adaptive"

// The search strategies of the adaptive attack.
const (
	StrategyPAIR      = "pair"      // an attacker model refines one stream of candidates
	StrategyTree      = "tree"      // an attacker model grows a pruned tree of candidates
	StrategyBestOfN   = "best_of_n" // random compositions of pikit's transforms, no attacker model
	StrategyGreedy    = "greedy"    // one transform at a time onto the best so far, no attacker model
	StrategyCrescendo = "crescendo" // an attacker model escalates over several turns
)

// Strategies lists the adaptive attack's strategies.
var Strategies = []string{StrategyPAIR, StrategyTree, StrategyBestOfN, StrategyGreedy, StrategyCrescendo}

// The kinds of transform the mutation strategies (best_of_n, greedy)
// compose.
const (
	TransformAttacks     = "attacks"     // reword with one of pikit's attacks
	TransformEncodings   = "encodings"   // encode the task (base64, leetspeak, ...)
	TransformParaphrases = "paraphrases" // restate the task in a softer or more authoritative voice
	TransformSuffixes    = "suffixes"    // append a random suffix
	TransformPlacements  = "placements"  // move the payload within the channel's carrier
)

// Transforms lists the kinds of transform, in the order they are tried.
var Transforms = []string{TransformAttacks, TransformEncodings, TransformParaphrases, TransformSuffixes, TransformPlacements}

// Adaptive is the "adaptive" attack: its options say how a search for a
// landing injection runs (the runner carries it out, round by round,
// against the cell's target). As a plain Attack it words the first
// candidate with its start attack, so a dry run, an export or a driver
// that cannot search still sees a sensible payload.
type Adaptive struct {
	Strategy string
	// MaxRounds bounds the attempts sent to the target; MaxTokens, when
	// positive, the tokens the cell may spend (target and attacker).
	MaxRounds, MaxTokens int
	// Branching, Width and Depth shape the tree strategy: children per
	// candidate, candidates kept per level, levels.
	Branching, Width, Depth int
	// Prune drops off-topic candidates (tree) before they are sent.
	Prune bool
	// Start is the attack that words the first candidate.
	Start string
	// Transforms are the kinds of transform the mutation strategies use.
	Transforms []string
	// Turns bounds a crescendo conversation's turns; Backtracks the turns
	// it may take back after a refusal or a block.
	Turns, Backtracks int
	// Seed drives the search's random choices.
	Seed  int64
	start Attack
}

// DefaultAttacker is the attacker model when a config names none
// (attacker_target, --attacker-target): offline.
const DefaultAttacker = "mock:attacker"

func init() {
	Register(method.Info{
		Name:        AdaptiveName,
		Description: "Searches for an injection that lands: an attacker model (pair, tree, crescendo) or pikit's own transforms (best_of_n, greedy) refine it round by round against the target.",
		Options: []method.Option{
			{Name: "strategy", Help: "pair: an attacker model refines one stream of candidates from the judge's verdicts; tree: it grows a tree (branching, width, depth) and prunes off-topic candidates; best_of_n: random compositions of pikit's transforms; greedy: one transform at a time onto the best so far; crescendo: an attacker model escalates over several turns (direct), or the payload is spread over several tool results (indirect)", Default: StrategyPAIR, Choices: Strategies},
			{Name: "max_rounds", Help: "most attempts sent to the target (1 to 1000)", Default: 10},
			{Name: "max_tokens", Help: "most tokens the cell may spend, target and attacker together, as providers report them (0: no limit)", Default: 0},
			{Name: "branching", Help: "tree: children made from each candidate (1 to 20)", Default: 3},
			{Name: "width", Help: "tree: candidates kept at each level, best first (1 to 50)", Default: 3},
			{Name: "depth", Help: "tree: levels of refinement (1 to 50)", Default: 5},
			{Name: "prune", Help: "tree: ask the attacker model whether each candidate still pursues the task, and drop those that do not before sending them", Default: true},
			{Name: "start", Help: "the attack that words the first candidate", Default: "naive"},
			{Name: "transforms", Help: "best_of_n and greedy: the kinds of transform to compose: attacks, encodings, paraphrases, suffixes, placements", Default: slices.Clone(Transforms)},
			{Name: "turns", Help: "crescendo: most turns of one conversation (2 to 50)", Default: 5},
			{Name: "backtracks", Help: "crescendo: most turns taken back after a refusal or a block (0 to 50)", Default: 3},
			{Name: "seed", Help: "seed of the search's random choices; 0 uses the cell's seed", Default: 0},
		},
	}, newAdaptive)
}

func newAdaptive(args method.Args) (Attack, error) {
	seed := args.Seed
	a := &Adaptive{
		Strategy:  args.String("strategy"),
		MaxRounds: args.Int("max_rounds"), MaxTokens: args.Int("max_tokens"),
		Branching: args.Int("branching"), Width: args.Int("width"), Depth: args.Int("depth"),
		Prune: args.Bool("prune"), Start: args.String("start"), Transforms: args.Strings("transforms"),
		Turns: args.Int("turns"), Backtracks: args.Int("backtracks"), Seed: int64(args.Int("seed")),
	}
	if a.Seed == 0 {
		a.Seed = seed
	}
	for _, r := range []struct {
		name     string
		v, lo, h int
	}{
		{"max_rounds", a.MaxRounds, 1, 1000}, {"max_tokens", a.MaxTokens, 0, 1 << 40},
		{"branching", a.Branching, 1, 20}, {"width", a.Width, 1, 50}, {"depth", a.Depth, 1, 50},
		{"turns", a.Turns, 2, 50}, {"backtracks", a.Backtracks, 0, 50},
	} {
		if r.v < r.lo || r.v > r.h {
			return nil, badOption(r.name, "%d is out of range: give %d to %d", r.v, r.lo, r.h)
		}
	}
	for _, t := range a.Transforms {
		if !slices.Contains(Transforms, t) {
			return nil, badOption("transforms", "unknown transform %q; known: attacks, encodings, paraphrases, suffixes, placements", t)
		}
	}
	if len(a.Transforms) == 0 && (a.Strategy == StrategyBestOfN || a.Strategy == StrategyGreedy) {
		return nil, badOption("transforms", "%s needs at least one kind of transform", a.Strategy)
	}
	if a.Start == AdaptiveName || a.Start == None {
		return nil, badOption("start", "%q cannot word the first candidate; give a fixed attack such as naive", a.Start)
	}
	start, err := New(a.Start, nil, a.Seed)
	if err != nil {
		return nil, badOption("start", "%v", err)
	}
	a.start = start
	return a, nil
}

// NewAdaptive builds the adaptive attack with its options (nil for
// defaults) and seed.
func NewAdaptive(kwargs map[string]any, seed int64) (*Adaptive, error) {
	a, err := New(AdaptiveName, kwargs, seed)
	if err != nil {
		return nil, err
	}
	return a.(*Adaptive), nil
}

// Inject words the first candidate with the start attack.
func (a *Adaptive) Inject(prompt, task string) string { return a.start.Inject(prompt, task) }

// UsesAttacker reports whether the strategy asks an attacker model.
func (a *Adaptive) UsesAttacker() bool {
	return a.Strategy == StrategyPAIR || a.Strategy == StrategyTree || a.Strategy == StrategyCrescendo
}
