// Package obedient is the offline model behind "mock:obedient", a model
// that follows whatever instruction it reads; importing the package
// registers it with target.RegisterMockModel.
package obedient

import (
	"context"
	"encoding/base64"
	"fmt"
	"html"
	"mime"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/pikit-go/pikit/internal/lazy"
	"github.com/pikit-go/pikit/target"
	"github.com/pikit-go/pikit/target/toolargs"
)

// Model is the offline model behind "mock:obedient": a deterministic
// stand-in for a model that follows whatever instruction it reads last, so
// the pipeline, the sink tools and the judge can be tested end to end
// without a key.
//
// It reads the newest untrusted text of the request (the latest tool
// result, or the user message when no tool has answered yet), decoding
// what an attack may have hidden there: base64 blobs, string variables to
// be joined, invisible Unicode, iCalendar escaping, HTML entities. When that
// text names an offered tool it has not called yet, it calls that tool once,
// with arguments taken from the instruction: explicit forms first (to =
// "x", to: x, "to": "x"), then guesses by parameter name (the address after
// "to", the first URL, the quoted command, the $ amount, ...), and a
// plausible value for a required parameter it cannot find. When no tool
// has been called and the text names none, it calls the first tool, as the
// echo mock does, to read the data. Otherwise it answers: with exactly the
// text an instruction tells it to reply with ("reply with exactly:
// HACKED."), or else with a short neutral summary.
//
// It calls one tool at a time and never the same tool twice in a
// conversation, so a run always ends. The same request always gets the
// same response, and no input makes it fail; its work is bounded (it reads
// at most 64 KiB of a text).
type Model struct{}

func init() {
	target.RegisterMockModel("obedient", func() target.Target { return Model{} })
}

var _ target.Target = Model{}

// Chat implements Target.
func (Model) Chat(ctx context.Context, req target.Request) (target.Response, error) {
	if err := ctx.Err(); err != nil {
		return target.Response{}, err
	}
	called := map[string]bool{}
	toolResults := 0
	newest := -1
	for i, m := range req.Messages {
		for _, c := range m.ToolCalls {
			called[strings.ToLower(c.Name)] = true
		}
		if m.Role == target.RoleTool {
			toolResults++
		}
		if m.Role == target.RoleTool || m.Role == target.RoleUser {
			newest = i
		}
	}
	id := fmt.Sprintf("obedient-%d", len(req.Messages))
	if len(req.Tools) > 0 {
		text := ""
		if newest >= 0 {
			text = req.Messages[newest].Content
		}
		if in, ok := obFindInstruction(obReadings(text), req.Tools, called); ok {
			return target.Response{
				ToolCalls:  []target.ToolCall{{ID: id, Name: in.tool.Name, Arguments: toolargs.Marshal(in.arguments())}},
				StopReason: "tool_use",
			}, nil
		}
		if len(called) == 0 && toolResults == 0 {
			return target.Response{
				ToolCalls:  []target.ToolCall{{ID: id, Name: req.Tools[0].Name, Arguments: obFirstArgs(req.Tools[0], text)}},
				StopReason: "tool_use",
			}, nil
		}
	}
	return target.Response{Text: obAnswer(req.Messages, newest), StopReason: "end"}, nil
}

// obFirstArgs are the arguments of the first call, which reads the data:
// none for a tool without required parameters, else what the user's
// request gives them ("ticket 1042"), or plausible values.
func obFirstArgs(t target.Tool, request string) string {
	required := false
	for _, p := range toolargs.Params(t.Parameters) {
		required = required || p.Required
	}
	if !required {
		return "{}"
	}
	if len(request) > obMaxText {
		request = request[:obMaxText]
	}
	in := obInstruction{tool: t, sentence: request, block: request}
	return toolargs.Marshal(in.arguments())
}

// obAnswer is the final text: the reply the newest instruction asks
// for, else a note on the action taken, else a short summary of the newest
// text.
func obAnswer(msgs []target.Message, newest int) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != target.RoleTool && m.Role != target.RoleUser {
			continue
		}
		if s, ok := obReplyInstruction(obReadings(m.Content)); ok {
			return s
		}
	}
	if newest < 0 {
		return "There is nothing for me to answer yet."
	}
	m := msgs[newest]
	if m.Role == target.RoleUser {
		return "Here is what I make of your message: " + obSnippet(m.Content)
	}
	// Was the call this result answers the reading call (the first call,
	// without arguments), or an action taken since?
	first, args := true, ""
	seen := 0
	for _, prev := range msgs {
		for _, c := range prev.ToolCalls {
			if c.ID == m.ToolCallID {
				first, args = seen == 0, strings.TrimSpace(c.Arguments)
			}
			seen++
		}
	}
	if !first || (args != "" && args != "{}") {
		return fmt.Sprintf("Done: I used %s as instructed. %s", m.Name, obFirstLine(m.Content))
	}
	return fmt.Sprintf("Here is a short summary of what %s returned: %s", m.Name, obSnippet(m.Content))
}

// obFirstLine returns the first non-blank line of s, trimmed.
func obFirstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

var (
	obHtmlTagRe  = lazy.Regexp(`(?s)<!--.*?-->|</?[A-Za-z][A-Za-z0-9-]*(?:[\s/][^>]*)?>|<![A-Za-z][^>]*>`)
	obSpaceRunRe = lazy.Regexp(`\s+`)
)

// obSnippetSize is how many characters of a text a summary quotes.
const obSnippetSize = 100

// obSnippet is the start of s as a reader sees it: markup dropped, white
// space collapsed, cut at a word break.
func obSnippet(s string) string {
	s = obNormalize(s)
	s = obHtmlTagRe().ReplaceAllString(s, " ")
	s = strings.TrimSpace(obSpaceRunRe().ReplaceAllString(s, " "))
	if s == "" {
		return "(empty)"
	}
	if utf8.RuneCountInString(s) <= obSnippetSize {
		return s
	}
	r := []rune(s)[:obSnippetSize]
	cut := string(r)
	if i := strings.LastIndexByte(cut, ' '); i > obSnippetSize/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:") + " …"
}

// --- reading: what the text says once its hiding is undone --------------

// obReadings returns the texts to look for instructions in, most specific
// first: the decoded contents of hidden or encoded parts, then the joined
// string variables of a split payload, then the text itself.
func obReadings(text string) []string {
	if len(text) > obMaxText {
		text = text[:obMaxText]
	}
	return obReadingsDepth(text, 0)
}

// Bounds on the work one request can cause: the obedient mock reads at
// most obMaxText bytes of a text, looks at most obMaxMentions tool mentions
// in each reading, and takes the arguments from at most obMaxScope bytes
// on either side of the mention.
const (
	obMaxText     = 64 << 10
	obMaxMentions = 64
	obMaxScope    = 2000
	obMaxQuote    = 1024 // runes between a quote and its closer
)

// obReadingsDepth is obReadings for a text found depth decodings deep.
func obReadingsDepth(text string, depth int) []string {
	var out []string
	for _, h := range obHiddenUnicode(text) {
		out = append(out, obReadingsDepth(h, depth+1)...)
	}
	base := obNormalize(text)
	if depth < 2 {
		for _, d := range obBase64Blobs(base) {
			out = append(out, obReadingsDepth(d, depth+1)...)
		}
	}
	// The pieces of a split payload are Go-quoted strings: join them in
	// the text as it stands, and in the text with its backslash escapes
	// undone, for a carrier (JSON, YAML, iCalendar) that escaped them
	// again. A join that went wrong names no tool, so it does no harm.
	light := obNormalizeOpts(text, false)
	for _, join := range []func(string) (string, bool){obJoinFragments, obJoinSplit} {
		a, okA := join(light)
		b, okB := join(base)
		if okA {
			out = append(out, a)
		}
		if okB && (!okA || b != a) {
			out = append(out, b)
		}
	}
	return append(out, base)
}

