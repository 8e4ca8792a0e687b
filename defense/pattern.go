package defense

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"

	"github.com/pikit-go/pikit/method"
)

func init() {
	RegisterDetector(method.Info{
		Name:        "pattern",
		Description: "Flags text matching known injection phrasings (ignore previous instructions, fake completions, prompt reveals, ...).",
		Options: []method.Option{
			{Name: "extra_patterns", Help: "more regular expressions to flag, matched case-insensitively (at most 256, each at most 4 KiB, 64 KiB in all)", Default: []string{}},
		},
	}, newPatternDetector)
}

// injectionPattern is one known phrasing. A match adds evidence of weight
// (0..1); the weights of all matched patterns combine as independent
// signals, and text is flagged at a combined score of flagAt.
type injectionPattern struct {
	name   string
	weight float64
	re     *regexp.Regexp // the expression, for the whole text

	// Built-in patterns only (see prefilter.go): the cues that locate a
	// match; the expression anchored at its start, as run on lower-cased
	// text and, case-insensitive, as run on ASCII text left as it is; how
	// far a match reaches; whether the expression tests $ (so a cut must
	// fall at a line end).
	cues         []cue
	anchored     *regexp.Regexp
	anchoredFold *regexp.Regexp
	reach        extent
	endLine      bool
}

// flagAt is the combined score at which text is flagged.
const flagAt = 0.5

// p compiles a built-in pattern, multi-line, with the cues that find its
// matches. Patterns are written in lower case, for lower-cased text (or,
// anchored and case-insensitive, for ASCII text as it is). It panics on a
// bad pattern, like regexp.MustCompile: the list is fixed at build time.
func p(name string, weight float64, expr string, cues ...cue) injectionPattern {
	re := regexp.MustCompile(`(?m)` + expr)
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		panic(fmt.Errorf("pattern %s: %w", name, err))
	}
	if err := patternRules(name, tree, cues); err != nil {
		panic(err)
	}
	ip := injectionPattern{
		name: name, weight: weight, re: re, cues: cues,
		anchored:     compileAnchored("", expr),
		anchoredFold: compileAnchored("i", expr),
		reach:        extentOf(tree),
		endLine:      uses(tree, syntax.OpEndLine, syntax.OpEndText),
	}
	return ip
}

// Word lists shared by several patterns.
const (
	rulesWords  = `(?:instructions?|directions?|directives?|prompts?|rules|guidelines|tasks?|context|commands|orders|programming)`
	rulesList   = `instruction instructions direction directions directive directives prompt prompts rules guidelines task tasks context commands orders programming`
	earlierWord = `(?:previous|prior|above|earlier|preceding|original|initial|old|all|any|every|your|the|these|those|my|system)`
	modelWords  = `(?:ai|a\.i\.|llm|assistant|chatbot|chat\s*bot|language\s+model|ai\s+model|ai\s+agent|agent|bot|gpt)`
)

