package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/pikit-go/pikit/judge"
)

// WriteMarkdown writes the summary as Markdown: totals, outcomes, and a
// table of the groups.
func (s Summary) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| cells | attack success | runtime errors | not judged |\n|---:|---|---:|---:|\n")
	fmt.Fprintf(&b, "| %d | %s | %d | %d |\n\n", s.Cells, s.ASR, s.Errors, s.NotJudged)
	if s.Benign > 0 {
		fmt.Fprintf(&b, "Benign baseline cells (attack none, not in the rate): %d\n\n", s.Benign)
	}
	if s.Utility.N > 0 || s.BenignUtility.N > 0 {
		fmt.Fprintf(&b, "Utility under attack: %s · benign utility: %s\n\n", s.Utility, s.BenignUtility)
	}
	if parts := outcomeParts(s.Outcomes); len(parts) > 0 {
		fmt.Fprintf(&b, "Outcomes: %s\n\n", strings.Join(parts, ", "))
	}
	s.writeGroupsMarkdown(&b)
	_, err := io.WriteString(w, b.String())
	return err
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
	b.WriteString("| " + strings.Join(s.By, " | ") + " | success | rate | 95% CI | errors |\n")
	b.WriteString("|" + strings.Repeat("---|", len(s.By)) + "---:|---:|---|---:|\n")
	for _, g := range s.Groups {
		vals := make([]string, len(g.Values))
		for i, v := range g.Values {
			vals[i] = mdEscape(v)
		}
		fmt.Fprintf(b, "| %s | %d/%d | %s | %s | %d |\n", strings.Join(vals, " | "), g.ASR.Successes, g.ASR.N, g.ASR.pct(), g.ASR.ci(), g.Errors)
	}
}

// WriteJSON writes the summary as indented JSON.
func (s Summary) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// WriteCSV writes one row per group (or one row of totals without groups).
func (s Summary) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := append(append([]string(nil), s.By...), "successes", "n", "rate", "ci_low", "ci_high", "errors", "utility_under_attack", "benign_utility")
	if err := cw.Write(head); err != nil {
		return err
	}
	row := func(vals []string, g Group) error {
		f := func(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }
		util := func(r Rate) string {
			if r.N == 0 {
				return ""
			}
			return f(r.Rate)
		}
		return cw.Write(append(append([]string(nil), vals...), strconv.Itoa(g.ASR.Successes), strconv.Itoa(g.ASR.N),
			f(g.ASR.Rate), f(g.ASR.Low), f(g.ASR.High), strconv.Itoa(g.Errors), util(g.Utility), util(g.BenignUtility)))
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

func outcomeParts(m map[judge.Outcome]int) []string {
	var parts []string
	for _, o := range judge.Outcomes {
		if c := m[o]; c > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", o, c))
		}
	}
	for o, c := range m {
		if !o.Valid() && c > 0 {
			name := string(o)
			if name == "" {
				name = "(no outcome)"
			}
			parts = append(parts, fmt.Sprintf("%s %d", name, c))
		}
	}
	return parts
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