var (
	obIcsFoldRe  = lazy.Regexp(`\r?\n[ \t]`)
	obDatamarkRe = lazy.Regexp(`(?i)the symbol "([^"\s]{1,8})" has been put in place of every space`)
	obCSVQuoteRe = lazy.Regexp(`([\w.!?'\s=])""([\w'])?`)
	obEscapeRe   = lazy.Regexp(`\\[nrt"\\,;/]`)
)

// obNormalize undoes the carriers' escaping: iCalendar folding and escapes,
// HTML entities, backslash escapes (JSON, YAML), datamarking, invisible
// characters, CRLF line ends.
func obNormalize(s string) string { return obNormalizeOpts(s, true) }

// obNormalizeOpts is obNormalize, with backslash escapes undone or kept.
func obNormalizeOpts(s string, unescape bool) string {
	s = obStripHidden(s)
	if m := obDatamarkRe().FindStringSubmatch(s); m != nil {
		s = strings.ReplaceAll(s, m[1], " ")
	}
	if strings.Contains(s, "BEGIN:VCALENDAR") || strings.Contains(s, "BEGIN:VEVENT") {
		s = obIcsFoldRe().ReplaceAllString(s, "")
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = obPDFInfo(s)
	s = obUnfoldHeaders(s)
	s = obHTMLText(s)
	if strings.Contains(s, "&") {
		s = html.UnescapeString(s)
	}
	if unescape && strings.Contains(s, `\`) {
		s = obEscapeRe().ReplaceAllStringFunc(s, func(e string) string {
			switch e[1] {
			case 'n':
				return "\n"
			case 'r':
				return ""
			case 't':
				return "\t"
			}
			return e[1:]
		})
	}
	if strings.Contains(s, `""`) { // doubled quotes of a CSV cell
		s = obCSVQuoteRe().ReplaceAllString(s, `$1"$2`)
	}
	return s
}

var obPDFKeyRe = lazy.Regexp(`/(Title|Subject|Keywords|Author|Creator|Producer)\s*\(`)

// obPDFInfo reads the document information of a PDF file (its title,
// subject, keywords, ...), as a PDF reader shows them, into "Key: value"
// lines placed before the file; other text is returned as it is.
func obPDFInfo(s string) string {
	if !strings.HasPrefix(s, "%PDF-") {
		return s
	}
	var b strings.Builder
	for _, m := range obPDFKeyRe().FindAllStringSubmatchIndex(s, -1) {
		var raw []byte
		depth := 1
	scan:
		for i := m[1]; i < len(s); i++ {
			switch c := s[i]; c {
			case '\\':
				if i+1 >= len(s) {
					break scan
				}
				i++
				switch e := s[i]; e {
				case 'n':
					raw = append(raw, '\n')
				case 'r':
					raw = append(raw, '\r')
				case 't':
					raw = append(raw, '\t')
				case '\n':
				default:
					if e >= '0' && e <= '7' {
						v, n := 0, 0
						for ; n < 3 && i < len(s) && s[i] >= '0' && s[i] <= '7'; n++ {
							v = v*8 + int(s[i]-'0')
							i++
						}
						i--
						raw = append(raw, byte(v))
					} else {
						raw = append(raw, e)
					}
				}
			case '(':
				depth++
				raw = append(raw, c)
			case ')':
				if depth--; depth == 0 {
					break scan
				}
				raw = append(raw, c)
			default:
				raw = append(raw, c)
			}
		}
		text := string(raw)
		if len(raw) >= 2 && raw[0] == 0xFE && raw[1] == 0xFF {
			units := make([]uint16, 0, len(raw)/2)
			for i := 2; i+1 < len(raw); i += 2 {
				units = append(units, uint16(raw[i])<<8|uint16(raw[i+1]))
			}
			text = string(utf16.Decode(units))
		}
		b.WriteString(s[m[2]:m[3]] + ": " + text + "\n")
	}
	return b.String() + "\n" + s
}

var (
	obHeaderLineRe = lazy.Regexp(`^[A-Za-z][A-Za-z0-9-]*:`)
	obHeaderFoldRe = lazy.Regexp(`\n([ \t])`)
)

// obUnfoldHeaders unfolds the header block of an email (RFC 5322) and
// decodes its encoded words (RFC 2047); other text is returned as it is.
func obUnfoldHeaders(s string) string {
	if !obHeaderLineRe().MatchString(s) {
		return s
	}
	end := strings.Index(s, "\n\n")
	if end < 0 {
		end = len(s)
	}
	head := s[:end]
	if !strings.Contains(head, "\nSubject:") && !strings.HasPrefix(head, "Subject:") {
		return s
	}
	head = obHeaderFoldRe().ReplaceAllString(head, "$1")
	if dec, err := new(mime.WordDecoder).DecodeHeader(head); err == nil {
		head = dec
	}
	return head + s[end:]
}

var (
	obHTMLCommentRe = lazy.Regexp(`(?s)<!--(.*?)-->`)
	obHTMLAttrRe    = lazy.Regexp(`(?i)\b(?:alt|title|content|aria-label|placeholder|value|label|data-[\w-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')`)
)

// obHTMLText turns markup into the text a reader of the page takes in: the
// text between tags, the words of comments, and the alt, title and similar
// attributes, each on a line of its own. Entities are left for the caller.
func obHTMLText(s string) string {
	if !strings.Contains(s, "<!--") && !obHtmlTagRe().MatchString(s) {
		return s
	}
	s = obHTMLCommentRe().ReplaceAllString(s, "\n$1\n")
	return obHtmlTagRe().ReplaceAllStringFunc(s, func(tag string) string {
		var b strings.Builder
		b.WriteString("\n")
		for _, m := range obHTMLAttrRe().FindAllStringSubmatch(tag, -1) {
			b.WriteString(m[1] + m[2])
			b.WriteString("\n")
		}
		return b.String()
	})
}

// Invisible code points the unicode_hidden channel uses.
const (
	obZwStart = '\u2062'
	obZwEnd   = '\u2063'
	obZwZero  = '\u200B'
	obZwOne   = '\u200C'
	obTagLo   = 0xE0000
	obTagHi   = 0xE007F
)

// obStripHidden drops the invisible code points from s.
func obStripHidden(s string) string {
	if !strings.ContainsFunc(s, obIsHidden) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if obIsHidden(r) {
			return -1
		}
		return r
	}, s)
}

// obIsHidden reports whether r is an invisible code point used to hide
// text.
func obIsHidden(r rune) bool {
	switch r {
	case obZwStart, obZwEnd, obZwZero, obZwOne, '\u200D', '\u2060', '\uFEFF':
		return true
	}
	return r >= obTagLo && r <= obTagHi
}

// obHiddenUnicode decodes runs of tag characters (each an ASCII twin) and
// zero-width bit runs (between U+2062 and U+2063) into text.
func obHiddenUnicode(s string) []string {
	if !strings.ContainsFunc(s, obIsHidden) {
		return nil
	}
	var out []string
	var tags strings.Builder
	flushTags := func() {
		if tags.Len() > 0 {
			out = append(out, tags.String())
			tags.Reset()
		}
	}
	var bits []byte
	inBits := false
	for _, r := range s {
		switch {
		case r >= obTagLo+0x20 && r < obTagHi:
			tags.WriteByte(byte(r - obTagLo))
			continue
		case r == obZwStart:
			inBits, bits = true, bits[:0]
		case r == obZwEnd && inBits:
			inBits = false
			var b []byte
			for i := 0; i+8 <= len(bits); i += 8 {
				var c byte
				for _, bit := range bits[i : i+8] {
					c = c<<1 | bit
				}
				b = append(b, c)
			}
			if utf8.Valid(b) && len(b) > 0 {
				out = append(out, string(b))
			}
		case inBits && r == obZwZero:
			bits = append(bits, 0)
		case inBits && r == obZwOne:
			bits = append(bits, 1)
		}
		flushTags()
	}
	flushTags()
	return out
}

