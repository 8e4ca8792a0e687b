package channel

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/pikit-go/pikit/internal/lazy"
)

var _ FileReader = pdfMetadata{}

// ReadFile returns what a document tool hands a model for the PDF at path:
// its document information in pdfinfo's layout (the standard entries, then
// any others, then the page count), a blank line, and the text of each page
// under a "--- page N ---" line; the same layout Taint writes in text mode.
// It reads the PDFs TaintFile writes (uncompressed or Flate-compressed
// content streams, text shown with Tj or TJ), not every PDF there is.
func (pdfMetadata) ReadFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("channel: %w", err)
	}
	text, err := extractPDFText(b)
	if err != nil {
		return "", fmt.Errorf("channel: %s: %w", path, err)
	}
	return text, nil
}

// PDFText is ReadFile for a PDF already read into memory (a carrier a
// config names, read through a bounded, confined open).
func PDFText(b []byte) (string, error) {
	return extractPDFText(b)
}

var (
	pdfObjRE   = lazy.Regexp(`(?m)^(\d+) 0 obj\b`)
	pdfRefRE   = func(key string) *regexp.Regexp { return regexp.MustCompile(`/` + key + `\s+(\d+)\s+0\s+R`) }
	pdfInfoRef = pdfRefRE("Info")
	pdfRootRef = pdfRefRE("Root")
	pdfKidsRE  = lazy.Regexp(`/Kids\s*\[([^\]]*)\]`)
	pdfRefsRE  = lazy.Regexp(`(\d+)\s+0\s+R`)
	pdfNameRE  = lazy.Regexp(`/([A-Za-z][A-Za-z0-9_-]*)\s*\(`)
)

// extractPDFText renders a PDF's metadata and page text.
func extractPDFText(pdf []byte) (string, error) {
	if !bytes.HasPrefix(pdf, []byte("%PDF-")) {
		return "", fmt.Errorf("not a PDF")
	}
	objs := map[string][]byte{}
	locs := pdfObjRE().FindAllSubmatchIndex(pdf, -1)
	for i, l := range locs {
		end := len(pdf)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		body := pdf[l[1]:end]
		if j := bytes.LastIndex(body, []byte("endobj")); j >= 0 {
			body = body[:j]
		}
		objs[string(pdf[l[2]:l[3]])] = body
	}
	trailer := pdf[bytes.LastIndex(pdf, []byte("trailer")):]
	doc := pdfDoc{values: map[string]string{}}
	if m := pdfInfoRef.FindSubmatch(trailer); m != nil {
		info := objs[string(m[1])]
		var others []string
		for _, loc := range pdfNameRE().FindAllSubmatchIndex(info, -1) {
			key := string(info[loc[2]:loc[3]])
			raw, _ := pdfLiteral(info[loc[1]-1:])
			v := pdfDecodeText(raw)
			if key == "CreationDate" || key == "ModDate" {
				v = pdfDate(v)
			}
			if _, dup := doc.values[key]; dup {
				continue
			}
			doc.values[key] = v
			if !isPDFKey(key) {
				others = append(others, key)
			}
		}
		for _, k := range pdfKeys {
			if _, ok := doc.values[k]; ok {
				doc.keys = append(doc.keys, k)
			}
		}
		doc.keys = append(doc.keys, others...)
	}
	var pages []string
	if m := pdfRootRef.FindSubmatch(trailer); m != nil {
		pages = pdfPages(objs, string(m[1]), 0)
	}
	doc.values["Pages"] = strconv.Itoa(len(pages))
	at := len(doc.keys)
	if i := slices.Index(doc.keys, "ModDate"); i >= 0 {
		at = i + 1
	} else if i := slices.Index(doc.keys, "CreationDate"); i >= 0 {
		at = i + 1
	}
	doc.keys = slices.Insert(doc.keys, at, "Pages")
	var body strings.Builder
	for i, p := range pages {
		if i > 0 {
			body.WriteString("\n")
		}
		fmt.Fprintf(&body, "--- page %d ---\n", i+1)
		text, err := pdfPageText(objs, objs[p])
		if err != nil {
			return "", fmt.Errorf("page %d: %w", i+1, err)
		}
		body.WriteString(text)
	}
	doc.body = body.String()
	return doc.String(), nil
}

// pdfPages returns the page objects under the page tree node n, in order.
func pdfPages(objs map[string][]byte, n string, depth int) []string {
	obj := objs[n]
	if depth > 32 || obj == nil {
		return nil
	}
	if m := pdfKidsRE().FindSubmatch(obj); m != nil {
		var out []string
		for _, r := range pdfRefsRE().FindAllSubmatch(m[1], -1) {
			out = append(out, pdfPages(objs, string(r[1]), depth+1)...)
		}
		return out
	}
	if m := pdfRefRE("Pages").FindSubmatch(obj); m != nil && bytes.Contains(obj, []byte("/Type /Catalog")) {
		return pdfPages(objs, string(m[1]), depth+1)
	}
	if bytes.Contains(obj, []byte("/Type /Page")) {
		return []string{n}
	}
	return nil
}

// pdfStream returns the decoded stream of an object.
func pdfStream(obj []byte) ([]byte, error) {
	i := bytes.Index(obj, []byte("stream"))
	j := bytes.LastIndex(obj, []byte("endstream"))
	if i < 0 || j < i {
		return nil, nil
	}
	data := obj[i+len("stream") : j]
	data = bytes.TrimPrefix(bytes.TrimPrefix(data, []byte("\r")), []byte("\n"))
	if !bytes.Contains(obj[:i], []byte("/FlateDecode")) {
		return data, nil
	}
	r, err := zlib.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	// A stream is bounded: a PDF a user names could hold a small stream
	// that inflates without end.
	out, err := io.ReadAll(io.LimitReader(r, maxPDFStream+1))
	if err == nil && len(out) > maxPDFStream {
		err = fmt.Errorf("a content stream inflates past %d bytes", maxPDFStream)
	}
	return out, err
}

