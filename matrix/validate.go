package matrix

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/attack"
	"github.com/pikit-go/pikit/channel"
	"github.com/pikit-go/pikit/defense"
	"github.com/pikit-go/pikit/method"
	"github.com/pikit-go/pikit/target"
)

// Validate checks every name and value of the config against the
// registries: unknown attacks, defenses, channels, agents, providers and
// samples (with the nearest known names), bad method options, and values out
// of range. The error wraps ErrConfig and, for a loaded file, names the line.
func (c *Config) Validate() error {
	var errs errorList
	bad := func(key, format string, args ...any) {
		line := 0
		if c.lines != nil {
			line = c.lines(key)
		}
		errs.add(&Error{File: c.Source, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	names := func(key string, list []string, allowEmpty bool, check func(string) error) {
		if len(list) == 0 {
			bad(key, "is empty; name at least one (or \"*\" for all)")
		}
		for i, n := range list {
			if n == WildcardName || (allowEmpty && n == DirectChannel) {
				continue
			}
			if err := check(n); err != nil {
				bad(fmt.Sprintf("%s.%d", key, i), "%v", err)
			}
		}
	}
	specs := func(key string, list []Spec, validate func(string, map[string]any) error) {
		for i, s := range list {
			if err := validate(s.Name, s.Kwargs); err != nil {
				bad(fmt.Sprintf("%s.%d", key, i), "%v", err)
			}
		}
	}
	names("attacks", c.Attacks, false, attack.Registry.Check)
	specs("attack_specs", c.AttackSpecs, attack.Registry.Validate)
	names("defenses", c.Defenses, false, defense.Check)
	specs("defense_specs", c.DefenseSpecs, defense.Validate)
	names("channels", c.Channels, true, channel.Registry.Check)
	specs("channel_specs", c.ChannelSpecs, channel.Registry.Validate)
	names("agents", c.Agents, false, func(n string) error { _, err := c.Scenario(n); return err })

	if c.Task == "" {
		bad("task", "is empty; give the instruction the attacker wants followed")
	}
	if !slices.Contains([]string{"rule", "rule:pikit", "match", "llm", "none"}, c.JudgeType) {
		bad("judge_type", "unknown judge %q; known: %s", c.JudgeType, defaultJudgeTypes)
	}
	if c.OutputPath != "" && HasAdaptive(c) {
		bad("output_path", "names one file for one crafted carrier, but an adaptive cell crafts one per round; leave output_path out and export the winning injection with pikit export-case")
	}
	if c.JudgeType == "none" && HasAdaptive(c) {
		bad("judge_type", "is none, but the adaptive attack needs a verdict each round to search; give rule, rule:pikit, match or llm")
	}
	if c.CanaryRegex != "" {
		if _, err := regexp.Compile(c.CanaryRegex); err != nil {
			bad("canary_regex", "is no regular expression pikit reads (RE2 syntax: no lookarounds or backreferences): %v", err)
		}
	}
	if c.ToolProtocol != "" && !slices.Contains(agent.Protocols, c.ToolProtocol) {
		bad("tool_protocol", "unknown tool protocol %q; known: %s", c.ToolProtocol, strings.Join(agent.Protocols, ", "))
	}
	if c.CanaryFuzzy < 0 || c.CanaryFuzzy > 100 {
		bad("canary_fuzzy", "want a score from 1 to 100 (0 for none), got %d", c.CanaryFuzzy)
	}
	if c.PayloadMarker != "" {
		switch {
		case !c.markerPlaced():
			bad("payload_marker", "%q is nowhere in user_message (or, without one, in the user message of each scenario the agents name): the marker says where in the user's message a direct payload goes", c.PayloadMarker)
		case HasAdaptive(c):
			bad("payload_marker", "does not apply to the adaptive attack, which words the whole user message each round; leave one of them out")
		}
	}
	if c.CarrierPath != "" && c.DataSample != "" {
		bad("carrier_path", "and data_sample both name the clean carrier; give one")
	}
	switch c.DefensePoint {
	case "", PointSystem, PointUser, PointToolResult:
	default:
		bad("defense_point", "unknown defense point %q; known: system, user, tool_result", c.DefensePoint)
	}
	if c.DefensePoint == PointSystem {
		for i, n := range append(append([]string(nil), c.Defenses...), specNames(c.DefenseSpecs)...) {
			if defense.IsDetector(n) {
				bad(fmt.Sprintf("defenses.%d", i), "%s is a detector: it screens the user message or tool results, not the system prompt (defense_point = \"system\")", n)
			}
		}
	}
	if c.CarrierMode != "text" && c.CarrierMode != "file" {
		bad("carrier_mode", "unknown carrier mode %q; known: text, file", c.CarrierMode)
	}
	if c.MaxSteps < 1 {
		bad("max_steps", "must be at least 1, got %d", c.MaxSteps)
	}
	if c.Reruns < 0 || c.Reruns > MaxReruns {
		bad("reruns_without_answer", "want a whole number from 0 to %d, got %d", MaxReruns, c.Reruns)
	}
	if c.Repeats < 1 {
		bad("repeats", "must be at least 1, got %d", c.Repeats)
	}
	if !(c.Temperature >= 0 && c.Temperature <= 2) { // NaN fails both
		bad("temperature", "must be between 0 and 2, got %v", c.Temperature)
	}
	if _, _, err := target.ParseSpec(c.TargetSpec); err != nil {
		bad("target_spec", "%v", err)
	}
	if c.AttackerTarget != "" {
		if _, _, err := target.ParseSpec(c.AttackerTarget); err != nil {
			bad("attacker_target", "%v", err)
		}
	}
	if c.DataSample != "" {
		if err := channel.CheckSample(c.DataSample); err != nil {
			bad("data_sample", "%v", err)
		}
	}
	for _, k := range sortedKeys(c.SinkArgs) {
		switch c.SinkArgs[k].(type) {
		case string, int64, int, float64, bool:
		default:
			bad("sink_args."+k, "want a string, number or boolean, got %s", method.Describe(c.SinkArgs[k]))
		}
	}
	return errs.err()
}

func specNames(specs []Spec) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.Name
	}
	return out
}

// markerPlaced reports whether the payload marker is in the user's
// message each cell sends: user_message, or without one the user message
// of every scenario the config's agents name.
func (c *Config) markerPlaced() bool {
	if c.UserMessage != "" {
		return strings.Contains(c.UserMessage, c.PayloadMarker)
	}
	if len(c.Agents) == 0 {
		return false
	}
	for _, name := range c.Agents {
		sc, err := c.Scenario(name)
		if err != nil {
			return true // the unknown agent is reported on its own
		}
		if !strings.Contains(sc.UserMessage, c.PayloadMarker) {
			return false
		}
	}
	return true
}