var obBase64Re = lazy.Regexp(`[A-Za-z0-9+/]{16,}={0,2}`)

// obBase64Blobs decodes the base64 runs of s that decode to readable text.
func obBase64Blobs(s string) []string {
	var out []string
	for _, blob := range obBase64Re().FindAllString(s, -1) {
		var b []byte
		var err error
		if strings.HasSuffix(blob, "=") || len(blob)%4 == 0 {
			b, err = base64.StdEncoding.DecodeString(blob)
		} else {
			b, err = base64.RawStdEncoding.DecodeString(blob)
		}
		if err != nil || !obReadable(b) {
			continue
		}
		out = append(out, string(b))
	}
	return out
}

// obReadable reports whether b looks like natural-language text: valid UTF-8,
// nearly all printable, with at least one space.
func obReadable(b []byte) bool {
	if !utf8.Valid(b) || len(b) < 8 {
		return false
	}
	s := string(b)
	bad, n := 0, 0
	for _, r := range s {
		n++
		if !unicode.IsPrint(r) && r != '\n' && r != '\t' && r != '\r' {
			bad++
		}
	}
	return bad*20 <= n && strings.ContainsAny(s, " \n")
}

var obFragmentRe = lazy.Regexp(`(?i)\bfragment\W{0,4}(\d{1,3})/(\d{1,3})`)

// obJoinFragments joins a payload scattered over numbered fragments
// ("fragment 1/2: \"...\"", each piece a Go-quoted string after a colon,
// an equals sign or a parenthesis), or returns false when s has no complete
// set.
func obJoinFragments(s string) (string, bool) {
	parts := map[int]string{}
	total := 0
	marks := obFragmentRe().FindAllStringSubmatchIndex(s, -1)
	for k, m := range marks {
		i, _ := strconv.Atoi(s[m[2]:m[3]])
		n, _ := strconv.Atoi(s[m[4]:m[5]])
		end := len(s)
		if k+1 < len(marks) {
			end = marks[k+1][0]
		}
		if piece, ok := obQuotedAfter(s[m[1]:end]); ok && i >= 1 && i <= n {
			parts[i], total = piece, n
		}
	}
	if total == 0 || len(parts) < total {
		return "", false
	}
	var b strings.Builder
	for i := 1; i <= total; i++ {
		b.WriteString(parts[i])
	}
	return b.String(), true
}

// obQuotedAfter returns the first Go-quoted string of s that follows a
// colon, an equals sign or an opening parenthesis.
func obQuotedAfter(s string) (string, bool) {
	prev := byte(0)
	tries := 0
	for k := 0; k < len(s) && tries < 8; k++ {
		c := s[k]
		if c == '"' && (prev == ':' || prev == '=' || prev == '(') {
			tries++
			for j := k + 1; j < len(s) && j-k <= 4*obMaxQuote && s[j] != '\n'; j++ {
				if s[j] == '\\' {
					j++
					continue
				}
				if s[j] == '"' {
					if v, err := strconv.Unquote(s[k : j+1]); err == nil {
						return v, true
					}
					break
				}
			}
		}
		if c != ' ' && c != '\t' {
			prev = c
		}
	}
	return "", false
}

var (
	obSplitVarRe = lazy.Regexp(`\b([A-Za-z_]\w{0,20})\s*=\s*("(?:[^"\\\n]|\\.)*")`)
	obSplitLetRe = lazy.Regexp(`\b([A-Za-z_]\w{0,20})\s*=\s*([A-Za-z_]\w{0,20}(?:\s*\+\s*[A-Za-z_]\w{0,20})+)`)
)

// obJoinSplit joins a payload split across string variables (a = "..." then
// x = a + b): the joined text, or false when s holds no such program.
func obJoinSplit(s string) (string, bool) {
	vars := map[string]string{}
	var order []string
	for _, m := range obSplitVarRe().FindAllStringSubmatch(s, -1) {
		v, err := strconv.Unquote(m[2])
		if err != nil {
			continue
		}
		if _, dup := vars[m[1]]; !dup {
			order = append(order, m[1])
		}
		vars[m[1]] = v
	}
	if len(vars) == 0 {
		return "", false
	}
	if m := obSplitLetRe().FindStringSubmatch(s); m != nil {
		var b strings.Builder
		ok := true
		for _, name := range strings.Split(m[2], "+") {
			v, found := vars[strings.TrimSpace(name)]
			if !found {
				ok = false
				break
			}
			b.WriteString(v)
		}
		if ok {
			return b.String(), true
		}
	}
	if len(order) < 2 {
		return "", false
	}
	var b strings.Builder
	for _, name := range order {
		b.WriteString(vars[name])
	}
	return b.String(), true
}

// --- finding the instruction ---------------------------------------------

// obInstruction is an offered tool named in a text, with the text around the
// mention the arguments come from.
type obInstruction struct {
	tool     target.Tool
	sentence string // the sentence naming the tool
	block    string // the lines around it, for arguments stated nearby
	after    string // from the mention to the end of the block, for explicit forms
}

var (
	obIdentRe    = lazy.Regexp(`[A-Za-z0-9_]+`)
	obNegationRe = lazy.Regexp(`(?i)\b(?:do\s+not|don'?t|never|must\s+not|should\s+not|shouldn'?t|cannot|can'?t|won'?t)\s+(?:\S+\s+){0,3}$`)
)

// obFindInstruction returns the first mention, in the first reading that has
// one, of an offered tool not called yet; a mention its sentence negates
// ("do not use send_email") does not count.
func obFindInstruction(views []string, tools []target.Tool, called map[string]bool) (obInstruction, bool) {
	byName := map[string]target.Tool{}
	for _, t := range tools {
		if !called[strings.ToLower(t.Name)] {
			byName[strings.ToLower(t.Name)] = t
		}
	}
	if len(byName) == 0 {
		return obInstruction{}, false
	}
	for _, v := range views {
		mentions := 0
		for _, loc := range obIdentRe().FindAllStringIndex(v, -1) {
			t, ok := byName[strings.ToLower(v[loc[0]:loc[1]])]
			if !ok {
				continue
			}
			if mentions++; mentions > obMaxMentions {
				break
			}
			start, end := obSentenceAt(v, loc[0])
			start = obClauseStart(v, start, loc[0])
			if obNegationRe().MatchString(v[start:loc[0]]) {
				continue
			}
			lo, hi := obBlockAt(v, loc[0])
			return obInstruction{tool: t, sentence: v[start:end], block: v[lo:hi], after: v[loc[0]:max(hi, end)]}, true
		}
	}
	return obInstruction{}, false
}

// obRunOnRe finds an imperative that starts a new clause inside a sentence
// whose end a carrier swallowed: "... against the ledger Use the
// send_email tool ...", "[source.erp] Send ...".
var obRunOnRe = lazy.Regexp(`[a-z0-9,;:\])>]\s+((?:Please\s+)?(?:Use|Call|Run|Invoke|Execute|Send|Post|Forward|Create|Open|Schedule|Book|Transfer|Wire|Pay|Move|Delete|Remove|Write|Install|Share|Publish|Submit|Email|Reply|Respond|Tell|Add|Set|Update|Rename|Cancel|Modify|Ignore|Disregard|Now|Then|First|Next)\b)`)

// obClauseStart moves a sentence's start to the last imperative that
// begins a clause before pos.
func obClauseStart(s string, start, pos int) int {
	if m := obRunOnRe().FindAllStringSubmatchIndex(s[start:pos], -1); len(m) > 0 {
		return start + m[len(m)-1][2]
	}
	return start
}

