package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pikit-go/pikit/judge"
)

// WriteMarkdown writes the summary as Markdown: totals, outcomes, and a
// table of the groups. Like WriteText it is for reading: values from the
// results are shown with termsafe.Line's escapes, so control characters,
// terminal escapes and bidi overrides cannot act.
func (s Summary) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| cells | attack success | runtime errors | not judged |\n|---:|---|---:|---:|\n")
	fmt.Fprintf(&b, "| %d | %s | %d | %d |\n\n", s.Cells, s.ASR, s.Errors, s.NotJudged)
	if w := s.ToolErrorWarning(); w != "" {
		fmt.Fprintf(&b, "**Warning:** %s.\n\n", w)
	}
	if s.Benign > 0 {
		fmt.Fprintf(&b, "Benign baseline cells (attack none, not in the rate): %d\n\n", s.Benign)
	}
	if s.Utility.N > 0 || s.BenignUtility.N > 0 {
		fmt.Fprintf(&b, "Utility under attack: %s · benign utility: %s\n\n", s.Utility, s.BenignUtility)
	}
	if parts := outcomeParts(s.Outcomes, mdCell); len(parts) > 0 {
		fmt.Fprintf(&b, "Outcomes: %s\n\n", strings.Join(parts, ", "))
	}
	s.writeGroupsMarkdown(&b)
	if _, err := io.WriteString(w, b.String()); err != nil || s.Adaptive == nil {
		return err
	}
	if len(s.Groups) > 0 {
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
	}
	return s.Adaptive.WriteMarkdown(w)
}

// WriteGroupsMarkdown writes only the summary's group table as Markdown.
func (s Summary) WriteGroupsMarkdown(w io.Writer) error {
	var b strings.Builder
	s.writeGroupsMarkdown(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

func (s Summary) writeGroupsMarkdown(b *strings.Builder) {
	if len(s.Groups) == 0 {
		return
	}
	head := append(slices.Clone(s.By), "success", "rate", "95% CI", "errors")
	align := append(slices.Repeat([]string{"---"}, len(s.By)), "---:", "---:", "---", "---:")
	tools := s.ToolErrorCells > 0 // as in the text table
	if tools {
		head = append(head, "tool errors")
	}
	rows := make([][]string, len(s.Groups))
	for i, g := range s.Groups {
		for _, v := range g.Values {
			rows[i] = append(rows[i], mdCell(v))
		}
		rows[i] = append(rows[i], fmt.Sprintf("%d/%d", g.ASR.Successes, g.ASR.N), g.ASR.pct(), g.ASR.ci(), strconv.Itoa(g.Errors))
		if tools {
			rows[i] = append(rows[i], strconv.Itoa(g.ToolErrorCells))
		}
	}
	writeMarkdownTable(b, head, rows, align...)
}

// WriteJSON writes the summary as indented JSON.
func (s Summary) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// WriteCSV writes one row per group (or one row of totals without groups),
// each cell a spreadsheet would run as a formula neutralised (see
// NeutralizeCSV). A rate, and its interval, over no judged cells is an
// empty cell: there is none.
func (s Summary) WriteCSV(w io.Writer) error { return s.WriteCSVWith(w, CSVOptions{}) }

// WriteCSVWith is WriteCSV with options.
func (s Summary) WriteCSVWith(w io.Writer, o CSVOptions) error {
	cw := csv.NewWriter(w)
	head := append(append([]string(nil), s.By...), "successes", "n", "rate", "ci_low", "ci_high", "errors", "utility_under_attack", "benign_utility")
	if err := cw.Write(head); err != nil {
		return err
	}
	row := func(vals []string, g Group) error {
		f := func(r Rate, x float64) string {
			if r.N == 0 {
				return ""
			}
			return strconv.FormatFloat(x, 'f', 4, 64)
		}
		cells := append(append([]string(nil), vals...), strconv.Itoa(g.ASR.Successes), strconv.Itoa(g.ASR.N),
			f(g.ASR, g.ASR.Rate), f(g.ASR, g.ASR.Low), f(g.ASR, g.ASR.High), strconv.Itoa(g.Errors),
			f(g.Utility, g.Utility.Rate), f(g.BenignUtility, g.BenignUtility.Rate))
		if !o.Raw {
			for i, c := range cells {
				cells[i] = NeutralizeCSV(c)
			}
		}
		return cw.Write(cells)
	}
	if len(s.Groups) == 0 {
		if err := row(nil, Group{ASR: s.ASR, Errors: s.Errors, Utility: s.Utility, BenignUtility: s.BenignUtility}); err != nil {
			return err
		}
	}
	for _, g := range s.Groups {
		if err := row(g.Values, g); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// outcomeParts lists the outcome counts, "name count": the known outcomes
// in their order, then the others (shown through esc: termsafe.Line, or
// mdCell for Markdown) by name.
func outcomeParts(m map[judge.Outcome]int, esc func(string) string) []string {
	var parts []string
	for _, o := range judge.Outcomes {
		if c := m[o]; c > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", o, c))
		}
	}
	var unknown []string
	for o, c := range m {
		if !o.Valid() && c > 0 {
			unknown = append(unknown, string(o))
		}
	}
	sort.Strings(unknown)
	for _, o := range unknown {
		name := esc(o)
		if name == "" {
			name = "(no outcome)"
		}
		parts = append(parts, fmt.Sprintf("%s %d", name, m[judge.Outcome(o)]))
	}
	return parts
}

// mdEscape makes a value from the results show as text in Markdown, in a
// table cell or a paragraph: <, > and & become entities (no raw HTML, no
// autolink, no entity of the value's own); the characters that make
// emphasis, code, strikethrough and links (* ` ~ ]) are escaped with a
// backslash, _ too where it could open or close emphasis (not between two
// letters or digits, so snake_case names stay as they are; without an
// unescaped ], no link or image can form); a pipe is escaped so a cell
// stays one cell, and a newline becomes a space. A backslash is escaped
// where it would escape what follows it. Other text is left as it is.
func mdEscape(s string) string {
	if !strings.ContainsAny(s, "<>&*`~]_|\\\n") {
		return s
	}
	word := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
	var b strings.Builder
	prev := rune(-1)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		next, _ := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '\n':
			b.WriteByte(' ')
		case '*', '`', '~', ']', '|':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '_':
			if !word(prev) || !word(next) {
				b.WriteByte('\\')
			}
			b.WriteByte('_')
		case '\\':
			if asciiPunct(next) {
				b.WriteByte('\\')
			}
			b.WriteByte('\\')
		default:
			b.WriteString(s[i-size : i])
		}
		prev = r
	}
	return b.String()
}

// asciiPunct reports whether r is one of the ASCII punctuation characters
// a Markdown backslash escapes.
func asciiPunct(r rune) bool {
	return r < utf8.RuneSelf && (unicode.IsPunct(r) || unicode.IsSymbol(r))
}
