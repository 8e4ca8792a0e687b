package channel

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// footnotePlain is the footnote method as it was first written: the text
// split into lines and paragraphs, the marks found by a regular
// expression, the lines joined again. The one-pass version is held to it.
func footnotePlain(text, body string) string {
	lines := strings.Split(text, "\n")
	paras := paragraphs(lines)
	n := 1
	for _, m := range regexp.MustCompile(`\[(\d{1,3})\]`).FindAllStringSubmatch(text, -1) {
		if k, _ := strconv.Atoi(m[1]); k >= n {
			n = k + 1
		}
	}
	mark := fmt.Sprintf("[%d]", n)
	if len(paras) > 0 {
		p := paras[0]
		for _, q := range paras {
			if strings.ContainsAny(strings.Join(lines[q[0]:q[1]+1], " "), ".!?") {
				p = q
				break
			}
		}
		lines[p[1]] = strings.TrimRight(lines[p[1]], " \t") + mark
	}
	return appendBlock(strings.Join(lines, "\n"), "____\n"+mark+" "+body)
}

// documentBits are the pieces randomDocument puts together: lines with and
// without sentence marks, blank lines of every kind of space, footnote
// marks valid and not, trailing spaces and tabs, carriage returns.
var documentBits = []string{
	"A line with a full stop.", "no mark here", "Question?", "Wow!", "x", "  ", "\t", " \t ", "\u00a0", "\u3000", "\n", "\n\n", "\r", "\r\n", "\r\r\n",
	"[1]", "[12]", "[999]", "[1000]", "[0]", "[07]", "[]", "[a]", "[[3]]", "[4", "5]", "[x1]", "[１]", "trailing  ", "tab\t", "é.", "…", "3.5",
}

// TestFootnoteAsThePlainTaint: the footnote method gives what the
// line-splitting version gives, on the samples, on every channel test
// carrier, and on random documents of troublesome pieces.
func TestFootnoteAsThePlainTaint(t *testing.T) {
	d := document{method: "footnote"}
	check := func(text string) {
		t.Helper()
		if got, want := d.taint(text, "PAYLOAD line\nsecond"), footnotePlain(text, "PAYLOAD line\nsecond"); got != want {
			t.Fatalf("taint(%q) =\n%q, want\n%q", text, got, want)
		}
	}
	check(documentSample)
	check("")
	check("\n")
	for _, s := range samples {
		check(strings.ReplaceAll(s, "\r\n", "\n"))
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for range 100_000 {
		var b strings.Builder
		for range rng.IntN(24) {
			b.WriteString(documentBits[rng.IntN(len(documentBits))])
			if rng.IntN(3) == 0 {
				b.WriteByte('\n')
			}
		}
		check(b.String())
	}
}

// FuzzFootnote compares the footnote method with the plain one on any
// text.
func FuzzFootnote(f *testing.F) {
	f.Add(documentSample)
	f.Add("[12] a.\n\n[999]\n \nb!\n")
	d := document{method: "footnote"}
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := d.taint(text, "P"), footnotePlain(text, "P"); got != want {
			t.Fatalf("taint(%q) = %q, want %q", text, got, want)
		}
	})
}