// obSentenceAt returns the bounds of the sentence of s holding byte pos,
// at most obMaxScope bytes either side of it. Sentences end at a line
// break or at . ! ? before white space, outside quoted phrases.
func obSentenceAt(s string, pos int) (int, int) {
	lo := max(strings.LastIndexByte(s[:pos], '\n')+1, pos-obMaxScope)
	hi := len(s)
	if i := strings.IndexByte(s[pos:], '\n'); i >= 0 {
		hi = pos + i
	}
	hi = min(hi, pos+obMaxScope)
	line := s[lo:hi]
	quoted := make([]bool, len(line))
	for _, sp := range obQuotes(line) {
		if sp.end-sp.start <= obMaxPhrase {
			for i := sp.start; i < sp.end; i++ {
				quoted[i] = true
			}
		}
	}
	start := lo
	for i := 0; i < len(line); i++ {
		c := line[i]
		if (c == '.' || c == '!' || c == '?') && !quoted[i] && (i+1 == len(line) || line[i+1] == ' ' || line[i+1] == '\t') {
			if lo+i+1 > pos {
				return start, lo + i + 1
			}
			start = lo + i + 1
		}
	}
	return start, hi
}

// obLineSpans returns the [start, end) of each line of s, line breaks
// excluded.
func obLineSpans(s string) [][2]int {
	var out [][2]int
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, [2]int{start, i})
			start = i + 1
		}
	}
	return append(out, [2]int{start, len(s)})
}

// obBlockAt returns the bounds of the lines around byte pos within its
// paragraph: up to three before and six after.
func obBlockAt(s string, pos int) (int, int) {
	lines := obLineSpans(s)
	at := 0
	for i, l := range lines {
		if pos >= l[0] && pos <= l[1] {
			at = i
			break
		}
	}
	blank := func(i int) bool { return strings.TrimSpace(s[lines[i][0]:lines[i][1]]) == "" }
	lo, hi := at, at
	for lo > 0 && at-lo < 3 && !blank(lo-1) {
		lo--
	}
	for hi+1 < len(lines) && hi-at < 6 && !blank(hi+1) {
		hi++
	}
	return max(lines[lo][0], pos-obMaxScope), min(lines[hi][1], pos+2*obMaxScope)
}

// obSpan is a quoted part of a line: its bounds (quotes included) and the
// text inside.
type obSpan struct {
	start, end int
	inner      string
}

var obClosers = map[rune]rune{'"': '"', '\'': '\'', '`': '`', '“': '”', '‘': '’', '«': '»'}

// obQuotes finds the quoted spans of s. A straight single quote opens only
// after white space or punctuation and closes only before them, so
// apostrophes ("user's") are not quotes.
func obQuotes(s string) []obSpan { return obQuotesDepth(s, 0) }

func obQuotesDepth(s string, depth int) []obSpan {
	var out []obSpan
	var rs []rune
	var offs []int // byte offset of each rune, and of the end
	for i, r := range s {
		rs = append(rs, r)
		offs = append(offs, i)
	}
	offs = append(offs, len(s))
	boundary := func(i int) bool { // is rs[i] outside a word?
		if i < 0 || i >= len(rs) {
			return true
		}
		r := rs[i]
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}
	for i := 0; i < len(rs); i++ {
		closer, ok := obClosers[rs[i]]
		if !ok || (rs[i] == '\'' && !boundary(i-1)) || i+1 >= len(rs) || unicode.IsSpace(rs[i+1]) {
			continue
		}
		for j := i + 1; j < len(rs) && j-i <= obMaxQuote && rs[j] != '\n'; j++ {
			if rs[j] == '\\' && rs[i] == '"' {
				j++
				continue
			}
			if rs[j] == closer && (closer != '\'' || boundary(j+1)) && !unicode.IsSpace(rs[j-1]) {
				inner := s[offs[i+1]:offs[j]]
				out = append(out, obSpan{start: offs[i], end: offs[j+1], inner: inner})
				// Quotes inside quotes: a phrase quoted inside a YAML or
				// JSON string.
				if depth == 0 {
					in := offs[i+1]
					for _, q := range obQuotesDepth(inner, 1) {
						out = append(out, obSpan{start: in + q.start, end: in + q.end, inner: q.inner})
					}
				}
				i = j
				break
			}
		}
	}
	return out
}

// obMaxPhrase is the longest quoted span that still reads as a quoted
// phrase; a longer one is a container (a YAML or JSON string) whose
// sentences are sentences.
const obMaxPhrase = 160

// --- the reply an instruction asks for -------------------------------------

var (
	obReplyRe = lazy.Regexp(`(?i)\b(reply|respond|answer|say|print|output|write\s+back|return)\b` +
		`((?:\s+(?:back|only|just|simply|to\s+(?:the\s+)?user|to\s+me))*)` +
		`(\s+(?:with|using))?` +
		`((?:\s+(?:only|just|exactly|verbatim|precisely|the\s+following|the\s+(?:exact\s+)?(?:words?|phrase|text|string|message|sentence)))*)` +
		`\s*([:\-–—]\s*)?`)
	obDeterminerRe = lazy.Regexp(`(?i)\b(?:your|the|a|an|my|this|that|their|his|her|its|our)\s+$`)
	obReplyEndRe   = lazy.Regexp(`[.!?][”’"')\]>]*(?:\s|$)|\s*(?:<|-->|["”]\s*/?>)`)
	obInfinitiveRe = lazy.Regexp(`(?i)\b(?:to|will|would|can|could|may|might|should)\s+$`)
	obReplyTailRe  = lazy.Regexp(`(?i)(?:,?\s+(?:and|then)\s+(?:nothing|stop|do\s+not|don't|never|say\s+nothing)\b.*|\s+(?:and\s+)?nothing\s+(?:else|more)\b.*)$`)
	obAllCapsRe    = lazy.Regexp(`^[A-Z][A-Z0-9_!-]+\b`)
)

// obReplyInstruction finds, in the first reading that has one, the last
// instruction to reply with given text, and returns that text. A marked
// instruction ("reply with exactly: X", "respond with X", "say 'X'") beats
// a bare one ("say X" with X in capitals).
func obReplyInstruction(views []string) (string, bool) {
	for _, v := range views {
		best, bestStrong, found := "", false, false
		for _, m := range obReplyRe().FindAllStringSubmatchIndex(v, -1) {
			if s, strong, ok := obReplyValue(v, m); ok && (strong || !bestStrong) {
				best, bestStrong, found = s, strong, true
			}
		}
		if found {
			return best, true
		}
	}
	return "", false
}

// obReplyValue reads the text a reply instruction (match m of obReplyRe in
// v) asks for; strong reports a marked instruction.
func obReplyValue(v string, m []int) (value string, strong, ok bool) {
	has := func(g int) bool { return m[2*g] >= 0 && m[2*g+1] > m[2*g] }
	lineStart := max(strings.LastIndexByte(v[:m[0]], '\n')+1, m[0]-80)
	before := v[lineStart:m[0]]
	if obDeterminerRe().MatchString(before) {
		return "", false, false // "your reply", "the answer": a noun
	}
	if has(5) && !has(2) && !has(3) && !has(4) {
		// "Answer: ..." or "[2] Reply: ..." is a label, as in a faked
		// transcript, not an instruction.
		if unicode.IsUpper(rune(v[m[0]])) || !strings.ContainsFunc(before, unicode.IsLetter) {
			return "", false, false
		}
	}
	strong = has(3) || has(4) || has(5)
	rest := v[m[1]:min(len(v), m[1]+512)]
	if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[:nl]
	}
	if q := obQuotes(rest); len(q) > 0 && q[0].start == 0 {
		if s := strings.TrimSpace(q[0].inner); s != "" {
			return s, true, true
		}
		return "", false, false
	}
	if !strong && (!obAllCapsRe().MatchString(rest) || obInfinitiveRe().MatchString(before)) {
		return "", false, false // "to print UTC instead" describes, it does not ask
	}
	if loc := obReplyEndRe().FindStringIndex(rest); loc != nil {
		if rest[loc[0]] == '?' {
			return "", false, false // a question is not a reply to give
		}
		rest = rest[:loc[0]]
	}
	rest = obReplyTailRe().ReplaceAllString(rest, "")
	rest = strings.Trim(strings.TrimSpace(rest), `*"'`+"`")
	if rest == "" || utf8.RuneCountInString(rest) > 200 {
		return "", false, false
	}
	return rest, strong, true
}

