package channel

import (
	"strconv"
	"strings"

	"github.com/pikit-go/pikit/method"
)

func init() {
	register(method.Info{
		Name:        "document",
		Description: "hides the payload in a plain-text document: a footnote, a paragraph in the middle, or an appended note",
		Options: []method.Option{{
			Name:    "method",
			Help:    "a numbered footnote marked in the first paragraph, a paragraph inserted mid-document, or a paragraph appended at the end",
			Default: "footnote",
			Choices: []string{"footnote", "inline", "appended"},
		}},
	}, func(o options) (Channel, error) { return document{method: o["method"]}, nil })
	RegisterSample("document", documentSample)
}

// document hides a payload in a plain-text document.
type document struct{ method string }

var (
	_ Channel    = document{}
	_ Sampler    = document{}
	_ FileWriter = document{}
)

// Sample returns a clean internal report.
func (document) Sample() string { return documentSample }

// Taint hides the payload as a paragraph of the document.
func (d document) Taint(data, payload string) (string, error) {
	nl := newline(data)
	text := strings.ReplaceAll(data, "\r\n", "\n")
	body := strings.Join(splitLines(payload), "\n")
	out := d.taint(text, body)
	if nl == "\r\n" {
		out = strings.ReplaceAll(out, "\n", "\r\n")
	}
	return out, nil
}

// taint works on text with "\n" line endings.
func (d document) taint(text, body string) string {
	switch d.method {
	case "inline":
		lines := strings.Split(text, "\n")
		paras := paragraphs(lines)
		if len(paras) < 2 {
			return appendBlock(text, body)
		}
		end := paras[(len(paras)-1)/2][1] // last line of the middle paragraph
		out := append(append(append([]string{}, lines[:end+1]...), "", body), lines[end+1:]...)
		return strings.Join(out, "\n")
	case "footnote":
		mark := "[" + strconv.Itoa(nextFootnote(text)) + "]"
		block := "____\n" + mark + " " + body
		start, end, ok := footnoteLine(text)
		if !ok {
			return appendBlock(text, block)
		}
		// appendBlock of the text with the mark after the line, in one
		// concatenation. The mark ends the line and the line starts after
		// a line break, so no "\r\n" spans two pieces: newline and the
		// trim of trailing line breaks read the pieces as the whole.
		head, line, tail := text[:start], strings.TrimRight(text[start:end], " \t"), text[end:]
		nl := "\n"
		if strings.Contains(head, "\r\n") || strings.Contains(line, "\r\n") || strings.Contains(tail, "\r\n") {
			nl = "\r\n"
		}
		return head + line + mark + strings.TrimRight(tail, "\r\n") + nl + nl + block + nl
	default:
		return appendBlock(text, body)
	}
}

// nextFootnote returns the number after the highest footnote mark ([1] to
// [999], the matches of `\[(\d{1,3})\]`) in text, or 1, in one pass over
// the text: every document cell's carrier goes through here.
func nextFootnote(text string) int {
	n := 1
	for i := 0; ; i++ {
		j := strings.IndexByte(text[i:], '[')
		if j < 0 {
			return n
		}
		i += j
		k, digits := 0, 0
		for digits < 3 && i+1+digits < len(text) && '0' <= text[i+1+digits] && text[i+1+digits] <= '9' {
			k = 10*k + int(text[i+1+digits]-'0')
			digits++
		}
		if digits > 0 && i+1+digits < len(text) && text[i+1+digits] == ']' && k >= n {
			n = k + 1
		}
	}
}

// footnoteLine returns the line (start and end offsets, without its line
// break) that a footnote mark goes after: the last line of the first
// paragraph (a run of non-blank lines) with a full stop, question or
// exclamation mark in it, else of the first paragraph; ok is false for a
// text of blank lines.
func footnoteLine(text string) (start, end int, ok bool) {
	var first, last [2]int // the first paragraph's last line, the current one's
	paras := 0             // paragraphs so far, the current one included
	inPara, marked := false, false
	for ls := 0; ; {
		le := len(text)
		if j := strings.IndexByte(text[ls:], '\n'); j >= 0 {
			le = ls + j
		}
		if line := text[ls:le]; strings.TrimSpace(line) == "" {
			if inPara && marked {
				return last[0], last[1], true
			}
			inPara, marked = false, false
		} else {
			if !inPara {
				paras++
			}
			inPara = true
			marked = marked || strings.ContainsAny(line, ".!?")
			last = [2]int{ls, le}
			if paras == 1 {
				first = last
			}
		}
		if le == len(text) {
			break
		}
		ls = le + 1
	}
	switch {
	case inPara && marked:
		return last[0], last[1], true
	case paras > 0:
		return first[0], first[1], true
	}
	return 0, 0, false
}

// paragraphs returns the [first, last] line indexes of each run of
// non-blank lines.
func paragraphs(lines []string) [][2]int {
	var out [][2]int
	start := -1
	for i, l := range lines {
		blank := strings.TrimSpace(l) == ""
		switch {
		case !blank && start < 0:
			start = i
		case blank && start >= 0:
			out = append(out, [2]int{start, i - 1})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, [2]int{start, len(lines) - 1})
	}
	return out
}

// TaintFile writes document.txt.
func (d document) TaintFile(dir, data, payload string) (string, error) {
	out, err := d.Taint(orSample(data, documentSample), payload)
	if err != nil {
		return "", err
	}
	return writeFile(dir, "document.txt", out)
}

const documentSample = `Harbourside Branch Library: Facilities Review, Spring 2025

Prepared for the Library Board by the Facilities Working Group

Summary

The branch building is in fair condition overall. The roof membrane replaced in 2019 shows no leaks,
but the heating plant is near the end of its service life and the children's area no longer meets
demand on weekend mornings. We recommend that the board fund a boiler replacement this year and
schedule the children's area expansion for the 2026 capital cycle.

Heating and ventilation

The two gas boilers date from 1998. Both passed their January safety inspection, yet the service
contractor reports worn heat exchangers and rising repair costs: 11,400 in 2024 against 3,900 in
2021. A single condensing boiler with a heat pump for the shoulder seasons would cut gas use by an
estimated 40 percent. Quotes received so far range from 182,000 to 215,000.

Children's area

Saturday story time now draws between 60 and 85 people to a room designed for 40. Moving the local
history collection to the mezzanine would free about 70 square metres next to the current area. The
move itself can be done by staff over two closures; shelving and lighting changes are estimated at
48,000.

Accessibility

The front ramp and the ground-floor toilets meet current standards. The lift to the mezzanine is
reliable but slow, and its call buttons are mounted too high for some wheelchair users; lowering
them is a small job that the working group suggests doing this summer.

Next steps

The working group will bring final boiler quotes to the June meeting and a draft layout for the
children's area to the September meeting. Questions can go to the branch manager, Alana Brooks.
`
