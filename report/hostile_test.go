package report

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/target"
)

// mdHostile are group names that Markdown would render as markup if they
// reached it as they are: raw HTML, links, images, emphasis, code, table
// breaks, entities.
var mdHostile = []string{
	`<img src=x onerror=alert(1)>`,
	`<script>alert(1)</script>`,
	`[click](https://evil.example/)`,
	`![x](https://evil.example/p.png)`,
	`*bold* and **strong**`,
	`_under_ x`,
	"`code`",
	`~~struck~~`,
	`a|b`,
	`&amp; &#60;b&#62;`,
	`\*escaped\*`,
	"two\nlines",
	"rtl \u202egnp.exe",
}

// unescaped returns the places of c in s not escaped by a backslash.
func unescaped(s string, c byte) []int {
	var at []int
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++ // the next byte is escaped
			continue
		}
		if s[i] == c {
			at = append(at, i)
		}
	}
	return at
}

// TestMarkdownHostileNames: values from the results reach Markdown as
// text: <, > and & as entities, Markdown's specials escaped, pipes escaped
// and newlines flattened so each table row keeps its cells; names that need
// none of this are written as they are.
func TestMarkdownHostileNames(t *testing.T) {
	var res []matrix.Result
	for i, name := range mdHostile {
		res = append(res, matrix.Result{Key: "k" + name, Attack: name, Defense: mdHostile[(i+1)%len(mdHostile)], Agent: "chat",
			Outcome: judge.FullSuccess, Success: true})
	}
	res = append(res, matrix.Result{Key: "odd", Attack: "naive", Agent: "chat", Outcome: judge.Outcome(`<b onmouseover=alert(1)>x</b>`)})
	s := Summarize(res, "attack", "defense")
	var buf bytes.Buffer
	if err := s.WriteMarkdown(&buf); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, c := range []byte{'<', '>', '*', '`', '~', ']'} {
		if at := unescaped(md, c); len(at) > 0 {
			t.Errorf("%q unescaped at %d:\n%s", c, at[0], md)
		}
	}
	for _, w := range []string{"&lt;img src=x onerror=alert(1)&gt;", "&lt;script&gt;", "&amp;amp;", `\_under\_`, `a\|b`, `\\\*escaped\\\*`, `rtl \u202egnp.exe`, `&lt;b onmouseover=alert(1)&gt;x&lt;/b&gt;`} {
		if !strings.Contains(md, w) {
			t.Errorf("Markdown lacks %q:\n%s", w, md)
		}
	}
	if strings.ContainsRune(md, '\u202e') {
		t.Error("a bidi override reached the Markdown")
	}
	// Each table row has its cells: 2 values and 4 numbers.
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| cells") && !strings.HasPrefix(line, "| attack") {
			if n := len(unescaped(line, '|')); n != 7 && n != 5 {
				t.Errorf("row with %d unescaped pipes: %s", n, line)
			}
		}
	}
	// Plain names are left as they are (the goldens hold the rest).
	for _, name := range []string{"context_ignoring", "naive", "random_sequence_enclosure", "v1.2-beta (test)", "100%"} {
		if got := mdCell(name); got != name {
			t.Errorf("mdCell(%q) = %q", name, got)
		}
	}
}

// htmlUnsafe are characters that must not reach the page raw: bidi
// overrides, embeddings and isolates, ESC, a C1 CSI, invisible format
// characters.
var htmlUnsafe = []rune{'\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069', '\x1b', '\u009b', '\u200b', '\u2028'}

// TestHTMLTracesEscaped: bidi overrides and terminal escapes in a trace
// (system prompt, messages, tool names, arguments, results, errors, the
// final answer, the reason) and in the cell's names are shown as visible
// escapes on the page, as the adaptive section shows them.
func TestHTMLTracesEscaped(t *testing.T) {
	var all strings.Builder
	for _, r := range htmlUnsafe {
		all.WriteString("x" + string(r))
	}
	bad := all.String() + "\x1b[2J\u202egnp.exe"
	res := matrix.Result{
		Key: "k" + bad, Attack: "naive" + bad, Defense: "none" + bad, Agent: "email" + bad, Target: "mock" + bad, CaseID: "c" + bad,
		Channel: "document" + bad, Task: "task" + bad, Reason: "reason" + bad, Confidence: "high" + bad, Signals: []string{"s" + bad},
		Outcome: judge.FullSuccess, Success: true, FinalText: "final" + bad, Error: "", CaseDescription: "desc" + bad,
		Evidence: []judge.Evidence{{Signal: "sig" + bad, Detail: "detail" + bad}},
		TraceData: &agent.Trace{
			Agent: "email", System: "system" + bad,
			Steps: []agent.Step{
				{Index: 0, Kind: agent.StepUser, Text: "user" + bad},
				{Index: 1, Kind: agent.StepModel, Text: "model" + bad, ToolCalls: []target.ToolCall{{ID: "c1" + bad, Name: "read" + bad, Arguments: `{"a":"` + bad + `"}`}}},
				{Index: 2, Kind: agent.StepTool, Tool: "read" + bad, CallID: "c1" + bad, Arguments: `{"a":"` + bad + `"}`, Result: "result" + bad, Error: "error" + bad, Tainted: true},
				{Index: 3, Kind: agent.StepModel, Text: "final" + bad},
			},
			FinalText: "final" + bad,
			SinkCalls: []agent.SinkCall{{Step: 9, Tool: "send" + bad, Arguments: map[string]any{"to": bad}}},
			Blocked:   &agent.Block{Point: "tool_result" + bad, Detector: "d" + bad, Reason: "blocked" + bad},
			Rounds:    []agent.Round{{Round: 1, Operator: "op" + bad, Prompt: "prompt" + bad, Outcome: "refused" + bad, Pruned: ""}},
		},
	}
	page := renderHTML(t, []matrix.Result{res}, HTMLOptions{Sources: []string{"r" + bad + ".jsonl"}})
	for _, r := range htmlUnsafe {
		if bytes.ContainsRune(page, r) {
			t.Errorf("%U reached the page raw", r)
		}
	}
	for _, w := range []string{`\u202e`, `\x1b[2J`, `\u2066`, `\u009b`} {
		if !bytes.Contains(page, []byte(w)) {
			t.Errorf("the page does not show %s", w)
		}
	}
	if !utf8.Valid(page) {
		t.Error("the page is not UTF-8")
	}
}