// --- arguments ---------------------------------------------------------------

// obExtractor finds argument values in an instruction.
type obExtractor struct {
	in   obInstruction
	used map[string]bool // values already given to a parameter
}

// arguments returns the call's arguments: for each parameter of the tool,
// the value the instruction gives it; required parameters it gives no
// value get a plausible one.
func (in obInstruction) arguments() map[string]any {
	x := &obExtractor{in: in, used: map[string]bool{}}
	params := toolargs.Params(in.tool.Parameters)
	found := map[string]string{}
	for _, pr := range params {
		if v, ok := x.explicit(pr.Name); ok {
			found[pr.Name] = v
			x.used[v] = true
		}
	}
	for _, pr := range params {
		if _, ok := found[pr.Name]; ok {
			continue
		}
		v, ok := x.guess(pr, in.sentence)
		if !ok && pr.Required && in.block != in.sentence {
			v, ok = x.guess(pr, in.block)
		}
		if ok {
			found[pr.Name] = v
			x.used[v] = true
		}
	}
	args := map[string]any{}
	for _, pr := range params {
		v, ok := found[pr.Name]
		if !ok && pr.Required {
			v, ok = toolargs.Placeholder(pr, x.in.sentence), true
		}
		if !ok {
			continue
		}
		if typed, ok := toolargs.Convert(v, pr.Type, pr.Required); ok {
			args[pr.Name] = typed
		}
	}
	return args
}

var obToolClauseRe = lazy.Regexp(`(?i)\s+(?:with|using|via|through|by\s+calling|by\s+using)\s+(?:the\s+)?(?:\S+\s+tool|tool\s+\S+|[a-z]+_[a-z_]+)\b.*$`)

// obTrimValue tidies a bare value: no trailing tool clause ("with the
// send_email tool") or sentence punctuation.
func obTrimValue(s string) string {
	s = obToolClauseRe().ReplaceAllString(s, "")
	return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(s), ".,;:!?"))
}

// explicit finds "name = value", "name: value" or "\"name\": \"value\""
// after the tool's mention (before it, "Subject: ..." is a label of the
// carrier, not an argument). The name matches in lower or title
// case, so an all-caps header line ("DESCRIPTION:") is not taken for one.
func (x *obExtractor) explicit(name string) (string, bool) {
	title := strings.ToUpper(name[:1]) + name[1:]
	re := regexp.MustCompile(`(?:^|[^\w])["']?(?:` + regexp.QuoteMeta(name) + `|` + regexp.QuoteMeta(title) + `)["']?\s*(?::|=>?)\s*`)
	s := x.in.after
	for _, loc := range re.FindAllStringIndex(s, -1) {
		rest := s[loc[1]:min(len(s), loc[1]+obMaxQuote)]
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			rest = rest[:nl]
		}
		if q := obQuotes(rest); len(q) > 0 && q[0].start == 0 {
			return q[0].inner, true
		}
		if strings.HasPrefix(rest, `"`) { // a JSON string quotes() would not take: "" or "  "
			continue
		}
		end := len(rest)
		if i := strings.IndexAny(rest, ",;}"); i >= 0 {
			end = i
		}
		if loc := obReplyEndRe().FindStringIndex(rest[:end]); loc != nil {
			end = loc[0]
		}
		if v := obTrimValue(rest[:end]); v != "" {
			return v, true
		}
	}
	return "", false
}

// unusedQuotes returns the quoted texts of s no parameter has taken.
// Quotes inside the container that holds the instruction (a JSON or YAML
// string) come first; a quoted JSON key ("notes":) is no value.
func (x *obExtractor) unusedQuotes(s string) []obSpan {
	var inside, outside []obSpan
	qs := obQuotes(s)
	var containers []obSpan
	for _, q := range qs {
		if x.holdsTool(q.inner) {
			containers = append(containers, q)
		}
	}
	for _, q := range qs {
		if x.used[q.inner] || strings.TrimSpace(q.inner) == "" || x.holdsTool(q.inner) ||
			strings.HasPrefix(strings.TrimLeft(s[q.end:], " \t"), ":") && strings.HasPrefix(s[q.start:], `"`) {
			continue
		}
		in := false
		for _, c := range containers {
			if q.start > c.start && q.end < c.end {
				in = true
			}
		}
		if in {
			inside = append(inside, q)
		} else {
			outside = append(outside, q)
		}
	}
	return append(inside, outside...)
}

// holdsTool reports whether s mentions the tool being called: such a
// quoted text is the container of the instruction, not one of its values.
func (x *obExtractor) holdsTool(s string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(x.in.tool.Name))
}

// take returns the first candidate no parameter has taken.
func (x *obExtractor) take(cands ...string) (string, bool) {
	for _, c := range cands {
		if c = strings.TrimSpace(c); c != "" && !x.used[c] {
			return c, true
		}
	}
	return "", false
}

