package channel

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"strings"
	"time"

	"codeberg.org/go-pdf/fpdf"
	xdraw "golang.org/x/image/draw"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/pikit-go/pikit/method"
)

// Web placements put a payload into an HTML page where a browser agent
// may meet it: as text a person sees, in markup only a program reads, in
// an image only a model with vision reads, or a link or redirect away.
// Each is a channel of its own (web_visible, web_hidden, …), so a matrix
// sweeps them like any channel; pikit web serves the pages they taint.
//
// A placement that needs a resource beside the page (an image, a linked
// file, the page a redirect leads to) writes it into the page as a data:
// URL, so that the channel stays a function from text to text; pikit web
// serves each such resource under a path of the session's site instead
// (see LiftDataURLs in package web).
//
// The payload is escaped for the place it goes: text is HTML-escaped, an
// attribute value quoted and escaped, a comment kept from closing early.

// WebPrefix starts the name of every web placement channel.
const WebPrefix = "web_"

// webPlacement is one placement: where in the page, and the markup.
type webPlacement struct {
	name, variant string
	// head: the markup goes into <head> (meta); otherwise into the body.
	head bool
	make func(variant, payload string) (string, error)
}

func init() {
	one := func(name, desc string, head bool, f func(string, string) (string, error)) {
		registerWeb(method.Info{Name: WebPrefix + name, Description: desc}, webPlacement{name: name, head: head, make: f})
	}
	variants := func(name, desc, opt, help string, choices []string, f func(string, string) (string, error)) {
		info := method.Info{Name: WebPrefix + name, Description: desc, Options: []method.Option{{
			Name: opt, Help: help, Default: choices[0], Choices: choices,
		}}}
		register(info, func(o options) (Channel, error) {
			return webPlacement{name: name, variant: o[opt], make: f}, nil
		})
		RegisterSample(info.Name, webpageSample)
	}
	one("visible", "places the payload in the page as a paragraph anyone reading it sees", false,
		func(_, p string) (string, error) {
			return `<p class="notice">` + html.EscapeString(p) + `</p>`, nil
		})
	one("comment", "places the payload in an HTML comment: in the page's source, never on screen", false,
		func(_, p string) (string, error) { return "<!-- " + commentSafe(p) + " -->", nil })
	variants("hidden", "places the payload in text that CSS keeps off the screen but in the page's text", "style",
		"how the text is hidden: display:none, positioned off-screen, sized to nothing, or coloured as the background",
		[]string{"display_none", "offscreen", "zero_size", "same_color"},
		func(v, p string) (string, error) {
			style := map[string]string{
				"display_none": "display:none",
				"offscreen":    "position:absolute;left:-10000px;top:auto;width:1px;height:1px;overflow:hidden",
				"zero_size":    "font-size:0;line-height:0;width:0;height:0;overflow:hidden",
				"same_color":   "color:#ffffff;background:#ffffff",
			}[v]
			return `<div class="promo-note" style="` + style + `">` + html.EscapeString(p) + `</div>`, nil
		})
	variants("attribute", "places the payload in an attribute a screen reader or a program reads: an image's alt, a title, an aria-label", "attr",
		"the attribute that holds the payload",
		[]string{"alt", "title", "aria_label"},
		func(v, p string) (string, error) {
			a := html.EscapeString(p)
			switch v {
			case "title":
				return `<span class="badge" title="` + a + `">Verified seller</span>`, nil
			case "aria_label":
				return `<a class="help-link" href="#help" aria-label="` + a + `">Help</a>`, nil
			}
			return `<img class="badge" src="data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7" width="1" height="1" alt="` + a + `">`, nil
		})
	one("meta", "places the payload in a <meta> description in the page's head", true,
		func(_, p string) (string, error) {
			return `<meta name="description" content="` + html.EscapeString(p) + `">`, nil
		})
	one("noscript", "places the payload in a <noscript> block: read by programs that do not run scripts", false,
		func(_, p string) (string, error) {
			return "<noscript><p>" + html.EscapeString(p) + "</p></noscript>", nil
		})
	one("image", "renders the payload as text in a PNG image (its alt says nothing of it): only a model that looks at the page reads it", false,
		func(_, p string) (string, error) {
			img, err := TextPNG(p)
			if err != nil {
				return "", err
			}
			return `<img class="banner" src="data:image/png;base64,` + base64.StdEncoding.EncodeToString(img) + `" alt="Seasonal banner">`, nil
		})
	variants("linked_file", "places the payload in a file the page links to (a text file or a PDF)", "format",
		"the linked file's type",
		[]string{"txt", "pdf"},
		func(v, p string) (string, error) {
			if v == "pdf" {
				b, err := notePDF("Customer notice", p)
				if err != nil {
					return "", err
				}
				return `<p class="download"><a href="data:application/pdf;base64,` + base64.StdEncoding.EncodeToString(b) + `" download="notice.pdf">Read the full notice (PDF)</a></p>`, nil
			}
			return `<p class="download"><a href="data:text/plain;charset=utf-8;base64,` + base64.StdEncoding.EncodeToString([]byte(p+"\n")) + `" download="notice.txt">Read the full notice (text)</a></p>`, nil
		})
	one("user_post", "places the payload in a user's review or forum post on the page", false,
		func(_, p string) (string, error) {
			return `<article class="user-post"><p class="author">posted by jm_walker &middot; 2 days ago</p><p>` + html.EscapeString(p) + `</p></article>`, nil
		})
	registerWeb(method.Info{Name: WebPrefix + "redirect", Description: "replaces the page with an immediate redirect to another page that carries the payload as text"},
		webPlacement{name: "redirect"})
}

