package defense

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/pikit-go/pikit/method"
)

func init() {
	RegisterDetector(method.Info{
		Name:        "pattern",
		Description: "Flags text matching known injection phrasings (ignore previous instructions, fake completions, prompt reveals, ...).",
		Options: []method.Option{
			{Name: "extra_patterns", Help: "more regular expressions to flag, matched case-insensitively", Default: []string{}},
		},
	}, newPatternDetector)
}

// injectionPattern is one known phrasing. A match adds evidence of weight
// (0..1); the weights of all matched patterns combine as independent
// signals, and text is flagged at a combined score of flagAt.
type injectionPattern struct {
	name    string
	weight  float64
	re      *regexp.Regexp
	anchors []string // one of them occurs in every match (nil: unknown)
}

const flagAt = 0.5

// p compiles a built-in pattern, multi-line. Patterns are written in lower
// case and run on lower-cased text: far cheaper than case-insensitive
// matching, which dominated the harness's cost per cell.
func p(name string, weight float64, expr string) injectionPattern {
	return injectionPattern{name, weight, regexp.MustCompile(`(?m)` + expr), anchors(expr)}
}

// Word lists shared by several patterns.
const (
	rulesWords  = `(?:instructions?|directions?|directives?|prompts?|rules|guidelines|tasks?|context|commands|orders|programming)`
	earlierWord = `(?:previous|prior|above|earlier|preceding|original|initial|old|all|any|every|your|the|these|those|my|system)`
	modelWords  = `(?:ai|a\.i\.|llm|assistant|chatbot|chat\s*bot|language\s+model|ai\s+model|ai\s+agent|agent|bot|gpt)`
)

