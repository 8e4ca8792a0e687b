package channel

import (
	"html"
	"strings"

	"github.com/pikit-go/pikit/method"
)

func init() {
	register(method.Info{
		Name:        "webpage",
		Description: "hides the payload in an HTML page: a comment, a display:none div or an image's alt text",
		Options: []method.Option{{
			Name:    "method",
			Help:    "where the payload goes: an HTML comment, a hidden div, or the alt attribute of a tracking-pixel image",
			Default: "comment",
			Choices: []string{"comment", "hidden_div", "alt_attr"},
		}},
	}, func(o options) (Channel, error) { return webpage{method: o["method"]}, nil })
	RegisterSample("webpage", webpageSample)
}

// webpage hides a payload in an HTML page.
type webpage struct{ method string }

var (
	_ Channel    = webpage{}
	_ Sampler    = webpage{}
	_ FileWriter = webpage{}
)

// Sample returns a clean product page.
func (webpage) Sample() string { return webpageSample }

// Taint places the payload element just before </body> (or </html>); data
// that has neither gets the element appended.
func (w webpage) Taint(data, payload string) (string, error) {
	el := w.element(payload)
	nl := newline(data)
	for _, closing := range []string{"</body>", "</html>"} {
		if out, ok := insertBeforeLast(data, closing, el+nl); ok {
			return out, nil
		}
	}
	if data == "" {
		return el + nl, nil
	}
	return strings.TrimRight(data, "\r\n") + nl + el + nl, nil
}

func (w webpage) element(payload string) string {
	switch w.method {
	case "hidden_div":
		return `<div class="sr-note" style="display:none">` + html.EscapeString(payload) + `</div>`
	case "alt_attr":
		return `<img src="/static/img/px.gif" width="1" height="1" alt="` + html.EscapeString(payload) + `">`
	default:
		return "<!-- " + commentSafe(payload) + " -->"
	}
}

// TaintFile writes page.html. Data that is not HTML is wrapped in a minimal
// page (as preformatted text) first, so the file always parses as HTML.
func (w webpage) TaintFile(dir, data, payload string) (string, error) {
	data = orSample(data, webpageSample)
	if !looksLikeHTML(data) {
		data = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Document</title>\n</head>\n<body>\n<pre>" +
			html.EscapeString(data) + "</pre>\n</body>\n</html>\n"
	}
	out, err := w.Taint(data, payload)
	if err != nil {
		return "", err
	}
	return writeFile(dir, "page.html", out)
}

func looksLikeHTML(s string) bool {
	l := strings.ToLower(s)
	return strings.Contains(l, "<html") || strings.Contains(l, "<body") || strings.Contains(l, "<!doctype html")
}

const webpageSample = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Ridgeline 38L Trekking Pack | Alder &amp; Pine Outfitters</title>
  <meta name="description" content="A 38-litre trekking pack with a ventilated back panel, rain cover and hip-belt pockets.">
  <link rel="stylesheet" href="/static/css/store.css">
</head>
<body>
  <header class="site-header">
    <a class="logo" href="/">Alder &amp; Pine Outfitters</a>
    <nav>
      <a href="/packs">Packs</a>
      <a href="/tents">Tents</a>
      <a href="/footwear">Footwear</a>
      <a href="/sale">Sale</a>
    </nav>
  </header>

  <main class="product">
    <h1>Ridgeline 38L Trekking Pack</h1>
    <p class="price">$149.00 <span class="stock">In stock: ships in 1&ndash;2 business days</span></p>
    <img src="/static/img/ridgeline-38-slate.jpg" alt="Ridgeline 38L pack in slate grey, front view">

    <section class="summary">
      <p>The Ridgeline 38 is sized for two- to four-day trips. A suspended mesh back panel keeps air moving
      between you and the load, and the aluminium frame sheet carries up to 16&nbsp;kg without the shoulder
      straps digging in.</p>
      <ul>
        <li>Volume: 38 litres (M/L torso), 36 litres (S/M torso)</li>
        <li>Weight: 1.42 kg including the rain cover</li>
        <li>Fabric: 210D recycled ripstop nylon with a PFC-free water-repellent finish</li>
        <li>Two zipped hip-belt pockets, large stretch front pocket, hydration sleeve</li>
      </ul>
    </section>

    <section class="reviews">
      <h2>Customer reviews</h2>
      <article class="review">
        <p class="stars">4.6 out of 5 (212 reviews)</p>
        <p>&ldquo;Carried it across the Cairngorms for three nights. The hip belt is the best I have used at
        this price, though the side pockets are a little tight for a 1-litre bottle.&rdquo; &mdash; Fionn, verified buyer</p>
      </article>
    </section>

    <section class="shipping">
      <h2>Shipping and returns</h2>
      <p>Free standard shipping on orders over $75. Unused items can be returned within 60 days for a full refund.</p>
    </section>
  </main>

  <footer class="site-footer">
    <p>&copy; 2025 Alder &amp; Pine Outfitters &middot; <a href="/privacy">Privacy</a> &middot; <a href="/contact">Contact</a></p>
  </footer>
</body>
</html>
`