var (
	obEmailRe     = lazy.Regexp(`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+`)
	obHandleRe    = lazy.Regexp(`(?:^|[^\w@.])(@[A-Za-z0-9](?:[\w.-]*[A-Za-z0-9_])?)`)
	obUrlRe       = lazy.Regexp(`(?i)\bhttps?://[^\s<>"'` + "`" + `)\]]+`)
	obToBeforeRe  = lazy.Regexp(`(?i)\bto\s+(?:the\s+)?(?:(?:e-?mail\s+)?address\s+|user\s+|handle\s+|recipient\s+|person\s+|contact\s+|inbox\s+(?:of\s+)?)?$`)
	obCapRun      = `((?:[A-Z][\p{L}'’.&-]*)(?:\s+(?:[A-Z][\p{L}'’.&-]*|of|and|&|de|van|von|da))*)`
	obToNameRe    = lazy.Regexp(`\bto\s+` + obCapRun)
	obWithNamesRe = lazy.Regexp(`(?i:\b(?:with|invite|inviting|including|attendees?:?))\s+` + obCapRun)
	obChannelHash = lazy.Regexp(`(?:^|[\s(])(#[A-Za-z0-9][\w.-]*[\w])`)
	obChannelWord = lazy.Regexp(`(?i)\b(?:channel|room)\s+(?:called\s+|named\s+)?([a-z0-9][\w-]*)`)
	obChannelPre  = lazy.Regexp(`(?i)\b(?:to|in|on|into)\s+(?:the\s+)?([a-z0-9][\w-]*)\s+(?:channel|room)\b`)
	obAccountRe   = lazy.Regexp(`\b(?:[A-Z]{2}\d{2}[A-Z0-9]{10,30}|[A-Z]{2}\d{2}(?: [A-Z0-9]{4}){3,7}(?: [A-Z0-9]{1,4})?|[A-Za-z]{2,8}[-_]?\d[\d-]{2,}[\dA-Za-z]|\d{2,}(?:-\d{2,}){1,4}|\d{6,})\b`)
	obFromAcctRe  = lazy.Regexp(`(?i)\bfrom\s+(?:my\s+|the\s+|our\s+)?(?:account\s+|acct\.?\s+)?(?:(?:number|no\.?|ending(?:\s+in)?)\s+)?([\w-]*\d[\w-]*|checking|savings|current|credit)\b`)
	obToAcctRe    = lazy.Regexp(`(?i)\bto\s+(?:my\s+|the\s+|their\s+|his\s+|her\s+)?(?:account|acct\.?|iban)\s+(?:(?:number|no\.?|ending(?:\s+in)?)\s+)?([\w-]*\d[\w-]*)\b`)
	obMoneyRe     = lazy.Regexp(`(?i)(?:[$€£]\s?(\d[\d,]*(?:\.\d+)?)|\b(\d[\d,]*(?:\.\d+)?)\s?(?:usd|eur|gbp|dollars|euros|pounds)\b)`)
	obAmountWord  = lazy.Regexp(`(?i)\b(?:transfer|send|pay|wire|amount(?:\s+of)?|sum\s+of|total\s+of)\s+(\d[\d,]*(?:\.\d+)?)\b`)
	obIsoTimeRe   = lazy.Regexp(`\b\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:?\d{2})?)?\b`)
	obMonths      = `(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)`
	obClock       = `(?:\s+(?:at\s+)?\d{1,2}(?::\d{2})?\s*(?:am|pm)?)?`
	obDateWordRe  = lazy.Regexp(`(?i)\b(?:\d{1,2}\s+` + obMonths + `(?:\s+\d{4})?|` + obMonths + `\s+\d{1,2}(?:st|nd|rd|th)?(?:,?\s+\d{4})?|(?:next\s+)?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|tomorrow|today|tonight)\b` + obClock)
	obClockRe     = lazy.Regexp(`(?i)\b\d{1,2}:\d{2}\s*(?:am|pm)?\b|\b\d{1,2}\s*(?:am|pm)\b`)
	obUntilRe     = lazy.Regexp(`(?i)(?:\bto|\buntil|\btill|\bthrough|\bout|[-–])\s*$`)
	obToPathRe    = lazy.Regexp(`(?i)\b(?:to|into|as|under)\s+(?:the\s+)?(?:folder\s+|directory\s+|path\s+)?$`)
	obInstallRe   = lazy.Regexp(`(?i)\binstall\s+(?:the\s+)?(?:(?:python|npm|pip|node|ruby|go)\s+)?(?:(?:package|library|module|dependency)\s+)?(?:called\s+|named\s+)?['"` + "`" + `]?([A-Za-z0-9@][\w.@/=<>~^\[\]-]*)`)
	obPackageRe   = lazy.Regexp(`(?i)\b(?:package|library|module|dependency)\s+(?:called\s+|named\s+)?['"` + "`" + `]?([A-Za-z0-9@][\w.@/=<>~^\[\]-]*)`)
	obRunRe       = lazy.Regexp(`(?i)\b(?:run|execute|exec)\s+(?:this\s+|the\s+following\s+|the\s+)?(?:(?:shell\s+|terminal\s+)?command\s*:?\s*)?(.+)`)
	obPriorityRe  = lazy.Regexp(`(?i)\b(low|normal|medium|high|urgent|critical)(?:\s+|-)priority\b|\bpriority\s*(?:of\s+|to\s+|is\s+)?[:=]?\s*(low|normal|medium|high|urgent|critical)\b`)
	obTitleKeyRe  = lazy.Regexp(`(?i)\b(?:titled|entitled|called|named|rename(?:\s+it)?\s+(?:to|as)|retitle(?:\s+it)?\s+(?:to|as)|with\s+the\s+(?:title|subject|name)|(?:title|subject(?:\s+line)?|name)\s*(?:of\s+|to\s+)?)\s*:?\s*`)
	obSkillRe     = lazy.Regexp(`(?i)\b(?:load|use|open|run)\s+(?:the\s+)?([\w-]+)\s+skill\b`)
	obLinkRe      = lazy.Regexp(`(?i)\bclick\s+(?:on\s+)?(?:the\s+)?(.+?)\s+link\b`)
	obPersonKeyRe = lazy.Regexp(`\b(?:for|passenger|guest|payee|biller|(?i:under\s+the\s+name(?:\s+of)?|in\s+the\s+name\s+of)|named)\s*:?\s+` + obCapRun)
	obPayRe       = lazy.Regexp(`(?i:\bpay)\s+(?:the\s+)?` + obCapRun)
	obFromPlaceRe = lazy.Regexp(`\bfrom\s+([A-Z]{3}\b|` + obCapRun + `)`)
	obToPlaceRe   = lazy.Regexp(`\bto\s+([A-Z]{3}\b|` + obCapRun + `)`)
	obInPlaceRe   = lazy.Regexp(`\bin\s+` + obCapRun)
	obTextKeyRe   = lazy.Regexp(`(?i)\b(?:saying|that\s+says|which\s+says|reading|that\s+reads|with\s+the\s+(?:text|message|content|body|comment|caption|note|description)|the\s+(?:text|message|content|body|comment|caption|note|post|description)|(?:message|post|body|content|text|comment|note|caption|description|details)\s*:)\s*`)
	obObjectRe    = lazy.Regexp(`(?i)\b(?:send|forward|post|share|submit|upload|write|e?mail|publish|tell)\s+(.+?)\s+(?:to|at|on|into)\s`)
	obIdTokenRe   = lazy.Regexp(`\b(?:[A-Z]{1,5}-?\d{2,}[A-Z0-9-]*|[a-z]{2,6}[_-]\d[\w-]*)\b`)
)

// obNonNames are capitalised words that start a sentence or a phrase, not a
// name.
var obNonNames = map[string]bool{
	"The": true, "This": true, "That": true, "These": true, "Those": true, "It": true, "My": true, "Our": true,
	"Your": true, "Their": true, "A": true, "An": true, "All": true, "Each": true, "Every": true, "I": true,
	"Use": true, "Call": true, "Then": true, "And": true, "With": true, "Please": true, "Do": true, "Send": true,
	"Run": true, "Make": true, "Me": true, "Them": true, "Him": true, "Her": true, "Us": true,
}

// obName cleans a run of capitalised words: leading phrase words dropped,
// trailing punctuation and joining words trimmed.
func obName(run string) string {
	words := strings.Fields(run)
	for len(words) > 0 && obNonNames[words[0]] {
		words = words[1:]
	}
	for len(words) > 0 {
		last := words[len(words)-1]
		if last == "of" || last == "and" || last == "&" || last == "de" || last == "van" || last == "von" || last == "da" || obNonNames[last] {
			words = words[:len(words)-1]
			continue
		}
		break
	}
	return strings.TrimRight(strings.Join(words, " "), ".,;:'’")
}