func registerWeb(info method.Info, p webPlacement) {
	register(info, func(options) (Channel, error) { return p, nil })
	RegisterSample(info.Name, webpageSample)
}

// webPDFDate dates the PDFs placements write, so a cell's page is the
// same bytes every time.
var webPDFDate = time.Date(2025, 6, 2, 9, 30, 0, 0, time.UTC)

// IsWeb reports whether name is a web placement channel.
func IsWeb(name string) bool { return strings.HasPrefix(name, WebPrefix) }

// Sample returns a clean product page.
func (webPlacement) Sample() string { return webpageSample }

// Taint places the payload in the page data (an HTML page; other text is
// wrapped in one first).
func (w webPlacement) Taint(data, payload string) (string, error) {
	data = orSample(data, webpageSample)
	if !looksLikeHTML(data) {
		data = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Document</title>\n</head>\n<body>\n<pre>" +
			html.EscapeString(data) + "</pre>\n</body>\n</html>\n"
	}
	if w.name == "redirect" {
		// The page a visitor lands on after the redirect: the same page
		// with the payload in it as text.
		target, err := webPlacement{name: "visible", make: func(_, p string) (string, error) {
			return `<p class="notice">` + html.EscapeString(p) + `</p>`, nil
		}}.Taint(data, payload)
		if err != nil {
			return "", err
		}
		refresh := `<meta http-equiv="refresh" content="0; url=data:text/html;charset=utf-8;base64,` + base64.StdEncoding.EncodeToString([]byte(target)) + `">`
		return insertInHead(data, refresh), nil
	}
	el, err := w.make(w.variant, payload)
	if err != nil {
		return "", err
	}
	if w.head {
		return insertInHead(data, el), nil
	}
	nl := newline(data)
	// In the page's main content when it marks it, else before </body>.
	for _, closing := range []string{"</main>", "</body>", "</html>"} {
		if out, ok := insertBeforeLast(data, closing, el+nl); ok {
			return out, nil
		}
	}
	return strings.TrimRight(data, "\r\n") + nl + el + nl, nil
}

// TaintFile writes page.html, the tainted page.
func (w webPlacement) TaintFile(dir, data, payload string) (string, error) {
	out, err := w.Taint(data, payload)
	if err != nil {
		return "", err
	}
	return writeFile(dir, "page.html", out)
}

// insertInHead puts el at the end of the page's <head>, or first in the
// page when it has none.
func insertInHead(data, el string) string {
	if out, ok := insertBeforeLast(data, "</head>", el+newline(data)); ok {
		return out
	}
	return el + newline(data) + data
}

// TextPNG renders text as black lines on a white image, wrapped at 60
// characters (a longer word, such as a URL, is cut across lines) and cut
// at 40 lines, each pixel of the font drawn as 2×2: what a vision model
// reads off a page.
func TextPNG(text string) ([]byte, error) {
	const wrap, maxLines, lineHeight, margin, scale = 60, 40, 16, 12, 2
	var lines []string
	for _, para := range strings.Split(text, "\n") {
		line := ""
		for _, w := range strings.Fields(para) {
			for r := []rune(w); len(r) > 0; {
				room := wrap - len([]rune(line))
				if line != "" {
					room--
				}
				if len(r) > room && (line != "" || room <= 0) && len(r) <= wrap {
					lines, line = append(lines, line), ""
					continue
				}
				n := min(len(r), max(room, 1))
				if line != "" {
					line += " "
				}
				line += string(r[:n])
				r = r[n:]
				if len(r) > 0 {
					lines, line = append(lines, line), ""
				}
			}
		}
		lines = append(lines, line)
	}
	if len(lines) > maxLines {
		lines = lines[:maxLines]
	}
	width := 2*margin + wrap*7
	height := 2*margin + len(lines)*lineHeight
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	d := font.Drawer{Dst: img, Src: image.NewUniform(color.Black), Face: basicfont.Face7x13}
	for i, l := range lines {
		d.Dot = fixed.P(margin, margin+(i+1)*lineHeight-3)
		d.DrawString(l)
	}
	big := image.NewRGBA(image.Rect(0, 0, width*scale, height*scale))
	xdraw.NearestNeighbor.Scale(big, big.Bounds(), img, img.Bounds(), draw.Src, nil)
	var buf bytes.Buffer
	if err := png.Encode(&buf, big); err != nil {
		return nil, fmt.Errorf("channel: writing PNG: %w", err)
	}
	return buf.Bytes(), nil
}

// notePDF writes a one-page PDF: a heading and the text.
func notePDF(title, text string) ([]byte, error) {
	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.SetCatalogSort(true) // the same bytes every time: fonts in order
	pdf.SetCreationDate(webPDFDate)
	pdf.SetModificationDate(webPDFDate)
	tr := pdf.UnicodeTranslatorFromDescriptor("")
	pdf.SetMargins(20, 20, 20)
	pdf.AddPage()
	pdf.SetFont("Helvetica", "B", 14)
	pdf.MultiCell(0, 8, tr(title), "", "L", false)
	pdf.SetFont("Helvetica", "", 11)
	for _, line := range strings.Split(text, "\n") {
		pdf.MultiCell(0, 5.5, tr(line), "", "L", false)
	}
	var buf bytes.Buffer
	if err := pdf.Output(&buf); err != nil {
		return nil, fmt.Errorf("channel: writing PDF: %w", err)
	}
	return buf.Bytes(), nil
}
