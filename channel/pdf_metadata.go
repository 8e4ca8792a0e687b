package channel

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/pikit-go/pikit/internal/lazy"

	"codeberg.org/go-pdf/fpdf"

	"github.com/pikit-go/pikit/method"
)

func init() {
	register(method.Info{
		Name:        "pdf_metadata",
		Description: "hides the payload in a PDF's document information (title, author, subject, keywords or a custom entry); text mode, and file mode's delivery, render the metadata and body as a PDF tool prints them",
		Options: []method.Option{{
			Name:    "field",
			Help:    "the Info dictionary entry that carries the payload (appended to the existing value); custom: the entry named by custom_key",
			Default: "keywords",
			Choices: []string{"title", "author", "subject", "keywords", "custom"},
		}, {
			Name:    "custom_key",
			Help:    "the Info dictionary key field = \"custom\" writes (letters, digits, '-' and '_', starting with a letter)",
			Default: "Comments",
		}},
	}, func(o options) (Channel, error) {
		if !pdfCustomKey().MatchString(o["custom_key"]) || isPDFKey(o["custom_key"]) {
			return nil, factoryOptionError("pdf_metadata", "custom_key",
				fmt.Sprintf("%q is not a custom document information key (letters, digits, '-' and '_', starting with a letter, not a standard key)", o["custom_key"]), nil)
		}
		return pdfMetadata{field: o["field"], custom: o["custom_key"]}, nil
	})
	RegisterSample("pdf", pdfSample)
}

// pdfMetadata hides a payload in a PDF's Info dictionary.
type pdfMetadata struct{ field, custom string }

// pdfCustomKey is a key a custom Info entry may have: a PDF name whose
// text rendering reads back as the same key.
var pdfCustomKey = lazy.Regexp(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)

var (
	_ Channel    = pdfMetadata{}
	_ Sampler    = pdfMetadata{}
	_ FileWriter = pdfMetadata{}
)

// Sample returns a clean PDF rendered as text: its metadata, in the layout
// of pdfinfo, then the text of its pages.
func (pdfMetadata) Sample() string { return pdfSample }

// pdfKeys are the metadata lines the text rendering knows, in print order.
var pdfKeys = []string{"Title", "Subject", "Keywords", "Author", "Creator", "Producer", "CreationDate", "ModDate", "Pages", "Page size", "PDF version"}

var pdfKeyLine = lazy.Regexp(`^([A-Za-z][A-Za-z0-9 _-]*):\s*(.*)$`)

// pdfDoc is a PDF seen as metadata entries plus body text.
type pdfDoc struct {
	keys   []string
	values map[string]string
	body   string
}

// parsePDFText reads the text rendering. Text that does not start with a
// known metadata line is all body.
func parsePDFText(data string) pdfDoc {
	d := pdfDoc{values: map[string]string{}}
	text := strings.ReplaceAll(data, "\r\n", "\n")
	first, _, _ := strings.Cut(text, "\n")
	if m := pdfKeyLine().FindStringSubmatch(first); m == nil || !isPDFKey(m[1]) {
		d.body = text
		return d
	}
	lines := strings.Split(text, "\n")
	i := 0
	for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
		l := lines[i]
		if (l[0] == ' ' || l[0] == '\t') && len(d.keys) > 0 {
			k := d.keys[len(d.keys)-1]
			d.values[k] += "\n" + strings.TrimLeft(l, " \t")
			continue
		}
		if m := pdfKeyLine().FindStringSubmatch(l); m != nil {
			if _, dup := d.values[m[1]]; !dup {
				d.keys = append(d.keys, m[1])
			}
			d.values[m[1]] = m[2]
			continue
		}
		break // not metadata: the body starts here
	}
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	d.body = strings.Join(lines[i:], "\n")
	return d
}

func isPDFKey(k string) bool {
	for _, p := range pdfKeys {
		if p == k {
			return true
		}
	}
	return false
}