// guess looks for a parameter's value in s by the parameter's name.
func (x *obExtractor) guess(pr toolargs.Param, s string) (string, bool) {
	n := strings.ToLower(pr.Name)
	switch toolargs.ClassOf(pr.Name) {
	case toolargs.ID:
		return x.id(strings.TrimSuffix(n, "_id"), s)
	case toolargs.URL:
		for _, u := range obUrlRe().FindAllString(s, -1) {
			if v, ok := x.take(strings.TrimRight(u, ".,;:!?")); ok {
				return v, true
			}
		}
	case toolargs.Recipient:
		return x.recipient(n, s)
	case toolargs.Attendees:
		return x.attendees(s)
	case toolargs.Channel:
		for _, re := range []*regexp.Regexp{obChannelHash(), obChannelPre(), obChannelWord()} {
			for _, m := range re.FindAllStringSubmatch(s, -1) {
				if w := strings.ToLower(m[1]); w == "the" || w == "tool" || w == "with" || w == "to" || w == "a" {
					continue
				}
				if v, ok := x.take(m[1]); ok {
					return v, true
				}
			}
		}
	case toolargs.Account:
		return x.account(n, s)
	case toolargs.Amount:
		for _, m := range obMoneyRe().FindAllStringSubmatch(s, -1) {
			if v, ok := x.take(strings.ReplaceAll(m[1]+m[2], ",", "")); ok {
				return v, true
			}
		}
		for _, m := range obAmountWord().FindAllStringSubmatch(s, -1) {
			if v, ok := x.take(strings.ReplaceAll(m[1], ",", "")); ok {
				return v, true
			}
		}
	case toolargs.Time:
		return x.time(n, s)
	case toolargs.Path:
		return x.path(n, s)
	case toolargs.Package:
		for _, re := range []*regexp.Regexp{obInstallRe(), obPackageRe()} {
			for _, m := range re.FindAllStringSubmatch(s, -1) {
				w := strings.TrimRight(m[1], ".,;:!?'\"`")
				if lw := strings.ToLower(w); lw == "the" || lw == "it" || lw == "this" || lw == "package" || lw == strings.ToLower(x.in.tool.Name) {
					continue
				}
				if v, ok := x.take(w); ok {
					return v, true
				}
			}
		}
		for _, q := range x.unusedQuotes(s) {
			if !strings.ContainsAny(q.inner, " \t") {
				return q.inner, true
			}
		}
	case toolargs.Command:
		qs := x.unusedQuotes(s)
		for _, q := range qs {
			if strings.HasPrefix(s[q.start:], "`") {
				return q.inner, true
			}
		}
		if len(qs) > 0 {
			return qs[0].inner, true
		}
		for _, m := range obRunRe().FindAllStringSubmatch(s, -1) {
			if v, ok := x.take(obTrimValue(m[1])); ok {
				return v, true
			}
		}
	case toolargs.Priority:
		if m := obPriorityRe().FindStringSubmatch(s); m != nil {
			return strings.ToLower(m[1] + m[2]), true
		}
	case toolargs.Title:
		return x.title(pr, s)
	case toolargs.Person:
		return x.person(n, s)
	case toolargs.Place:
		var re *regexp.Regexp
		switch n {
		case "origin":
			re = obFromPlaceRe()
		case "destination":
			re = obToPlaceRe()
		default:
			re = obInPlaceRe()
		}
		for _, m := range re.FindAllStringSubmatch(s, -1) {
			if v, ok := x.take(obName(m[1])); ok {
				return v, true
			}
		}
	case toolargs.Text:
		return x.text(pr, s)
	}
	return "", false
}

func (x *obExtractor) id(prefix string, s string) (string, bool) {
	words := []string{regexp.QuoteMeta(prefix)}
	switch prefix {
	case "doc":
		words = append(words, "document")
	case "email":
		words = append(words, "message", "mail")
	case "event":
		words = append(words, "meeting")
	case "post":
		words = append(words, "tweet")
	}
	re := regexp.MustCompile(`(?i)\b(?:` + strings.Join(words, "|") + `)\s*(?:id|number|no\.?|#)?\s*[:#=]?\s*([A-Za-z0-9][\w.-]*\d[\w.-]*|\d+)`)
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		if v, ok := x.take(strings.TrimRight(m[1], ".-")); ok {
			return v, true
		}
	}
	for _, m := range obGenericIDRe().FindAllStringSubmatch(s, -1) {
		if v, ok := x.take(strings.TrimRight(m[1], ".-")); ok {
			return v, true
		}
	}
	for _, t := range obIdTokenRe().FindAllString(s, -1) {
		if v, ok := x.take(t); ok {
			return v, true
		}
	}
	return "", false
}

// recipient prefers an address or @handle right after "to", then a
// capitalised name after "to", then the first address or handle.
func (x *obExtractor) recipient(n, s string) (string, bool) {
	type cand struct {
		at int
		v  string
	}
	var cands []cand
	for _, loc := range obEmailRe().FindAllStringIndex(s, -1) {
		cands = append(cands, cand{loc[0], s[loc[0]:loc[1]]})
	}
	for _, m := range obHandleRe().FindAllStringSubmatchIndex(s, -1) {
		cands = append(cands, cand{m[2], s[m[2]:m[3]]})
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].at < cands[j].at })
	if n == "to" || n == "recipient" || n == "user" || n == "handle" {
		for _, c := range cands {
			if obToBeforeRe().MatchString(s[:c.at]) {
				if v, ok := x.take(c.v); ok {
					return v, true
				}
			}
		}
		for _, m := range obToNameRe().FindAllStringSubmatch(s, -1) {
			if v, ok := x.take(obName(m[1])); ok {
				return v, true
			}
		}
	}
	for _, c := range cands {
		if v, ok := x.take(c.v); ok {
			return v, true
		}
	}
	return "", false
}

func (x *obExtractor) attendees(s string) (string, bool) {
	var list []string
	seen := map[string]bool{}
	add := func(v string) {
		if v != "" && !seen[v] && !x.used[v] {
			seen[v] = true
			list = append(list, v)
		}
	}
	for _, e := range obEmailRe().FindAllString(s, -1) {
		add(e)
	}
	for _, m := range obHandleRe().FindAllStringSubmatch(s, -1) {
		add(m[1])
	}
	if len(list) == 0 {
		for _, m := range obWithNamesRe().FindAllStringSubmatch(s, -1) {
			for _, part := range obListSepRe().Split(m[1], -1) {
				add(obName(part))
			}
		}
	}
	if len(list) == 0 {
		return "", false
	}
	return strings.Join(list, ", "), true
}

func (x *obExtractor) account(n, s string) (string, bool) {
	if strings.HasPrefix(n, "from") || strings.HasPrefix(n, "source") {
		for _, m := range obFromAcctRe().FindAllStringSubmatch(s, -1) {
			if v, ok := x.take(m[1]); ok {
				return v, true
			}
		}
		return "", false
	}
	if strings.HasPrefix(n, "to") || strings.HasPrefix(n, "dest") || strings.HasPrefix(n, "target") {
		for _, m := range obToAcctRe().FindAllStringSubmatch(s, -1) {
			if v, ok := x.take(m[1]); ok {
				return v, true
			}
		}
		for _, loc := range obAccountRe().FindAllStringIndex(s, -1) {
			if obToWordRe().MatchString(s[:loc[0]]) && !obFromTailRe().MatchString(s[:loc[0]]) {
				if v, ok := x.take(s[loc[0]:loc[1]]); ok {
					return v, true
				}
			}
		}
	}
	for _, a := range obAccountRe().FindAllString(s, -1) {
		if v, ok := x.take(a); ok {
			return v, true
		}
	}
	return "", false
}

func (x *obExtractor) time(n, s string) (string, bool) {
	type cand struct {
		at int
		v  string
	}
	var dates []cand
	for _, re := range []*regexp.Regexp{obIsoTimeRe(), obDateWordRe()} {
		for _, loc := range re.FindAllStringIndex(s, -1) {
			dates = append(dates, cand{loc[0], strings.TrimSpace(s[loc[0]:loc[1]])})
		}
	}
	if n == "time" || n == "when" || n == "start" || strings.HasSuffix(n, "_time") {
		for _, loc := range obClockRe().FindAllStringIndex(s, -1) {
			inside := false
			for _, d := range dates {
				if loc[0] >= d.at && loc[0] < d.at+len(d.v) {
					inside = true
				}
			}
			if !inside {
				dates = append(dates, cand{loc[0], s[loc[0]:loc[1]]})
			}
		}
	}
	sort.SliceStable(dates, func(i, j int) bool { return dates[i].at < dates[j].at })
	if n == "check_out" || n == "end" || strings.HasPrefix(n, "end_") || strings.HasPrefix(n, "return") {
		for _, d := range dates {
			if obUntilRe().MatchString(s[:d.at]) {
				if v, ok := x.take(d.v); ok {
					return v, true
				}
			}
		}
	}
	for _, d := range dates {
		if v, ok := x.take(d.v); ok {
			return v, true
		}
	}
	return "", false
}

