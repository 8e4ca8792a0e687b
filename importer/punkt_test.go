package importer

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPunktStarts: sentence starts as NLTK 3.9.1's untrained
// PunktSentenceTokenizer().span_tokenize finds them (the expected offsets
// were read off NLTK; integration's TestBIPIAMiddleAsBIPIA checks many
// more texts against NLTK itself). Offsets are bytes.
func TestPunktStarts(t *testing.T) {
	for _, c := range []struct {
		text string
		want []int
	}{
		// Abbreviations are breaks without training; "Mr." too.
		{"Dear Mr. Okafor, thanks for the call. Dr. Lind will visit on Monday. See you then.", []int{0, 9, 38, 42, 69}},
		// Initials before a capital, and a number before a lowercase word, are not.
		{"The report by J. R. Hale arrived. It covers 3. quarters only. Version 2.5. Next steps follow.", []int{0, 34, 62, 75}},
		// Closing quotes and brackets stay with the sentence before.
		{"She said \"Stop.\" Then she left. (See the note.) Next we talk.", []int{0, 17, 32, 48}},
		// A table with no sentence mark is one sentence.
		{"| Name | Grade |\n| Alder | 7.78 |\n| Birch | 18.2 |", []int{0}},
		// Offsets in bytes: "ö" and "ß" take two.
		{"Die Größe stimmt. Über den Preis reden wir morgen.", []int{0, 20}},
		// An ellipsis is no break; "!!!" is one.
		{"Wait... what happened? Nobody knows!!! Try again.", []int{0, 23, 39}},
		{"", nil},
		{"   ", nil},
	} {
		if got := punktStarts(c.text); !slices.Equal(got, c.want) {
			t.Errorf("punktStarts(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}

// TestPyRandom: the index random.Random(seed).sample(range(n), 1) gives
// in CPython 3.11, for the seeds and sizes below (read off Python).
func TestPyRandom(t *testing.T) {
	sizes := []int{1, 2, 3, 5, 17, 100, 1000}
	for _, c := range []struct {
		seed int64
		want []int
	}{
		{0, []int{0, 1, 1, 3, 12, 49, 864}},
		{7, []int{0, 1, 1, 2, 10, 41, 331}},
		{2023, []int{0, 1, 1, 3, 12, 49, 392}},
		{123456789, []int{0, 1, 2, 3, 14, 82, 656}},
		{1 << 40, []int{0, 0, 0, 0, 3, 13, 106}},
		{-5, []int{0, 1, 2, 4, 8, 79, 637}},
	} {
		var got []int
		for _, n := range sizes {
			got = append(got, newPyRandom(c.seed).randbelow(n))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("seed %d: %v, want %v", c.seed, got, c.want)
		}
	}
}

// TestPunktHostile: the splitter is linear on texts made of sentence
// marks and initials, which a hostile benchmark file could hold.
func TestPunktHostile(t *testing.T) {
	for _, s := range []string{strings.Repeat("?", 300_000), strings.Repeat("J. ", 100_000), strings.Repeat(". ", 150_000)} {
		start := time.Now()
		punktStarts(s)
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%q…: %v for %d bytes", s[:6], d, len(s))
		}
	}
}
