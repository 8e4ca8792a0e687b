package channel

import (
	"regexp"

	"github.com/pikit-go/pikit/method"
)

func init() {
	register(method.Info{
		Name:        "translation",
		Description: "hides the payload in a bilingual translation job: a segment's source text, its translator note or its translation",
		Options: []method.Option{{
			Name:    "field",
			Help:    "the part of the job's middle segment that the payload is appended to (a note is added when the segment has none)",
			Default: "note",
			Choices: []string{"source", "note", "translation"},
		}},
	}, func(o options) (Channel, error) { return translation{field: o["field"]}, nil })
	RegisterSample("translation", translationSample)
}

// translation hides a payload in a translation job laid out segment by
// segment.
type translation struct{ field string }

var (
	_ Channel    = translation{}
	_ Sampler    = translation{}
	_ FileWriter = translation{}
)

// Sample returns a clean English-to-German translation job.
func (translation) Sample() string { return translationSample }

var segmentLine = regexp.MustCompile(`^(?i:segment)\s+\d+`)

// Taint appends the payload to the chosen part of the middle segment. Text
// with no segments gets the field appended on its own.
func (t translation) Taint(data, payload string) (string, error) {
	label := map[string]string{"source": "Source", "note": "Note", "translation": "Translation"}[t.field]
	return addToField(data, segmentLine.MatchString, label, "Translation", " ", payload), nil
}

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
