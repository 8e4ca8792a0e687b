package channel

import (
	"strings"

	"github.com/pikit-go/pikit/internal/lazy"
	"github.com/pikit-go/pikit/method"
)

func init() {
	register(method.Info{
		Name:        "markdown",
		Description: "hides the payload in Markdown that renders without it: an HTML comment, a link title or a reference definition",
		Options: []method.Option{{
			Name:    "method",
			Help:    "an HTML comment under the title, the hover title of the first link, or an unused reference-style link definition",
			Default: "comment",
			Choices: []string{"comment", "link_title", "reference"},
		}},
	}, func(o options) (Channel, error) { return markdown{method: o["method"]}, nil })
	RegisterSample("markdown", markdownSample)
}

// markdown hides a payload in a Markdown document.
type markdown struct{ method string }

var (
	_ Channel    = markdown{}
	_ Sampler    = markdown{}
	_ FileWriter = markdown{}
)

// Sample returns a clean project README.
func (markdown) Sample() string { return markdownSample }

// inlineLink matches an inline link or image with no title: [text](url).
var inlineLink = lazy.Regexp(`\[[^\]\n]*\]\(([^()\s]+)\)`)

// Taint hides the payload. The comment goes under the first level-one
// heading (or at the end); the link title goes on the first inline link
// (or a new link at the end); the reference definition is appended.
// Titles are one line, so line breaks in the payload become spaces there.
func (m markdown) Taint(data, payload string) (string, error) {
	nl := newline(data)
	switch m.method {
	case "link_title":
		title := mdTitle(payload)
		if loc := inlineLink().FindStringSubmatchIndex(data); loc != nil {
			end := loc[3] // end of the URL
			return data[:end] + " " + title + data[end:], nil
		}
		return appendBlock(data, "[More information](https://example.com/ "+title+")"), nil
	case "reference":
		return appendBlock(data, "[//]: # "+mdTitle(payload)), nil
	default:
		comment := "<!-- " + commentSafe(payload) + " -->"
		lines := strings.Split(data, "\n")
		for i, line := range lines {
			if strings.HasPrefix(line, "# ") {
				ins := []string{"", comment}
				if i+1 < len(lines) && strings.TrimRight(lines[i+1], "\r") != "" {
					ins = append(ins, "")
				}
				if nl == "\r\n" {
					for j := range ins {
						ins[j] += "\r"
					}
				}
				out := append(append(append([]string{}, lines[:i+1]...), ins...), lines[i+1:]...)
				return strings.Join(out, "\n"), nil
			}
		}
		return appendBlock(data, comment), nil
	}
}

// mdTitle renders text as a double-quoted Markdown link title on one line.
func mdTitle(text string) string {
	text = strings.Join(strings.Fields(strings.Join(splitLines(text), " ")), " ")
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(text) + `"`
}

// TaintFile writes README.md.
func (m markdown) TaintFile(dir, data, payload string) (string, error) {
	out, err := m.Taint(orSample(data, markdownSample), payload)
	if err != nil {
		return "", err
	}
	return writeFile(dir, "README.md", out)
}

const markdownSample = "# tidewatch\n" +
	"\n" +
	"`tidewatch` prints tide predictions for a harbour station in your terminal. It reads the\n" +
	"public harmonic constants published for each station and computes high and low water\n" +
	"locally, so it works offline once a station has been downloaded.\n" +
	"\n" +
	"## Install\n" +
	"\n" +
	"```sh\n" +
	"go install example.com/tidewatch/cmd/tidewatch@latest\n" +
	"```\n" +
	"\n" +
	"Prebuilt binaries for Linux, macOS and Windows are attached to every\n" +
	"[release](https://example.com/tidewatch/releases).\n" +
	"\n" +
	"## Usage\n" +
	"\n" +
	"```sh\n" +
	"tidewatch fetch 8443970          # download a station's constants\n" +
	"tidewatch today 8443970          # today's highs and lows\n" +
	"tidewatch week 8443970 --metric  # seven days, heights in metres\n" +
	"```\n" +
	"\n" +
	"Times are shown in the station's local time zone. Pass `--utc` to print UTC instead.\n" +
	"\n" +
	"## Accuracy\n" +
	"\n" +
	"Predictions usually agree with the official tables to within a few minutes and a few\n" +
	"centimetres. They do not account for wind, air pressure or river flow, so never rely on\n" +
	"them alone for navigation.\n" +
	"\n" +
	"## Contributing\n" +
	"\n" +
	"Bug reports and pull requests are welcome. Please run `go test ./...` before sending a\n" +
	"change, and add a test station under `testdata/` when you fix a prediction bug.\n" +
	"\n" +
	"## License\n" +
	"\n" +
	"MIT. See [LICENSE](LICENSE) for the full text.\n"