// maxPDFStream bounds one decoded content stream.
const maxPDFStream = 16 << 20

// pdfPageText returns a page's text a line per text object, with the blank
// lines its vertical gaps stand for.
func pdfPageText(objs map[string][]byte, page []byte) (string, error) {
	type line struct {
		y    float64
		text string
	}
	var lines []line
	for _, ref := range pdfContents(page) {
		content, err := pdfStream(objs[ref])
		if err != nil {
			return "", err
		}
		var nums []float64
		y := 0.0
		var cur strings.Builder
		started := false
		for len(content) > 0 {
			c := content[0]
			switch {
			case c == '(':
				raw, n := pdfLiteral(content)
				cur.WriteString(cp1252(raw))
				started = true
				content = content[n:]
				continue
			case c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '[' || c == ']':
				content = content[1:]
				continue
			}
			end := bytes.IndexAny(content, " \n\r\t([]")
			if end < 0 {
				end = len(content)
			}
			tok := string(content[:end])
			content = content[end:]
			if f, err := strconv.ParseFloat(tok, 64); err == nil {
				nums = append(nums, f)
				continue
			}
			switch tok {
			case "Td", "TD":
				if len(nums) >= 2 {
					y = nums[len(nums)-1]
				}
			case "Tm":
				if len(nums) >= 6 {
					y = nums[len(nums)-1]
				}
			case "ET":
				if started {
					lines = append(lines, line{y, cur.String()})
				}
				cur.Reset()
				started = false
			}
			nums = nums[:0]
		}
	}
	gap := math.Inf(1)
	for i := 1; i < len(lines); i++ {
		if d := lines[i-1].y - lines[i].y; d > 0.5 && d < gap {
			gap = d
		}
	}
	var b strings.Builder
	for i, l := range lines {
		if i > 0 && !math.IsInf(gap, 1) {
			blank := int(math.Round((lines[i-1].y-l.y)/gap)) - 1
			b.WriteString(strings.Repeat("\n", min(max(blank, 0), 3)))
		}
		b.WriteString(l.text + "\n")
	}
	return b.String(), nil
}

// pdfContents returns a page's content stream objects.
func pdfContents(page []byte) []string {
	i := bytes.Index(page, []byte("/Contents"))
	if i < 0 {
		return nil
	}
	rest := bytes.TrimLeft(page[i+len("/Contents"):], " \n\r\t")
	if len(rest) > 0 && rest[0] == '[' {
		rest = rest[:max(bytes.IndexByte(rest, ']'), 0)]
	} else if m := pdfRefsRE().FindIndex(rest); m != nil {
		rest = rest[:m[1]]
	}
	var out []string
	for _, r := range pdfRefsRE().FindAllSubmatch(rest, -1) {
		out = append(out, string(r[1]))
	}
	return out
}

// pdfLiteral reads the literal string at the start of b ("(...)", nested
// parentheses and escapes), returning its bytes and the length read.
func pdfLiteral(b []byte) (string, int) {
	var out []byte
	depth := 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '(':
			if depth > 0 {
				out = append(out, c)
			}
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				return string(out), i + 1
			}
			out = append(out, c)
		case c == '\\' && i+1 < len(b):
			i++
			switch e := b[i]; e {
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case '\r', '\n': // a line continuation
				if e == '\r' && i+1 < len(b) && b[i+1] == '\n' {
					i++
				}
			default:
				if e >= '0' && e <= '7' {
					k := i
					for k < len(b) && k < i+3 && b[k] >= '0' && b[k] <= '7' {
						k++
					}
					n, _ := strconv.ParseUint(string(b[i:k]), 8, 8)
					out = append(out, byte(n))
					i = k - 1
				} else {
					out = append(out, e)
				}
			}
		default:
			out = append(out, c)
		}
	}
	return string(out), len(b)
}

// pdfDecodeText decodes a text string: UTF-16BE after a byte-order mark,
// else PDFDocEncoding, read as Latin-1 (the same for printable ASCII).
func pdfDecodeText(s string) string {
	if strings.HasPrefix(s, "\xfe\xff") {
		b := []byte(s[2:])
		u := make([]uint16, len(b)/2)
		for i := range u {
			u[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
		}
		return string(utf16.Decode(u))
	}
	r := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		r[i] = rune(s[i])
	}
	return string(r)
}

// pdfDate turns "D:YYYYMMDDHHmmSS..." into RFC 3339 (UTC when no offset is
// given); anything else is returned as it is.
func pdfDate(s string) string {
	d, ok := strings.CutPrefix(s, "D:")
	if !ok || len(d) < 14 {
		return s
	}
	t, err := time.Parse("20060102150405", d[:14])
	if err != nil {
		return s
	}
	return t.Format(time.RFC3339)
}

// cp1252 decodes the single-byte text fpdf's core fonts show.
func cp1252(s string) string {
	const high = "€\uFFFD‚ƒ„…†‡ˆ‰Š‹Œ\uFFFDŽ\uFFFD\uFFFD‘’“”•–—˜™š›œ\uFFFDžŸ"
	hi := []rune(high)
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 0x80 && c < 0xa0:
			b.WriteRune(hi[c-0x80])
		default:
			b.WriteRune(rune(c))
		}
	}
	return b.String()
}