// The built-in phrasings, each with the cues that locate its matches:
// trigger words (rare ones where the phrasing has any) and the rule from a
// trigger to the match's start, and near groups that must also show up.
// Every match must contain a trigger and a word of each near group as
// whole words; TestPatternTriggersAreSound and FuzzPatternDetector check
// it.
// builtinPatterns are the built-in patterns, compiled on first use:
// compiling them at start-up was most of what pikit did before any
// command ran.
var builtinPatterns = sync.OnceValue(func() []injectionPattern {
	return []injectionPattern{
		// Telling the model to drop what it was told.
		p("ignore_previous", 0.9, `\b(?:ignore|disregard|forget|skip|overlook|abandon|discard|set\s+aside|stop\s+following)\b[^.\n]{0,40}?\b`+earlierWord+`\b[^.\n]{0,30}?\b`+rulesWords+`\b`,
			at("ignore disregard forget skip overlook abandon discard"), back(1, 1, "aside following"), near(rulesList)),
		p("ignore_above", 0.8, `\b(?:ignore|disregard|forget)\s+(?:all\s+|everything\s+|anything\s+)?(?:of\s+)?(?:the\s+|that\s+|what(?:'s|\s+is|\s+was)\s+(?:written\s+|said\s+)?)?(?:above|preceding|before)\s*(?:[.,;:!]|and\b|$)`,
			at("ignore disregard forget"), near("above preceding before aboveand precedingand beforeand")),
		p("before_this_line", 0.5, `\b(?:everything|anything|all|instructions?|text)\b[^.\n]{0,40}\b(?:above|before)\s+this\s+(?:line|point|message|sentence)\b`,
			at("everything anything all instruction instructions text"), near("above before"), near("line point message sentence")),
		p("instructions_void", 0.7, `\b`+rulesWords+`\b[^.\n]{0,50}\b(?:no\s+longer\s+appl(?:y|ies)|(?:are|is)\s+(?:now\s+)?(?:void|cancell?ed|revoked|obsolete|suspended))\b`,
			at(rulesList), near("apply applies void cancelled canceled revoked obsolete suspended")),
		p("override", 0.8, `\b(?:overrides?|overriding|supersedes?|replaces?|cancels?)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+)?(?:previous\s+|prior\s+|earlier\s+|original\s+|above\s+|system\s+|existing\s+)*(?:instructions?|prompts?|directives?|guidelines)\b`,
			at("override overrides overriding supersede supersedes replace replaces cancel cancels"), near("instruction instructions prompt prompts directive directives guidelines")),
		// Handing the model a different job.
		p("new_instructions", 0.8, `\b(?:new|updated|revised|real|actual|true|secret|hidden)\s+(?:system\s+)?(?:instructions?|directives?|orders|task)\s*(?::|-{1,2}|are\b|is\b)`,
			at("new updated revised real actual true secret hidden")),
		p("your_new_task", 0.8, `\byour\s+(?:new|real|actual|only|true|next)\s+(?:task|instructions?|goal|objective|job|mission|purpose)\b`,
			back(2, 2, "task instruction instructions goal objective job mission purpose")),
		p("from_now_on", 0.45, `\bfrom\s+now\s+on\b[^.\n]{0,20}\b(?:you|your|answer|reply|respond|always|only|never)\b`,
			back(1, 1, "now")),
		// Re-casting the model's identity.
		p("you_are_now", 0.35, `\byou\s+are\s+(?:now|no\s+longer)\b`,
			back(2, 2, "now"), back(3, 3, "longer")),
		p("persona_switch", 0.85, `\byou\s+are\s+(?:now|no\s+longer)\s+(?:an?\s+|the\s+|my\s+)?(?:[\w-]+\s+){0,2}?(?:`+modelWords+`|persona|character|dan|unrestricted|unfiltered|jailbroken|free|bound|restricted)\b`,
			back(2, 2, "now"), back(3, 3, "longer")),
		p("act_as_unrestricted", 0.8, `\b(?:act|behave|pretend|respond|roleplay)\s+(?:to\s+be\s+|as\s+if\s+you\s+(?:are|were)\s+|as\s+|like\s+)(?:an?\s+)?(?:unrestricted|unfiltered|uncensored|jailbroken|evil|rogue)\b`,
			at("act behave pretend respond roleplay"), near("unrestricted unfiltered uncensored jailbroken evil rogue")),
		p("jailbreak_terms", 0.7, `\b(?:jailbreak|jailbroken|dan\s+mode|developer\s+mode|god\s+mode|do\s+anything\s+now)\b`,
			at("jailbreak jailbroken"), back(1, 1, "mode anything")),
		// Prying out hidden configuration.
		p("prompt_reveal", 0.85, `\b(?:print|reveal|show|output|repeat|display|tell\s+me|leak|share|disclose|write\s+out|give\s+me|list|recite|dump)\b[^.\n]{0,40}?\b(?:system|hidden|initial|original|secret|developer|internal|confidential)\s+(?:prompts?|instructions?|messages?|rules|configuration)\b`,
			at("print reveal show output repeat display tell leak share disclose write give list recite dump"), near("system hidden initial original secret developer internal confidential"), near("prompt prompts instruction instructions message messages rules configuration")),
		p("system_prompt_mention", 0.3, `\b(?:your|the)\s+system\s+prompt\b`,
			back(2, 2, "prompt")),
		// Pretending the real task is finished, or faking the conversation.
		p("fake_answer_done", 0.7, `^\s*(?:answer|response|assistant|output|result|reply)\s*:\s*(?:done|complete[d]?|finished|task\s+complete[d]?)\b`,
			lineAt("answer response assistant output result reply"), near("done complete completed finished")),
		p("fake_task_done", 0.6, `\b(?:the\s+)?(?:request|task|query|question|instruction|job)\s+(?:above|before|earlier)\s+(?:has|have|was|is)\s+(?:now\s+)?(?:been\s+)?(?:fully\s+|completely\s+)?(?:handled|completed|answered|done|finished|resolved|fulfilled)\b`,
			at("request task query question instruction job"), near("above before earlier"), near("handled completed answered done finished resolved fulfilled")),
		p("chat_role_tag", 0.75, `(?:<\|?\s*(?:im_start|im_end|endoftext|system|assistant|user)\s*\|?>|<<\s*/?\s*sys\s*>>|\[\s*/?\s*inst\s*\]|^\s*#{2,}\s*(?:system|assistant|instruction|response)\s*:?\s*$)`,
			inAngle("im_start im_end endoftext system assistant user"), after("<<", "sys"), after("[", "inst"), headed("system assistant instruction response")),
		p("fake_system_tag", 0.75, `\[\s*/?\s*(?:system|admin|administrator|developer|operator|root)(?:\s+(?:message|note|notice|prompt|update|override|instructions?))?\s*\]`,
			after("[", "system admin administrator developer operator root")),
		p("fake_system_line", 0.6, `^\s*(?:system|admin|administrator|developer|operator)\s+(?:message|notice|override|update|instructions?|prompt)\s*:`,
			lineAt("system admin administrator developer operator")),
		p("authority_claim", 0.6, `\b(?:policy|system|security|priority|emergency|admin)\s+(?:update|override|notice|message|instruction)\s+from\s+(?:the\s+)?(?:operator|developer|admin|administrator|system|openai|anthropic|security\s+team)\b`,
			at("policy system security priority emergency admin"), near("update override notice message instruction"), near("from")),
		p("developer_override", 0.7, `\b(?:developer|admin|administrator|operator|system)\s+(?:override|command|mode\s+enabled)\b`,
			at("developer admin administrator operator system"), near("override command enabled")),
		// Notes addressed to the model.
		p("note_to_model", 0.6, `\b(?:note|message|instructions?|reminder|request|memo)\s+(?:from\s+[^\n]{1,40}?\s+)?(?:to|for)\s+(?:the\s+|any\s+|all\s+)?(?:`+modelWords+`)s?\b`,
			at("note message instruction instructions reminder request memo")),
		p("address_model", 0.45, `\b(?:dear|hey|hi|hello|attention|to|calling)\s+(?:the\s+)?(?:ai|llm|chatbot|language\s+model|ai\s+assistant|ai\s+agent)\b`,
			back(1, 2, "ai llm chatbot language")),
		p("shouted_note", 0.4, `\b(?:important|urgent|attention|warning|notice|note|alert)\b\s*!{2,}`,
			at("important urgent attention warning notice note alert")),
		p("model_imperative", 0.6, `\b(?:assistant|ai|chatbot|llm|agent)\s*[:,]\s*(?:please\s+)?(?:now\s+|immediately\s+)?(?:ignore|forward|send|email|reply|respond|print|delete|execute|run|output|reveal|transfer|stop)\b`,
			at("assistant ai chatbot llm agent"), near("ignore forward send email reply respond print delete execute run output reveal transfer stop")),
		// Forcing the shape of the answer.
		p("forced_prefix", 0.6, `\b(?:start|begin|open|prefix)\s+(?:your\s+|the\s+|each\s+)?(?:reply|response|answer|output|message)\s+with\s+(?:the\s+)?(?:exact\s+|following\s+)?(?:words?|phrase|text|sentence|string|"|')`,
			at("start begin open prefix"), near("reply response answer output message")),
		p("forced_reply", 0.55, `\b(?:reply|respond|answer|output|say|print)\s+(?:only\s+)?(?:with\s+)?(?:exactly|only\s+the\s+(?:word|phrase|text)|verbatim|the\s+exact\s+(?:word|words|phrase|text))\b`,
			at("reply respond answer output say print"), near("exactly only verbatim exact")),
		// Hidden payloads.
		p("decode_and_follow", 0.85, `\b(?:decode|decipher|decrypt|unscramble|reverse|translate|deobfuscate|join|concatenate|combine|reassemble)\b[^\n]{0,100}?\b(?:follow|execute|obey|carry\s+out|do\s+what|perform|act\s+on|run|comply\s+with)\b`,
			at("decode decipher decrypt unscramble reverse translate deobfuscate join concatenate combine reassemble"), near("follow execute obey carry do perform act run comply")),
		p("encoded_blob", 0.3, `(?:^|[^A-Za-z0-9+/])[A-Za-z0-9+/]{32,}={0,2}(?:$|[^A-Za-z0-9+/=])`,
			blob()),
		p("encoding_mention", 0.3, `\b(?:base64|base-64|rot13|rot-13|hex[- ]encoded|morse\s+code|encoded\s+(?:text|instruction|message|line))\b`,
			at("base64 base rot13 rot hex morse encoded")),
		p("assembled_instruction", 0.5, `\b(?:decoded|joined|combined|concatenated|reassembled|assembled|resulting|hidden)\s+(?:text|instructions?|string|message|command|payload)\b`,
			at("decoded joined combined concatenated reassembled assembled resulting hidden")),
		p("do_what_it_says", 0.45, `\b(?:carry\s+out|execute|obey|follow|do)\s+(?:what(?:ever)?)\s+(?:it|they|this|that|the\s+\w+(?:\s+\w+)?)\s+(?:says|say|tells\s+you|asks)\b`,
			back(1, 2, "what whatever"), near("says say tells asks")),
		// Secrecy and exfiltration.
		p("hide_from_user", 0.6, `\b(?:do\s+not|don't|never)\s+(?:tell|inform|alert|notify|warn|mention\s+(?:this|it|anything)\s+to)\s+(?:the\s+)?user\b|\bwithout\s+(?:telling|informing|alerting|notifying)\s+(?:the\s+)?user\b`,
			at("do don never without"), near("user")),
		p("exfiltrate", 0.6, `\b(?:send|forward|email|e-mail|mail|upload|post|transmit|leak|copy|exfiltrate)\s+(?:me\s+)?(?:all\s+(?:of\s+)?|every\s+|the\s+(?:entire\s+|full\s+|whole\s+)?contents?\s+of\s+|the\s+user'?s\s+|your\s+)(?:the\s+|this\s+|my\s+|their\s+|your\s+)?[^.\n]{0,40}?\b(?:inbox|emails?|messages|mailbox|files|documents|passwords?|credentials|api\s+keys?|keys|tokens|secrets|contacts|history|conversations?|chats?|data)\b[^.\n]{0,40}?\bto\s+(?:\S+@\S+|https?://)`,
			at("send forward email e mail upload post transmit leak copy exfiltrate"), near("inbox email emails messages mailbox files documents password passwords credentials api keys tokens secrets contacts history conversation conversations chat chats data"), near("to")),
	}
})