var builtinPatterns = []injectionPattern{
	// Telling the model to drop what it was told.
	p("ignore_previous", 0.9, `\b(?:ignore|disregard|forget|skip|overlook|abandon|discard|set\s+aside|stop\s+following)\b[^.\n]{0,40}?\b`+earlierWord+`\b[^.\n]{0,30}?\b`+rulesWords+`\b`),
	p("ignore_above", 0.8, `\b(?:ignore|disregard|forget)\s+(?:all\s+|everything\s+|anything\s+)?(?:of\s+)?(?:the\s+|that\s+|what(?:'s|\s+is|\s+was)\s+(?:written\s+|said\s+)?)?(?:above|preceding|before)\s*(?:[.,;:!]|and\b|$)`),
	p("before_this_line", 0.5, `\b(?:everything|anything|all|instructions?|text)\b[^.\n]{0,40}\b(?:above|before)\s+this\s+(?:line|point|message|sentence)\b`),
	p("instructions_void", 0.7, `\b`+rulesWords+`\b[^.\n]{0,50}\b(?:no\s+longer\s+appl(?:y|ies)|(?:are|is)\s+(?:now\s+)?(?:void|cancell?ed|revoked|obsolete|suspended))\b`),
	p("override", 0.8, `\b(?:overrides?|overriding|supersedes?|replaces?|cancels?)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+)?(?:previous\s+|prior\s+|earlier\s+|original\s+|above\s+|system\s+|existing\s+)*(?:instructions?|prompts?|directives?|guidelines)\b`),
	// Handing the model a different job.
	p("new_instructions", 0.8, `\b(?:new|updated|revised|real|actual|true|secret|hidden)\s+(?:system\s+)?(?:instructions?|directives?|orders|task)\s*(?::|-{1,2}|are\b|is\b)`),
	p("your_new_task", 0.8, `\byour\s+(?:new|real|actual|only|true|next)\s+(?:task|instructions?|goal|objective|job|mission|purpose)\b`),
	p("from_now_on", 0.45, `\bfrom\s+now\s+on\b[^.\n]{0,20}\b(?:you|your|answer|reply|respond|always|only|never)\b`),
	// Re-casting the model's identity.
	p("you_are_now", 0.35, `\byou\s+are\s+(?:now|no\s+longer)\b`),
	p("persona_switch", 0.85, `\byou\s+are\s+(?:now|no\s+longer)\s+(?:an?\s+|the\s+|my\s+)?(?:[\w-]+\s+){0,2}?(?:`+modelWords+`|persona|character|dan|unrestricted|unfiltered|jailbroken|free|bound|restricted)\b`),
	p("act_as_unrestricted", 0.8, `\b(?:act|behave|pretend|respond|roleplay)\s+(?:to\s+be\s+|as\s+if\s+you\s+(?:are|were)\s+|as\s+|like\s+)(?:an?\s+)?(?:unrestricted|unfiltered|uncensored|jailbroken|evil|rogue)\b`),
	p("jailbreak_terms", 0.7, `\b(?:jailbreak|jailbroken|dan\s+mode|developer\s+mode|god\s+mode|do\s+anything\s+now)\b`),
	// Prying out hidden configuration.
	p("prompt_reveal", 0.85, `\b(?:print|reveal|show|output|repeat|display|tell\s+me|leak|share|disclose|write\s+out|give\s+me|list|recite|dump)\b[^.\n]{0,40}?\b(?:system|hidden|initial|original|secret|developer|internal|confidential)\s+(?:prompts?|instructions?|messages?|rules|configuration)\b`),
	p("system_prompt_mention", 0.3, `\b(?:your|the)\s+system\s+prompt\b`),
	// Pretending the real task is finished, or faking the conversation.
	p("fake_answer_done", 0.7, `^\s*(?:answer|response|assistant|output|result|reply)\s*:\s*(?:done|complete[d]?|finished|task\s+complete[d]?)\b`),
	p("fake_task_done", 0.6, `\b(?:the\s+)?(?:request|task|query|question|instruction|job)\s+(?:above|before|earlier)\s+(?:has|have|was|is)\s+(?:now\s+)?(?:been\s+)?(?:fully\s+|completely\s+)?(?:handled|completed|answered|done|finished|resolved|fulfilled)\b`),
	p("chat_role_tag", 0.75, `(?:<\|?\s*(?:im_start|im_end|endoftext|system|assistant|user)\s*\|?>|<<\s*/?\s*sys\s*>>|\[\s*/?\s*inst\s*\]|^\s*#{2,}\s*(?:system|assistant|instruction|response)\s*:?\s*$)`),
	p("fake_system_tag", 0.75, `\[\s*/?\s*(?:system|admin|administrator|developer|operator|root)(?:\s+(?:message|note|notice|prompt|update|override|instructions?))?\s*\]`),
	p("fake_system_line", 0.6, `^\s*(?:system|admin|administrator|developer|operator)\s+(?:message|notice|override|update|instructions?|prompt)\s*:`),
	p("authority_claim", 0.6, `\b(?:policy|system|security|priority|emergency|admin)\s+(?:update|override|notice|message|instruction)\s+from\s+(?:the\s+)?(?:operator|developer|admin|administrator|system|openai|anthropic|security\s+team)\b`),
	p("developer_override", 0.7, `\b(?:developer|admin|administrator|operator|system)\s+(?:override|command|mode\s+enabled)\b`),
	// Notes addressed to the model.
	p("note_to_model", 0.6, `\b(?:note|message|instructions?|reminder|request|memo)\s+(?:from\s+[^\n]{1,40}?\s+)?(?:to|for)\s+(?:the\s+|any\s+|all\s+)?(?:`+modelWords+`)s?\b`),
	p("address_model", 0.45, `\b(?:dear|hey|hi|hello|attention|to|calling)\s+(?:the\s+)?(?:ai|llm|chatbot|language\s+model|ai\s+assistant|ai\s+agent)\b`),
	p("shouted_note", 0.4, `\b(?:important|urgent|attention|warning|notice|note|alert)\b\s*!{2,}`),
	p("model_imperative", 0.6, `\b(?:assistant|ai|chatbot|llm|agent)\s*[:,]\s*(?:please\s+)?(?:now\s+|immediately\s+)?(?:ignore|forward|send|email|reply|respond|print|delete|execute|run|output|reveal|transfer|stop)\b`),
	// Forcing the shape of the answer.
	p("forced_prefix", 0.6, `\b(?:start|begin|open|prefix)\s+(?:your\s+|the\s+|each\s+)?(?:reply|response|answer|output|message)\s+with\s+(?:the\s+)?(?:exact\s+|following\s+)?(?:words?|phrase|text|sentence|string|"|')`),
	p("forced_reply", 0.55, `\b(?:reply|respond|answer|output|say|print)\s+(?:only\s+)?(?:with\s+)?(?:exactly|only\s+the\s+(?:word|phrase|text)|verbatim|the\s+exact\s+(?:word|words|phrase|text))\b`),
	// Hidden payloads.
	p("decode_and_follow", 0.85, `\b(?:decode|decipher|decrypt|unscramble|reverse|translate|deobfuscate|join|concatenate|combine|reassemble)\b[^\n]{0,100}?\b(?:follow|execute|obey|carry\s+out|do\s+what|perform|act\s+on|run|comply\s+with)\b`),
	p("encoded_blob", 0.3, `(?:^|[^A-Za-z0-9+/])[A-Za-z0-9+/]{32,}={0,2}(?:$|[^A-Za-z0-9+/=])`),
	p("encoding_mention", 0.3, `\b(?:base64|base-64|rot13|rot-13|hex[- ]encoded|morse\s+code|encoded\s+(?:text|instruction|message|line))\b`),
	p("assembled_instruction", 0.5, `\b(?:decoded|joined|combined|concatenated|reassembled|assembled|resulting|hidden)\s+(?:text|instructions?|string|message|command|payload)\b`),
	p("do_what_it_says", 0.45, `\b(?:carry\s+out|execute|obey|follow|do)\s+(?:what(?:ever)?)\s+(?:it|they|this|that|the\s+\w+(?:\s+\w+)?)\s+(?:says|say|tells\s+you|asks)\b`),
	// Secrecy and exfiltration.
	p("hide_from_user", 0.6, `\b(?:do\s+not|don't|never)\s+(?:tell|inform|alert|notify|warn|mention\s+(?:this|it|anything)\s+to)\s+(?:the\s+)?user\b|\bwithout\s+(?:telling|informing|alerting|notifying)\s+(?:the\s+)?user\b`),
	p("exfiltrate", 0.6, `\b(?:send|forward|email|e-mail|mail|upload|post|transmit|leak|copy|exfiltrate)\s+(?:me\s+)?(?:all\s+(?:of\s+)?|every\s+|the\s+(?:entire\s+|full\s+|whole\s+)?contents?\s+of\s+|the\s+user'?s\s+|your\s+)(?:the\s+|this\s+|my\s+|their\s+|your\s+)?[^.\n]{0,40}?\b(?:inbox|emails?|messages|mailbox|files|documents|passwords?|credentials|api\s+keys?|keys|tokens|secrets|contacts|history|conversations?|chats?|data)\b[^.\n]{0,40}?\bto\s+(?:\S+@\S+|https?://)`),
}

