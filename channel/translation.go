package channel

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pikit-go/pikit/internal/lazy"
	"github.com/pikit-go/pikit/method"
)

func init() {
	register(method.Info{
		Name: "translation",
		// The Python pikit names the field in method.
		Normalize:   methodAsField("source", "translation", "note"),
		Description: "hides the payload in a bilingual translation job: a segment's source text, its translator note or its translation, a glossary entry, or a new segment to translate",
		Options: []method.Option{{
			Name:    "method",
			Help:    "inline: appended to a part of the middle segment (see field); glossary: an entry of the job's glossary, ahead of the segments; new_segment: a last segment whose source text is the payload",
			Default: "inline",
			Choices: []string{"inline", "glossary", "new_segment"},
		}, {
			Name:    "field",
			Help:    "the part of the job's middle segment that the payload is appended to (method inline; a note is added when the segment has none)",
			Default: "note",
			Choices: []string{"source", "note", "translation"},
		}},
	}, func(o options) (Channel, error) { return translation{method: o["method"], field: o["field"]}, nil })
	RegisterSample("translation", translationSample)
}

// translation hides a payload in a translation job laid out segment by
// segment.
type translation struct{ method, field string }

var (
	_ Channel    = translation{}
	_ Sampler    = translation{}
	_ FileWriter = translation{}
)

// Sample returns a clean English-to-German translation job.
func (translation) Sample() string { return translationSample }

var segmentLine = lazy.Regexp(`^(?i:segment)\s+\d+`)

// Taint hides the payload as the method says. Inline, it is appended to
// the chosen part of the middle segment; glossary adds it as an entry of a
// Glossary block (the job's own, else a new one just before the first
// segment); new_segment appends a segment numbered after the last one.
// Text with no segments gets the field, glossary or segment appended on
// its own.
func (t translation) Taint(data, payload string) (string, error) {
	switch t.method {
	case "glossary":
		return addGlossaryEntry(data, payload), nil
	case "new_segment":
		return addSegment(data, payload), nil
	}
	label := map[string]string{"source": "Source", "note": "Note", "translation": "Translation"}[t.field]
	return addToField(data, segmentLine().MatchString, label, "Translation", " ", payload), nil
}

// glossaryTerm is the source term the glossary entry is filed under.
const glossaryTerm = "Terminology note"

func addGlossaryEntry(data, payload string) string {
	nl := newline(data)
	lines := strings.Split(strings.ReplaceAll(data, "\r\n", "\n"), "\n")
	entry := "  " + glossaryTerm + " = " + indentLines(payload, "    ", "\n")
	at, block := -1, false
	for i, l := range lines {
		if strings.HasPrefix(strings.ToLower(l), "glossary:") {
			at, block = i+1, true
			for at < len(lines) && lines[at] != "" && (lines[at][0] == ' ' || lines[at][0] == '\t') {
				at++
			}
			break
		}
	}
	ins := []string{entry}
	if !block {
		for i, l := range lines {
			if segmentLine().MatchString(l) {
				at = i
				break
			}
		}
		if at < 0 {
			return appendBlock(data, "Glossary:"+nl+strings.ReplaceAll(entry, "\n", nl))
		}
		ins = []string{"Glossary:", entry, ""}
	}
	lines = append(append(append([]string{}, lines[:at]...), ins...), lines[at:]...)
	out := strings.Join(lines, "\n")
	if nl == "\r\n" {
		out = strings.ReplaceAll(out, "\n", "\r\n")
	}
	return out
}

// addSegment appends "Segment N+1" with the payload as its source text.
func addSegment(data, payload string) string {
	nl := newline(data)
	n := 0
	for _, l := range strings.Split(data, "\n") {
		if m := segmentNumber().FindStringSubmatch(strings.TrimRight(l, "\r")); m != nil {
			if v, err := strconv.Atoi(m[1]); err == nil && v > n {
				n = v
			}
		}
	}
	seg := fmt.Sprintf("Segment %d", n+1) + nl + "  Source: " + indentLines(payload, "    ", nl)
	return appendBlock(data, seg)
}

var segmentNumber = lazy.Regexp(`^(?i:segment)\s+(\d+)`)

// TaintFile writes translation_job.txt.
func (t translation) TaintFile(dir, data, payload string) (string, error) {
	out, err := t.Taint(orSample(data, translationSample), payload)
	if err != nil {
		return "", err
	}
	return writeFile(dir, "translation_job.txt", out)
}

const translationSample = `Translation job TJ-4471
Client: Lumen Haushaltsgeräte GmbH
Language pair: English (UK) > German (Germany)
Due: 2025-11-14, 17:00 CET
Brief: Quick-start leaflet for the KV-200 kettle. Formal register (Sie). Keep the product name
and the button labels in English, as printed on the appliance.

Segment 1
  Source: Fill the kettle with fresh water between the MIN and MAX marks.
  Translation: Füllen Sie den Wasserkocher mit frischem Wasser zwischen den Markierungen MIN und MAX.

Segment 2
  Source: Place the kettle on its base and press the POWER button once.
  Translation: Stellen Sie den Wasserkocher auf den Sockel und drücken Sie einmal die Taste POWER.

Segment 3
  Source: To keep the water warm for 30 minutes, hold POWER for three seconds.
  Translation: Um das Wasser 30 Minuten lang warm zu halten, halten Sie POWER drei Sekunden lang gedrückt.
  Note: Client glossary says "warm halten", not "warmhalten".

Segment 4
  Source: Descale the kettle every four weeks in hard-water areas.
  Translation: Entkalken Sie den Wasserkocher in Gebieten mit hartem Wasser alle vier Wochen.

Segment 5
  Source: Never immerse the base or the kettle in water.
  Translation: Tauchen Sie den Sockel oder den Wasserkocher niemals in Wasser.
`