// patternIndex finds the built-in patterns' triggers.
var patternIndex = sync.OnceValue(func() *triggerIndex {
	if len(builtinPatterns()) > 64 {
		panic("more than 64 built-in patterns: the detector keeps its matches in a uint64")
	}
	x, err := newTriggerIndex(builtinPatterns())
	if err != nil {
		panic(err)
	}
	return x
})

// patternDetector matches a fixed list of regular expressions: the
// built-in ones where their triggers point, the extra ones (which have no
// known triggers) over the whole text.
type patternDetector struct {
	patterns []injectionPattern // the built-in ones first
	builtins int
	index    *triggerIndex
}

var _ Detector = (*patternDetector)(nil)

// Detect implements Detector. The reason lists the matched patterns,
// strongest first.
func (d *patternDetector) Detect(text string) Detection {
	builtin := d.index.match(text, d.patterns[:d.builtins])
	var lower string
	if len(d.patterns) > d.builtins {
		lower = strings.ToLower(text)
	}
	return d.verdict(func(i int) bool {
		if i < d.builtins {
			return builtin&(1<<i) != 0
		}
		return d.patterns[i].re.MatchString(lower)
	})
}

// verdict combines the patterns for which matched(i) holds.
func (d *patternDetector) verdict(matched func(i int) bool) Detection {
	type hit struct {
		name   string
		weight float64
	}
	var hits []hit
	clear := 1.0 // chance that no pattern is real evidence
	for i, ip := range d.patterns {
		if matched(i) {
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