// String renders the document: padded metadata lines (continuation lines of
// a multi-line value indented to the value column), a blank line, the body.
func (d pdfDoc) String() string {
	const col = 16
	var b strings.Builder
	for _, k := range d.keys {
		label := k + ":"
		b.WriteString(label + strings.Repeat(" ", max(1, col-len(label))))
		b.WriteString(indentLines(d.values[k], strings.Repeat(" ", col), "\n"))
		b.WriteString("\n")
	}
	if len(d.keys) > 0 {
		b.WriteString("\n")
	}
	b.WriteString(d.body)
	return b.String()
}

// key is the metadata label of the channel's field.
func (p pdfMetadata) key() string {
	if p.field == "custom" {
		return p.custom
	}
	return strings.ToUpper(p.field[:1]) + p.field[1:]
}

func (p pdfMetadata) taint(data, payload string) pdfDoc {
	d := parsePDFText(data)
	k := p.key()
	old, ok := d.values[k]
	if !ok {
		// Insert the entry in print order.
		at := len(d.keys)
		for i, existing := range d.keys {
			if indexOf(pdfKeys, existing) > indexOf(pdfKeys, k) {
				at = i
				break
			}
		}
		d.keys = append(d.keys[:at], append([]string{k}, d.keys[at:]...)...)
	}
	switch {
	case strings.TrimSpace(old) == "":
		d.values[k] = payload
	case p.field == "keywords":
		d.values[k] = old + ", " + payload
	default:
		d.values[k] = old + " " + payload
	}
	return d
}

func indexOf(list []string, s string) int {
	for i, e := range list {
		if e == s {
			return i
		}
	}
	return len(list)
}

// Taint appends the payload to the field in the text rendering (adding the
// field when missing; text with no metadata block gets one).
func (p pdfMetadata) Taint(data, payload string) (string, error) {
	out := p.taint(data, payload).String()
	if newline(data) == "\r\n" {
		out = strings.ReplaceAll(out, "\n", "\r\n")
	}
	return out, nil
}

// TaintFile writes document.pdf: the metadata entries go into the Info
// dictionary (as UTF-16 when they are not plain ASCII) and the body, split
// at "--- page N ---" lines, onto the pages.
func (p pdfMetadata) TaintFile(dir, data, payload string) (string, error) {
	d := p.taint(orSample(data, pdfSample), payload)
	pdf := fpdf.New("P", "mm", "A4", "")
	date := time.Date(2025, 5, 19, 10, 4, 0, 0, time.UTC)
	if t, err := time.Parse(time.RFC3339, d.values["CreationDate"]); err == nil {
		date = t
	}
	pdf.SetCreationDate(date)
	pdf.SetModificationDate(date)
	setters := map[string]func(string, bool){
		"Title": pdf.SetTitle, "Author": pdf.SetAuthor, "Subject": pdf.SetSubject,
		"Keywords": pdf.SetKeywords, "Creator": pdf.SetCreator, "Producer": pdf.SetProducer,
	}
	for k, set := range setters {
		if v, ok := d.values[k]; ok {
			set(pdfText(v), false)
		}
	}
	tr := pdf.UnicodeTranslatorFromDescriptor("")
	pdf.SetMargins(20, 20, 20)
	pdf.SetFont("Helvetica", "", 11)
	pdf.AddPage()
	started := false
	for _, line := range strings.Split(d.body, "\n") {
		if strings.HasPrefix(line, "--- page ") && strings.HasSuffix(line, " ---") {
			if started {
				pdf.AddPage()
			}
			started = true
			continue
		}
		started = true
		pdf.MultiCell(0, 5.5, tr(line), "", "L", false)
	}
	var buf bytes.Buffer
	if err := pdf.Output(&buf); err != nil {
		return "", fmt.Errorf("channel: writing PDF: %w", err)
	}
	out := buf.Bytes()
	for _, k := range d.keys {
		if _, standard := setters[k]; standard || isPDFKey(k) || !pdfCustomKey().MatchString(k) {
			continue
		}
		var err error
		if out, err = addInfoEntry(out, k, pdfText(d.values[k])); err != nil {
			return "", err
		}
	}
	return writeFile(dir, "document.pdf", string(out))
}

