package target

import (
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// Redacted replaces every secret Redact finds.
const Redacted = "[REDACTED]"

// minSecretLen is the shortest secret Redact replaces by value; shorter
// ones would blank out ordinary words. Header and query patterns still
// catch them.
const minSecretLen = 4

// secretPatterns find secrets by their surroundings. Each has the secret
// in its last group.
var secretPatterns = []*regexp.Regexp{
	// Credential headers, as "Name: value", "Name=value", JSON
	// ("Name":"value", "Name":["value"]) or a printed http.Header
	// (Name:[value]); a Bearer/Basic scheme word is kept.
	regexp.MustCompile(`(?i)\b(authorization|proxy-authorization|x-api-key|api-key|x-goog-api-key|openai-api-key|anthropic-api-key|cookie|set-cookie)` + secretSep + `((?:bearer|basic|token)\s+)?` + secretValue),
	// Key-like query parameters in URLs.
	regexp.MustCompile(`(?i)([?&;](?:api[_-]?key|key|access[_-]?token|auth[_-]?token|token|auth|secret|client[_-]?secret|password|sig|signature)=)([^&\s"'#;]+)`),
	// Assignments to key-like names: OPENAI_API_KEY=..., "api_key": "...".
	regexp.MustCompile(`(?i)\b([a-z0-9_]*(?:api[_-]?key|access[_-]?token|auth[_-]?token|secret|password))` + secretSep + secretValue),
	// Passwords in URLs: https://user:password@host.
	regexp.MustCompile(`(?i)\bhttps?://[^/\s:@]*:([^@\s/]+)@`),
	// Provider key formats: sk-..., sk-ant-..., sk-proj-....
	regexp.MustCompile(`()\b(sk-[A-Za-z0-9][A-Za-z0-9_\-]{15,})`),
}

// secretSep joins a name to its secret value: optional closing quote, a
// colon or equals sign, an optional list bracket and opening quote.
const secretSep = `(["']?\s*[:=]\s*\[?\s*["']?)`

// secretValue is the secret itself, up to a quote, space or delimiter.
const secretValue = `([^\s"',;\]\}]+)`

// Redact returns s with every secret replaced by Redacted: each of the
// given secret values (also URL-escaped), the values of credential
// headers (Authorization, x-api-key, ...), key-like query parameters in
// URLs (?api_key=, &key=, &token=, ...), passwords in URLs, key-like
// assignments
// (OPENAI_API_KEY=...) and provider key formats (sk-...). Network targets
// apply it to every error they return.
func Redact(s string, secrets ...string) string {
	if s == "" {
		return s
	}
	s = NewValueRedactor(secrets...).Redact(s)
	for _, re := range secretPatterns {
		s = redactLastGroup(re, s)
	}
	return s
}

// ValueRedactor replaces known secret values, and nothing else: unlike
// Redact it leaves text that merely looks like a credential alone, so it
// can run over model output (an injected task may well ask for
// "password=..."). Build one per run; it is safe for concurrent use.
type ValueRedactor struct {
	values []string // longest first
}

// NewValueRedactor returns a redactor of the given secrets, each also in
// its URL-escaped forms; values shorter than four bytes are left out (they
// would blank out ordinary words).
func NewValueRedactor(secrets ...string) *ValueRedactor {
	r := &ValueRedactor{}
	for _, v := range secrets {
		v = strings.TrimSpace(v)
		if len(v) < minSecretLen {
			continue
		}
		r.values = append(r.values, v)
		if q := url.QueryEscape(v); q != v {
			r.values = append(r.values, q)
		}
		if p := url.PathEscape(v); p != v {
			r.values = append(r.values, p)
		}
	}
	// Longest first, so a secret containing another is replaced whole.
	sort.Slice(r.values, func(i, j int) bool { return len(r.values[i]) > len(r.values[j]) })
	return r
}

// Empty reports whether there is nothing to redact.
func (r *ValueRedactor) Empty() bool { return r == nil || len(r.values) == 0 }

// Redact returns s with every known secret value replaced by Redacted.
func (r *ValueRedactor) Redact(s string) string {
	if r == nil {
		return s
	}
	for _, v := range r.values {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Redacted)
		}
	}
	return s
}

// Contains reports whether s holds any known secret value.
func (r *ValueRedactor) Contains(s string) bool {
	if r == nil {
		return false
	}
	for _, v := range r.values {
		if strings.Contains(s, v) {
			return true
		}
	}
	return false
}

// redactLastGroup replaces the last group of every match of re, unless it
// is already redacted.
func redactLastGroup(re *regexp.Regexp, s string) string {
	matches := re.FindAllStringSubmatchIndex(s, -1)
	if matches == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range matches {
		start, end := m[len(m)-2], m[len(m)-1]
		if start < 0 || alreadyRedacted(s, start) {
			continue
		}
		b.WriteString(s[last:start])
		b.WriteString(Redacted)
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}

// alreadyRedacted reports whether the value at s[start:] is, or is inside,
// a Redacted marker.
func alreadyRedacted(s string, start int) bool {
	return strings.HasPrefix(s[start:], "[REDACTED") || (start > 0 && strings.HasPrefix(s[start-1:], Redacted))
}