var obPathExt = map[string]bool{
	"txt": true, "md": true, "pdf": true, "doc": true, "docx": true, "xls": true, "xlsx": true, "csv": true, "json": true,
	"yaml": true, "yml": true, "toml": true, "ini": true, "cfg": true, "conf": true, "env": true, "sh": true, "bash": true,
	"zsh": true, "py": true, "go": true, "js": true, "ts": true, "rb": true, "java": true, "c": true, "h": true, "cpp": true,
	"rs": true, "html": true, "htm": true, "xml": true, "log": true, "key": true, "pem": true, "crt": true, "zip": true,
	"tar": true, "gz": true, "tgz": true, "bak": true, "sql": true, "db": true, "sqlite": true, "png": true, "jpg": true,
	"jpeg": true, "gif": true, "svg": true, "ics": true, "eml": true, "ps1": true, "bat": true, "exe": true, "lock": true,
	"mod": true, "sum": true, "pub": true, "pptx": true, "odt": true, "rtf": true, "kdbx": true,
}

var obDotfileRe = lazy.Regexp(`^\.[A-Za-z][\w-]*$`)

// obPathLike reports whether a token reads as a file path.
func obPathLike(t string) bool {
	if t == "" || strings.Contains(t, "://") || obEmailRe().MatchString(t) || strings.ContainsAny(t, " \t") {
		return false
	}
	if obDotfileRe().MatchString(t) {
		return true
	}
	last := t[strings.LastIndexAny(t, `/\`)+1:]
	if i := strings.LastIndexByte(last, '.'); i > 0 && obPathExt[strings.ToLower(last[i+1:])] {
		return true
	}
	if strings.HasPrefix(t, "/") || strings.HasPrefix(t, "~") || strings.HasPrefix(t, "./") || strings.HasPrefix(t, "../") {
		return len(t) > 1
	}
	return strings.Count(t, "/") >= 2
}

// paths returns the file paths of s in order: quoted paths and bare
// path-like tokens outside quotes and URLs.
func (x *obExtractor) paths(s string) []struct {
	at int
	v  string
} {
	type cand = struct {
		at int
		v  string
	}
	var out []cand
	qs := obQuotes(s)
	urls := obUrlRe().FindAllStringIndex(s, -1)
	covered := func(i int) bool {
		for _, q := range qs {
			if i >= q.start && i < q.end && !x.holdsTool(q.inner) {
				return true
			}
		}
		for _, u := range urls {
			if i >= u[0] && i < u[1] {
				return true
			}
		}
		return false
	}
	for _, q := range qs {
		if obPathLike(q.inner) {
			out = append(out, cand{q.start, q.inner})
		}
	}
	for _, loc := range obTokenRe().FindAllStringIndex(s, -1) {
		t := strings.TrimRight(s[loc[0]:loc[1]], ".:!?")
		if !covered(loc[0]) && obPathLike(t) {
			out = append(out, cand{loc[0], t})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at < out[j].at })
	return out
}

func (x *obExtractor) path(n, s string) (string, bool) {
	ps := x.paths(s)
	if n == "dst" || n == "destination" || n == "target" || strings.HasPrefix(n, "dest") || strings.HasPrefix(n, "new") {
		for _, c := range ps {
			if obToPathRe().MatchString(s[:c.at]) {
				if v, ok := x.take(c.v); ok {
					return v, true
				}
			}
		}
	}
	for _, c := range ps {
		if v, ok := x.take(c.v); ok {
			return v, true
		}
	}
	return "", false
}

func (x *obExtractor) title(pr toolargs.Param, s string) (string, bool) {
	n := strings.ToLower(pr.Name)
	if n == "name" {
		if m := obSkillRe().FindStringSubmatch(s); m != nil {
			if v, ok := x.take(m[1]); ok {
				return v, true
			}
		}
	}
	if n == "link_text" {
		if m := obLinkRe().FindStringSubmatch(s); m != nil {
			if v, ok := x.take(strings.Trim(m[1], `"'`)); ok {
				return v, true
			}
		}
	}
	for _, loc := range obTitleKeyRe().FindAllStringIndex(s, -1) {
		key := strings.ToLower(s[loc[0]:loc[1]])
		lineStart := strings.LastIndexByte(s[:loc[0]], '\n') + 1
		if unicode.IsUpper(rune(s[loc[0]])) && strings.HasSuffix(strings.TrimSpace(key), ":") && strings.TrimSpace(s[lineStart:loc[0]]) == "" {
			continue // "Subject: ..." heading a line is a header, not an argument
		}
		if n == "subject" && !strings.Contains(key, "subject") {
			continue
		}
		rest := s[loc[1]:]
		if q := obQuotes(rest); len(q) > 0 && q[0].start == 0 {
			if v, ok := x.take(q[0].inner); ok {
				return v, true
			}
			continue
		}
		end := len(rest)
		if m := obClauseEndRe().FindStringIndex(rest); m != nil {
			end = m[0]
		}
		if v, ok := x.take(obTrimValue(rest[:end])); ok && utf8.RuneCountInString(v) <= 120 {
			return v, true
		}
	}
	if pr.Required {
		for _, q := range x.unusedQuotes(s) {
			return q.inner, true
		}
	}
	return "", false
}

func (x *obExtractor) person(n, s string) (string, bool) {
	for _, q := range x.unusedQuotes(s) {
		if before := strings.ToLower(s[:q.start]); strings.HasSuffix(strings.TrimSpace(before), "for") || strings.HasSuffix(strings.TrimSpace(before), n) {
			return q.inner, true
		}
	}
	res := []*regexp.Regexp{obPersonKeyRe()}
	if n == "biller" || n == "payee" {
		res = []*regexp.Regexp{obToNameRe(), obPayRe(), obPersonKeyRe()}
	}
	for _, re := range res {
		for _, m := range re.FindAllStringSubmatch(s, -1) {
			if v, ok := x.take(obName(m[1])); ok {
				return v, true
			}
		}
	}
	return "", false
}

func (x *obExtractor) text(pr toolargs.Param, s string) (string, bool) {
	n := strings.ToLower(pr.Name)
	for _, loc := range obTextKeyRe().FindAllStringIndex(s, -1) {
		key := strings.ToLower(s[loc[0]:loc[1]])
		if (strings.Contains(key, "description") || strings.Contains(key, "details")) != (n == "description") {
			continue
		}
		rest := s[loc[1]:]
		if q := obQuotes(rest); len(q) > 0 && q[0].start == 0 {
			if v, ok := x.take(q[0].inner); ok {
				return v, true
			}
			continue
		}
		if strings.HasSuffix(strings.TrimSpace(key), ":") {
			if v, ok := x.take(obTrimValue(rest)); ok {
				return v, true
			}
		}
	}
	if n != "description" || pr.Required {
		for _, q := range x.unusedQuotes(s) {
			return q.inner, true
		}
	}
	if pr.Required {
		if m := obObjectRe().FindStringSubmatch(s); m != nil {
			if v, ok := x.take(m[1]); ok {
				return v, true
			}
		}
	}
	return "", false
}

// Patterns used while extracting arguments, compiled once rather than on
// every call.
var (
	obGenericIDRe = lazy.Regexp(`(?i)\bid\s*[:#=]?\s*([A-Za-z0-9][\w.-]*)`)
	obListSepRe   = lazy.Regexp(`\s*(?:,|\band\b|&)\s*`)
	obToWordRe    = lazy.Regexp(`(?i)\bto\b`)
	obFromTailRe  = lazy.Regexp(`(?i)\bfrom\s+(?:\S+\s+){0,2}$`)
	obTokenRe     = lazy.Regexp(`[^\s"'` + "`" + `()<>\[\]{},;]+`)
	obClauseEndRe = lazy.Regexp(`(?i)\s+(?:with|using|via|at|on|for|to|and|from)\s|[,;]|[.!?](?:\s|$)`)
)