// addInfoEntry adds /key (value) to the Info dictionary of a PDF that fpdf
// wrote (fpdf has no custom entries), moving the cross-reference offsets
// of the objects after it and startxref by the bytes added.
func addInfoEntry(pdf []byte, key, value string) ([]byte, error) {
	bad := fmt.Errorf("channel: writing PDF: no Info dictionary to add /%s to", key)
	i := bytes.Index(pdf, []byte("/CreationDate "))
	if i < 0 {
		return nil, bad
	}
	end := bytes.Index(pdf[i:], []byte("\n>>"))
	if end < 0 {
		return nil, bad
	}
	at := i + end
	entry := []byte("\n/" + key + " (" + pdfEscape(value) + ")")
	out := append(append(append([]byte{}, pdf[:at]...), entry...), pdf[at:]...)
	xref := bytes.LastIndex(out, []byte("\nxref\n"))
	if xref < 0 {
		return nil, bad
	}
	// Entries are "oooooooooo ggggg n\n" (20 bytes with the line end).
	entries := regexp.MustCompile(`(?m)^(\d{10}) (\d{5}) n`)
	tail := entries.ReplaceAllFunc(out[xref:], func(m []byte) []byte {
		off, _ := strconv.Atoi(string(m[:10]))
		if off > at {
			off += len(entry)
		}
		return fmt.Appendf(nil, "%010d%s", off, m[10:])
	})
	start := regexp.MustCompile(`startxref\n(\d+)`)
	tail = start.ReplaceAllFunc(tail, func(m []byte) []byte {
		n, _ := strconv.Atoi(string(start.FindSubmatch(m)[1]))
		return fmt.Appendf(nil, "startxref\n%d", n+len(entry))
	})
	return append(out[:xref:xref], tail...), nil
}

// pdfEscape escapes s for a PDF literal string.
func pdfEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "(", `\(`, ")", `\)`, "\r", `\r`)
	return r.Replace(s)
}

// pdfText encodes s as a PDF text string's bytes: as-is when it is
// printable ASCII, else UTF-16BE with a byte-order mark (surrogate pairs
// included, which fpdf's own conversion lacks).
func pdfText(s string) string {
	plain := true
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	units := utf16.Encode([]rune(strings.ToValidUTF8(s, "\uFFFD")))
	b := make([]byte, 2, 2+2*len(units))
	b[0], b[1] = 0xFE, 0xFF
	for _, u := range units {
		b = append(b, byte(u>>8), byte(u))
	}
	return string(b)
}

const pdfSample = `Title:          Harbor Line Ferry Service: 2025 Rider Survey
Subject:        Results of the spring passenger survey on the Harbor Line
Keywords:       ferry, ridership, survey, accessibility
Author:         Planning and Research Office, Bayside Transit Authority
Creator:        Writer
Producer:       LibreOffice 24.8
CreationDate:   2025-05-19T10:04:00Z
Pages:          2

--- page 1 ---
Harbor Line Ferry Service: 2025 Rider Survey

Between 3 and 28 March we surveyed 1,846 riders on all four Harbor Line routes, in person at the
terminals and online through the fare app. The response rate among boarding passengers was 31 percent.

Overall satisfaction rose to 78 percent, up from 71 percent in 2024. Riders credited the new
timetable, which adds a 15-minute peak service between Pier 9 and Eastport, and the return of
the café on the two larger vessels.

--- page 2 ---
Concerns and next steps

The most common complaint was crowding on the 07:45 and 08:00 sailings from Eastport (cited by
38 percent of morning riders), followed by the lack of step-free boarding at Willow Quay at low tide.
The authority will trial a third morning sailing from September and has asked the port for a
floating pontoon at Willow Quay in the 2026 capital plan.

Full tables by route and time of day are in the appendix, available on request.
`