func newPatternDetector(args method.Args) (Detector, error) {
	// Clipped, so appending the extras copies instead of sharing.
	d := &patternDetector{patterns: slices.Clip(builtinPatterns)}
	for i, expr := range args.Strings("extra_patterns") {
		re, err := regexp.Compile(`(?im)` + expr)
		if err != nil {
			return nil, badOption("extra_patterns", "pattern %d (%q) does not compile: %v", i+1, expr, err)
		}
		d.patterns = append(d.patterns, injectionPattern{name: fmt.Sprintf("extra_%d", i+1), weight: 0.9, re: re})
	}
	return d, nil
}

// patternDetector matches a fixed list of regular expressions.
type patternDetector struct {
	patterns []injectionPattern
}

var _ Detector = (*patternDetector)(nil)

// Detect implements Detector. The reason lists the matched patterns,
// strongest first.
func (d *patternDetector) Detect(text string) Detection {
	type hit struct {
		name   string
		weight float64
	}
	var hits []hit
	clear := 1.0 // chance that no pattern is real evidence
	lower := strings.ToLower(text)
	for _, ip := range d.patterns {
		if mayMatch(lower, ip.anchors) && ip.re.MatchString(lower) {
			hits = append(hits, hit{ip.name, ip.weight})
			clear *= 1 - ip.weight
		}
	}
	if len(hits) == 0 {
		return Detection{}
	}
	// Strongest first; a stable insertion sort keeps list order on ties.
	for i := 1; i < len(hits); i++ {
		for j := i; j > 0 && hits[j].weight > hits[j-1].weight; j-- {
			hits[j], hits[j-1] = hits[j-1], hits[j]
		}
	}
	names := make([]string, len(hits))
	for i, h := range hits {
		names[i] = h.name
	}
	score := 1 - clear
	return Detection{Flagged: score >= flagAt, Score: score, Reason: "matched " + strings.Join(names, ", ")}
}
